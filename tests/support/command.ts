/** Running a command as a user would, for tests that drive installers (npm, pip, go, pulumi plugin). */
import { type ChildProcess, execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

/**
 * `cmd args` in `cwd` with the test's environment plus `env`; its stdout. Fails with the command,
 * the directory and both outputs, so a broken install says what it printed.
 */
export async function runCommand(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(cmd, args, {
      cwd,
      encoding: "utf8",
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, ...env },
    });
    return stdout;
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}:\n${stdout}\n${stderr}`);
  }
}

/**
 * A virtualenv in `venv` holding what the guide tells a Python user to install: the Pulumi SDK at
 * the engine's version and the pulumi-edge wheel, nothing else named. Its python's path.
 */
export async function venvWithWheel(venv: string, wheel: string, pulumiVersion: string): Promise<string> {
  const cwd = dirname(venv);
  await runCommand("python3", ["-m", "venv", venv], cwd);
  const python = join(venv, "bin/python");
  await runCommand(
    python,
    ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", `pulumi==${pulumiVersion}`, wheel],
    cwd,
  );
  return python;
}

/** A started process as the tests watch it: what it printed so far, and its end. */
export interface Watched<C extends ChildProcess = ChildProcess> {
  child: C;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Collects `child`'s output and tells its end; it stays in `running` (what a test's teardown
 * stops) until it exits.
 */
export function watch<C extends ChildProcess>(child: C, running: Set<ChildProcess>): Watched<C> {
  running.add(child);
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}
