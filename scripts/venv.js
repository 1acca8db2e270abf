// @ts-check
/**
 * Python virtualenvs from PyPI, one per pin set (the directory name is the hash of the pins),
 * made once per machine under ~/.cache/pulumi-edge/venvs and reused. Used by `npm run sdks` (the
 * wheel's build backend) and by the tests (tests/support/python-tools.ts). Fails loudly, never
 * skips: no python3 or no PyPI is a broken machine, not a passing build.
 */
const { execFileSync } = require("node:child_process");
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const CACHE = path.join(
  process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"),
  "pulumi-edge",
  "venvs",
);

/**
 * A venv with `requirements` (pip's requirements-file text) installed; returns its python.
 * @param {string} requirements
 * @returns {string}
 */
function ensureVenv(requirements) {
  const dir = path.join(CACHE, createHash("sha256").update(requirements).digest("hex").slice(0, 16));
  const python = path.join(dir, "bin/python");
  if (fs.existsSync(path.join(dir, "ready"))) return python;
  // Built beside and renamed into place, so that two processes never see half a venv.
  // (Tools are run as `python -m ...`, which works from a renamed venv; console scripts would not.)
  const building = `${dir}.building-${process.pid}`;
  fs.rmSync(building, { recursive: true, force: true });
  fs.mkdirSync(CACHE, { recursive: true });
  /** @param {string} cmd @param {string[]} args @param {string} what */
  const run = (cmd, args, what) => {
    try {
      execFileSync(cmd, args, { stdio: "pipe", timeout: 600_000 });
    } catch (e) {
      const err = /** @type {{ stderr?: Buffer, message: string }} */ (e);
      throw new Error(
        `${what} failed: ${err.stderr?.toString().slice(-2000) ?? err.message}\n` +
          "This needs python3 (with venv) and PyPI (pip install of pinned packages).",
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
    // Another process finished first: use its venv.
    fs.rmSync(building, { recursive: true, force: true });
  }
  return python;
}

module.exports = { ensureVenv };
