// @ts-check
/**
 * The one place that knows how to run the real Pulumi engine here: the pinned CLI from
 * ~/.pulumi/versions/<version>/bin (see provision-pulumi.sh), a local file backend, the
 * passphrase secrets provider, no update checks, no plugin downloads. Used by the tests, the
 * main job (scripts/stack.mjs), the examples and the benchmarks.
 */
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
/** @type {string} The one pinned version (package.json); the CLI, the wrapper and @pulumi/pulumi share it. */
const PULUMI_VERSION = require("../package.json").dependencies["@pulumi/pulumi"];
const PULUMI_HOME = process.env.PULUMI_HOME || path.join(os.homedir(), ".pulumi");
const PULUMI_ROOT = path.join(PULUMI_HOME, "versions", PULUMI_VERSION);
const PULUMI_BIN = path.join(PULUMI_ROOT, "bin");

/**
 * Where the main job (`npm run up`, scripts/stack.mjs) keeps the root project's stacks: the
 * backend that the root Pulumi.yaml names (`backend.url: file://./.pulumi-state`), so that the
 * pulumi CLI run in the repository finds them too. EDGE_STACK_STATE_DIR moves it (then set
 * PULUMI_BACKEND_URL=file://<that directory> for the CLI as well).
 */
const MAIN_STATE_DIR = process.env.EDGE_STACK_STATE_DIR ?? path.join(ROOT, ".pulumi-state");

/** Throws a clear error when the engine has not been provisioned. */
function assertEngine() {
  if (!fs.existsSync(path.join(PULUMI_BIN, "pulumi"))) {
    throw new Error(
      `the Pulumi engine v${PULUMI_VERSION} is not installed in ${PULUMI_BIN}: run 'npm run provision' (offline it builds from the Go module proxy)`,
    );
  }
}

/**
 * Environment for engine processes.
 * @param {{ stateDir: string, extra?: Record<string, string> }} opts
 * @returns {Record<string, string>}
 */
function engineEnv({ stateDir, extra = {} }) {
  fs.mkdirSync(stateDir, { recursive: true });
  return {
    PATH: `${PULUMI_BIN}${path.delimiter}${process.env.PATH ?? ""}`,
    PULUMI_BACKEND_URL: `file://${path.resolve(stateDir)}`,
    PULUMI_CONFIG_PASSPHRASE: process.env.PULUMI_CONFIG_PASSPHRASE ?? "",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_SKIP_CONFIRMATIONS: "true",
    ...extra,
  };
}

/** @returns {Promise<import("@pulumi/pulumi/automation").PulumiCommand>} */
async function pulumiCommand() {
  assertEngine();
  const { PulumiCommand } = require("@pulumi/pulumi/automation");
  return PulumiCommand.get({ root: PULUMI_ROOT });
}

/**
 * Selects (creating if needed) a stack of a directory program.
 * @param {{ workDir: string, stackName?: string, stateDir: string, config?: Record<string, {value: string, secret?: boolean}>, env?: Record<string, string> }} opts
 */
async function directoryStack({ workDir, stackName = "dev", stateDir, config = {}, env = {} }) {
  const { LocalWorkspace } = require("@pulumi/pulumi/automation");
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName, workDir },
    {
      pulumiCommand: await pulumiCommand(),
      envVars: engineEnv({ stateDir, extra: env }),
      secretsProvider: "passphrase",
    },
  );
  if (Object.keys(config).length > 0) await stack.setAllConfig(config);
  return stack;
}

/**
 * Selects (creating if needed) a stack of an inline program. The workspace directory must be
 * one from which `require("pulumi-edge")` resolves (the engine runs providers there).
 * @param {{ projectName: string, program: import("@pulumi/pulumi/automation").PulumiFn, workDir: string, stackName?: string, stateDir: string, env?: Record<string, string> }} opts
 */
async function inlineStack({ projectName, program, workDir, stackName = "dev", stateDir, env = {} }) {
  const { LocalWorkspace } = require("@pulumi/pulumi/automation");
  fs.mkdirSync(workDir, { recursive: true });
  return LocalWorkspace.createOrSelectStack(
    { stackName, projectName, program },
    {
      workDir,
      pulumiCommand: await pulumiCommand(),
      envVars: engineEnv({ stateDir, extra: env }),
      secretsProvider: "passphrase",
    },
  );
}

module.exports = {
  ROOT,
  PULUMI_VERSION,
  PULUMI_ROOT,
  PULUMI_BIN,
  MAIN_STATE_DIR,
  assertEngine,
  engineEnv,
  pulumiCommand,
  directoryStack,
  inlineStack,
};
