/**
 * Python for the tests, from PyPI into virtualenvs of their own, one per pin set, made once per
 * machine under ~/.cache/pulumi-edge/venvs and reused (scripts/venv.js). Fails loudly, never
 * skips: no Python or no PyPI is a broken test machine, not a passing test. Users: the service tests' tools — schemathesis (the property-based API tester)
 * and `ngrok-api` (the real API's published Python client), pinned in python-tools.txt — and the
 * packaged face's Python programs (the `pulumi` SDK at the engine's version).
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const PINS = path.join(__dirname, "python-tools.txt");

/** A venv with `requirements` (pip's requirements-file text) installed; returns its python. */
export const ensureVenv: (requirements: string) => string = (
  require("../../scripts/venv.js") as typeof import("../../scripts/venv.js")
).ensureVenv;

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
