/**
 * A test run that was interrupted (Ctrl-C, a CI job's timeout) runs no teardown: its PostgreSQL
 * cluster and temp directory stay. The next run's globalSetup sweeps them
 * (tests/support/leftovers `sweepInterruptedRuns`); a run still going is left alone. Real
 * processes here: a marked `sleep` stands for the cluster, a dead pid for the interrupted run.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { MARKER_VARIABLE, RUN_MARKER_FILE, sweepInterruptedRuns } from "../support/leftovers";

/** A run's temp directory (inside this run's TMPDIR, so the sweep sees only these) marked `marker`. */
function runDir(marker: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pe-test-run-"));
  fs.writeFileSync(path.join(dir, RUN_MARKER_FILE), marker);
  fs.mkdirSync(path.join(dir, "edge-pg-data"));
  return dir;
}

it("kills and removes what an interrupted run left; a run still going is untouched", async () => {
  // The interrupted run's jest: a process that has ended.
  const gone = spawnSync(process.execPath, ["-e", "0"]);
  expect(gone.status).toBe(0);
  const deadMarker = `${gone.pid}-interrupted`;
  const dead = runDir(deadMarker);
  const survivor = spawn("sleep", ["600"], {
    env: { ...process.env, [MARKER_VARIABLE]: deadMarker },
    detached: true,
    stdio: "ignore",
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    survivor.once("exit", (_c, s) => resolve(s)),
  );
  // A run still going: a jest process, this one (a worker's command line names jest too).
  const live = runDir(`${process.pid}-running`);
  const unmarked = fs.mkdtempSync(path.join(os.tmpdir(), "pe-test-run-"));
  try {
    const lines: string[] = [];
    sweepInterruptedRuns((line) => lines.push(line));
    expect(await exited).toBe("SIGKILL");
    expect(fs.existsSync(dead)).toBe(false);
    expect(lines).toEqual([
      expect.stringContaining(
        `removed what an interrupted test run left: ${dead}, and killed ${survivor.pid} sleep 600`,
      ),
    ]);
    expect(fs.existsSync(live)).toBe(true);
    expect(fs.existsSync(unmarked)).toBe(true);
  } finally {
    if (survivor.exitCode === null && survivor.signalCode === null) survivor.kill("SIGKILL");
    for (const d of [dead, live, unmarked]) fs.rmSync(d, { recursive: true, force: true });
  }
});
