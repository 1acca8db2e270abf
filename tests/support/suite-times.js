// @ts-check
/**
 * A jest reporter that prints, at the end of a run, every test file's wall time and the run's
 * total, slowest first: CI's log then shows where its time goes, run after run. With
 * `SUITE_TIMES_JSON=<file>` it also writes them as JSON (for comparing two runs).
 */
const fs = require("node:fs");
const path = require("node:path");

class SuiteTimes {
  /** @param {import("@jest/reporters").Config.GlobalConfig} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    /** @type {{ file: string, seconds: number, tests: number, failed: number }[]} */
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
      tests: result.numPassingTests + result.numFailingTests + result.numPendingTests,
      failed: result.numFailingTests + (result.testExecError ? 1 : 0),
    });
  }

  onRunComplete() {
    const rows = [...this.rows].sort((a, b) => b.seconds - a.seconds);
    const sum = rows.reduce((s, r) => s + r.seconds, 0);
    const wall = (Date.now() - this.started) / 1000;
    const lines = rows.map(
      (r) =>
        `${r.seconds.toFixed(1).padStart(8)} s  ${String(r.tests).padStart(4)} tests${r.failed ? `  (${r.failed} failed)` : ""}  ${r.file}`,
    );
    process.stderr.write(
      `\nTime per test file (wall, slowest first; files run ${wallWorkers(sum, wall)} at a time on average):\n` +
        `${lines.join("\n")}\n${sum.toFixed(1).padStart(8)} s  in all, ${wall.toFixed(1)} s of wall time\n`,
    );
    const out = process.env.SUITE_TIMES_JSON;
    if (out) fs.writeFileSync(out, `${JSON.stringify({ wall, rows }, null, 2)}\n`);
  }
}

/** @param {number} sum @param {number} wall */
const wallWorkers = (sum, wall) => (wall > 0 ? (sum / wall).toFixed(1) : "0");

module.exports = SuiteTimes;
