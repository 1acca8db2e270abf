/**
 * Python for the tests, from PyPI into virtualenvs of their own, one per pin set (the directory
 * name is the hash of the pins), made once per machine under ~/.cache/pulumi-edge/venvs and
 * reused. Fails loudly, never skips: no Python or no PyPI is a broken test machine, not a
 * passing test. Users: the service tests' tools — schemathesis (the property-based API tester)
 * and `ngrok-api` (the real API's published Python client), pinned in python-tools.txt — and the
 * packaged face's Python programs (the `pulumi` SDK at the engine's version).
 */
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";

const PINS = path.join(__dirname, "python-tools.txt");
const CACHE = path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), ".cache"), "pulumi-edge", "venvs");

/** A venv with `requirements` (pip's requirements-file text) installed; returns its python. */
export function ensureVenv(requirements: string): string {
  const dir = path.join(CACHE, createHash("sha256").update(requirements).digest("hex").slice(0, 16));
  const python = path.join(dir, "bin/python");
  if (fs.existsSync(path.join(dir, "ready"))) return python;
  // Built beside and renamed into place, so that two test files never see half a venv.
  // (Tools are run as `python -m ...`, which works from a renamed venv; console scripts would not.)
  const building = `${dir}.building-${process.pid}`;
  fs.rmSync(building, { recursive: true, force: true });
  fs.mkdirSync(CACHE, { recursive: true });
  const run = (cmd: string, args: string[], what: string) => {
    try {
      execFileSync(cmd, args, { stdio: "pipe", timeout: 600_000 });
    } catch (e) {
      const err = e as { stderr?: Buffer; message: string };
      throw new Error(
        `${what} failed: ${err.stderr?.toString().slice(-2000) ?? err.message}\n` +
          "These tests need python3 (with venv) and PyPI (pip install of pinned packages); " +
          "they do not skip without them.",
      );
    }
  };
  run("python3", ["-m", "venv", building], "python3 -m venv");
  fs.writeFileSync(path.join(building, "requirements.txt"), requirements);
  run(
    path.join(building, "bin/python"),
    [
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "--no-input",
      "-r",
      path.join(building, "requirements.txt"),
    ],
    "pip install from PyPI",
  );
  fs.writeFileSync(path.join(building, "ready"), requirements);
  try {
    fs.renameSync(building, dir);
  } catch {
    // Another test file finished first: use its venv.
    fs.rmSync(building, { recursive: true, force: true });
  }
  return python;
}

/** The venv's python, with the service tests' pinned tools installed. */
export function ensurePythonTools(): string {
  return ensureVenv(fs.readFileSync(PINS, "utf8"));
}

export interface PythonResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the venv's python without blocking this process's event loop (the service under test
 * may be running in it).
 */
export function runPython(
  python: string,
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<PythonResult> {
  return new Promise((resolve) => {
    const child = execFile(
      python,
      args,
      {
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...opts.env },
        cwd: opts.cwd,
        timeout: opts.timeoutMs ?? 600_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}
