// @ts-check
/**
 * A jest reporter that prints, at the end of a run, every test file's wall time, its CPU time
 * (tests/support/cpu-environment.js: the worker's and every process it waited for) and the run's
 * totals, slowest first: CI's log then shows where its time goes, run after run. Under load the
 * wall times stretch and the CPU times barely move. With `SUITE_TIMES_JSON=<file>` it also
 * writes them as JSON (for comparing two runs).
 */
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/**
 * Where the test environment leaves a file's CPU figure for this reporter: the run's temp
 * directory (TMPDIR, set by the global setup before the workers start), one file per test file.
 * @param {string} testPath
 */
function cpuFile(testPath) {
  const dir = path.join(os.tmpdir(), "suite-cpu");
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${crypto.createHash("sha1").update(testPath).digest("hex")}.json`);
}

/** @param {string} testPath @returns {number | undefined} */
function takeCpu(testPath) {
  const file = cpuFile(testPath);
  try {
    const { seconds } = JSON.parse(fs.readFileSync(file, "utf8"));
    fs.rmSync(file, { force: true });
    return typeof seconds === "number" ? seconds : undefined;
  } catch {
    return undefined;
  }
}

class SuiteTimes {
  /** @param {import("@jest/reporters").Config.GlobalConfig} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    /** @type {{ file: string, seconds: number, cpu: number | undefined, tests: number, failed: number }[]} */
    this.rows = [];
    this.started = Date.now();
  }

  /**
   * @param {unknown} _test
   * @param {import("@jest/reporters").TestResult} result
   */
  onTestResult(_test, result) {
    const { start, end } = result.perfStats;
    this.rows.push({
      file: path.relative(this.rootDir, result.testFilePath),
      seconds: Math.max(0, (end - start) / 1000),
      cpu: takeCpu(result.testFilePath),
      tests: result.numPassingTests + result.numFailingTests + result.numPendingTests,
      failed: result.numFailingTests + (result.testExecError ? 1 : 0),
    });
  }

  onRunComplete() {
    const rows = [...this.rows].sort((a, b) => b.seconds - a.seconds);
    const sum = rows.reduce((s, r) => s + r.seconds, 0);
    const cpu = rows.reduce((s, r) => s + (r.cpu ?? 0), 0);
    const wall = (Date.now() - this.started) / 1000;
    const load = (os.loadavg()[0] ?? 0).toFixed(1);
    const lines = rows.map(
      (r) =>
        `${r.seconds.toFixed(1).padStart(8)} s ${(r.cpu === undefined ? "?" : r.cpu.toFixed(1)).padStart(8)} s  ${String(r.tests).padStart(4)} tests${r.failed ? `  (${r.failed} failed)` : ""}  ${r.file}`,
    );
    process.stderr.write(
      `\nTime per test file (slowest first; files run ${wallWorkers(sum, wall)} at a time on average):\n` +
        `    wall      CPU\n${lines.join("\n")}\n` +
        `${sum.toFixed(1).padStart(8)} s ${cpu.toFixed(1).padStart(8)} s  in all, ${wall.toFixed(1)} s of wall time ` +
        `on ${os.cpus().length} cores, load average ${load} at the end\n`,
    );
    const out = process.env.SUITE_TIMES_JSON;
    if (out) fs.writeFileSync(out, `${JSON.stringify({ wall, cpu, rows }, null, 2)}\n`);
  }
}

/** @param {number} sum @param {number} wall */
const wallWorkers = (sum, wall) => (wall > 0 ? (sum / wall).toFixed(1) : "0");

module.exports = SuiteTimes;
module.exports.cpuFile = cpuFile;
