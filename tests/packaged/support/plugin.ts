/**
 * Programs of the packaged face in tests: a copy of the fixture under .test-work whose
 * Pulumi.yaml points at this checkout's plugin (bin/pulumi-resource-edge) by absolute path.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { workspace } from "../../engine/support/harness";
import { programWorkspace, type Workspace } from "../../support/workspace";

const engine = require("../../../scripts/engine.js") as typeof import("../../../scripts/engine.js");
export const PLUGIN_DIR = join(engine.ROOT, "bin");

/**
 * Names this checkout's plugin in a program's Pulumi.yaml (a `plugins:` entry by absolute path):
 * the examples for Python, Go and YAML name none, since a user's engine takes the plugin from its
 * plugin cache or downloads it, and the tests' engine does neither (plugin acquisition off).
 */
export function declareCheckoutPlugin(projectDir: string): void {
  const file = join(projectDir, "Pulumi.yaml");
  const text = readFileSync(file, "utf8");
  if (/^plugins:/m.test(text)) throw new Error(`${file} already declares plugins`);
  const { version } = require("../../../package.json") as { version: string };
  writeFileSync(
    file,
    `${text.trimEnd()}\nplugins:\n  providers:\n    - name: edge\n      version: ${version}\n      path: ${PLUGIN_DIR}\n`,
  );
}

export function packagedWorkspace(fixture: string, label: string): Workspace {
  const ws = programWorkspace(join(__dirname, "..", "fixtures", fixture), label);
  const file = join(ws.dir, "Pulumi.yaml");
  writeFileSync(file, readFileSync(file, "utf8").replace(/^(\s*path:\s*).*$/m, `$1${PLUGIN_DIR}`));
  return ws;
}

/** The spec-driven test program of either face: the dynamic one, or the packaged one on this plugin. */
export const specWorkspace = (face: "dynamic" | "packaged", label: string): Workspace =>
  face === "dynamic" ? workspace("spec-program", label) : packagedWorkspace("packaged-spec-program", label);

/**
 * The `pulumi` CLI of the pinned engine in a program's directory, for what the Automation API
 * lacks. Async: the service the plugin calls may run in this process. Rejects with stdout and
 * stderr in the message.
 */
export async function pulumiCli(ws: Workspace, args: string[], stack: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(
      join(engine.PULUMI_BIN, "pulumi"),
      [...args, "--stack", stack, "--color", "never"],
      {
        cwd: ws.dir,
        env: { ...process.env, ...engine.engineEnv({ stateDir: ws.stateDir }) },
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return stdout;
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`pulumi ${args.join(" ")} failed:\n${stdout}\n${stderr}`);
  }
}
