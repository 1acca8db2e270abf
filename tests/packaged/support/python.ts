/**
 * Python for the packaged face's tests: a virtualenv with the `pulumi` Python SDK at the pinned
 * engine version (from PyPI; see tests/support/python-tools.ts), the generated SDK
 * (dist/sdks/python) reinstalled into it on every run so it is never older than the schema, and
 * the environment that makes the Python language host run it.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureVenv } from "../../support/python-tools";

const engine = require("../../../scripts/engine.js") as typeof import("../../../scripts/engine.js");
const VERSION = (require("../../../package.json") as { dependencies: Record<string, string> }).dependencies[
  "@pulumi/pulumi"
]!;
const SDK = join(engine.ROOT, "dist", "sdks", "python");

/** The language host built by scripts/provision-pulumi.sh, or a message saying how to get it. */
export function pythonHostProblem(): string | undefined {
  const host = join(engine.PULUMI_BIN, "pulumi-language-python");
  const exec = join(engine.PULUMI_BIN, "pulumi-language-python-exec");
  if (existsSync(host) && existsSync(exec)) return undefined;
  return `the Python language host is missing from ${engine.PULUMI_BIN}: run 'npm run provision' (scripts/provision-pulumi.sh builds it)`;
}

/** The virtualenv's python with the generated SDK installed, and the engine environment to run it. */
export async function pythonEnv(): Promise<{ python: string; env: Record<string, string> }> {
  if (!existsSync(join(SDK, "pyproject.toml")))
    throw new Error(`no generated Python SDK in ${SDK}: run 'npm run sdks'`);
  const python = ensureVenv(`pulumi==${VERSION}\nparver\nsemver\n`);
  try {
    await promisify(execFile)(
      python,
      [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--force-reinstall",
        SDK,
      ],
      { encoding: "utf8" },
    );
  } catch (e) {
    const { stderr = "" } = e as { stderr?: string };
    throw new Error(`pip install of the generated SDK (${SDK}) failed:\n${stderr}`);
  }
  // The v3.68 host ignores Pulumi.yaml's virtualenv option (runtime options arrive over RPC in
  // 3.259); it runs PULUMI_PYTHON_CMD.
  return { python, env: { PULUMI_PYTHON_CMD: python } };
}
