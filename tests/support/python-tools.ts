/**
 * The Python tools some tests drive the service with — schemathesis (the property-based API
 * tester) and `ngrok-api` (the real API's published Python client) — installed from PyPI into a
 * venv of their own under node_modules/.cache, at the versions pinned in python-tools.txt. Made
 * once per pin set (the directory name is the hash of the pins), then reused. Fails loudly, never
 * skips: no Python or no PyPI is a broken test machine, not a passing test.
 */
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.join(__dirname, "../..");
const PINS = path.join(__dirname, "python-tools.txt");
const CACHE = path.join(ROOT, "node_modules/.cache/pulumi-edge-python-tools");

/** The venv's python, with the pinned tools installed. */
export function ensurePythonTools(): string {
  const pins = fs.readFileSync(PINS, "utf8");
  const dir = path.join(CACHE, createHash("sha256").update(pins).digest("hex").slice(0, 16));
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
          "These tests need python3 (with venv) and PyPI (pip install of tests/support/python-tools.txt); " +
          "they do not skip without them.",
      );
    }
  };
  run("python3", ["-m", "venv", building], "python3 -m venv");
  run(
    path.join(building, "bin/python"),
    ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", "-r", PINS],
    "pip install from PyPI",
  );
  fs.writeFileSync(path.join(building, "ready"), pins);
  try {
    fs.renameSync(building, dir);
  } catch {
    // Another test file finished first: use its venv.
    fs.rmSync(building, { recursive: true, force: true });
  }
  return python;
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
