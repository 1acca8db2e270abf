/**
 * Python for the packaged face's tests: a virtualenv with the `pulumi` Python SDK at the pinned
 * engine version (from PyPI) and the generated SDK (dist/sdks/python), and the environment that
 * makes the Python language host run it.
 *
 * The virtualenv is a cache (one per pinned version, under ~/.cache/pulumi-edge/python): PyPI is
 * asked once per machine; the generated SDK is reinstalled into it on every run, so it is never
 * older than the schema.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const engine = require("../../../scripts/engine.js") as typeof import("../../../scripts/engine.js");
const VERSION = (require("../../../package.json") as { dependencies: Record<string, string> }).dependencies[
  "@pulumi/pulumi"
]!;
const SDK = join(engine.ROOT, "dist", "sdks", "python");
const run = promisify(execFile);

async function sh(cmd: string, args: string[]): Promise<void> {
  try {
    await run(cmd, args, { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${stdout}\n${stderr}`);
  }
}

/** The language host built by scripts/provision-pulumi.sh, or a message saying how to get it. */
export function pythonHostProblem(): string | undefined {
  const host = join(engine.PULUMI_BIN, "pulumi-language-python");
  const exec = join(engine.PULUMI_BIN, "pulumi-language-python-exec");
  if (existsSync(host) && existsSync(exec)) return undefined;
  return `the Python language host is missing from ${engine.PULUMI_BIN}: run 'npm run provision' (scripts/provision-pulumi.sh builds it)`;
}

/** Creates (once) the virtualenv and installs the generated SDK; returns its python. */
export async function pythonEnv(): Promise<{ python: string; env: Record<string, string> }> {
  if (!existsSync(join(SDK, "pyproject.toml")))
    throw new Error(`no generated Python SDK in ${SDK}: run 'npm run sdks'`);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const venv = join(cache, "pulumi-edge", "python", `pulumi-${VERSION}`);
  const python = join(venv, "bin", "python");
  if (!existsSync(python)) {
    // Built beside and renamed into place, so an interrupted install is never taken for a good one.
    const building = `${venv}.building-${process.pid}`;
    rmSync(building, { recursive: true, force: true });
    mkdirSync(join(cache, "pulumi-edge", "python"), { recursive: true });
    await sh("python3", ["-m", "venv", building]);
    await sh(join(building, "bin", "pip"), [
      "install",
      "--quiet",
      "--disable-pip-version-check",
      `pulumi==${VERSION}`,
      "parver",
      "semver",
    ]);
    renameSync(building, venv);
  }
  // The venv's scripts name its path; the rename above keeps python itself working (bin/python
  // finds its prefix from pyvenv.cfg next to it), which is all the host and pip -m need.
  await sh(python, [
    "-m",
    "pip",
    "install",
    "--quiet",
    "--disable-pip-version-check",
    "--no-deps",
    "--force-reinstall",
    SDK,
  ]);
  // The v3.68 host ignores Pulumi.yaml's virtualenv option (runtime options arrive over RPC in
  // 3.259); it runs PULUMI_PYTHON_CMD. See ../shared/notes/packaged-provider-facts.md.
  return { python, env: { PULUMI_PYTHON_CMD: python } };
}
