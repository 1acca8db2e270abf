/**
 * What a test run leaves behind: processes and `edge-*` temp directories.
 *
 * Processes are found by a marker in their environment (`/proc/<pid>/environ`, Linux): whatever
 * a test starts inherits the marker, however it was started (a shell's `&`, a setsid, a
 * daemonizing server), so a survivor is found even after its parent has gone. Processes of a
 * developer's other runs carry another marker (or none) and are never counted.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const MARKER_VARIABLE = "PULUMI_EDGE_TEST_RUN";

export interface LeftProcess {
  pid: number;
  command: string;
}

/** Live processes (not zombies) whose environment has `MARKER_VARIABLE=marker`, except `exclude`. */
export function processesMarked(marker: string, exclude: ReadonlyArray<number> = []): LeftProcess[] {
  const needle = `${MARKER_VARIABLE}=${marker}`;
  const found: LeftProcess[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (exclude.includes(pid)) continue;
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (!env.includes(needle)) continue;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      if (/^\d+ \(.*\) Z /s.test(stat)) continue; // a zombie holds no resources but its pid
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      found.push({ pid, command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/**
 * Waits (polling, at most `waitMs`) for the marked processes to exit: a server that got SIGTERM
 * as its script ended may need a moment to close its database. Returns those still alive.
 */
export async function survivors(
  marker: string,
  exclude: ReadonlyArray<number> = [],
  waitMs = 10_000,
): Promise<LeftProcess[]> {
  const until = Date.now() + waitMs;
  for (;;) {
    const left = processesMarked(marker, exclude);
    if (left.length === 0 || Date.now() >= until) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The `edge-*` entries of the OS temp directory. */
export function edgeTempEntries(): Set<string> {
  return new Set(fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith("edge-")));
}

/** `edge-*` temp entries present now that were not in `before`, with their paths. */
export function newEdgeTempEntries(before: ReadonlySet<string>): string[] {
  return [...edgeTempEntries()].filter((e) => !before.has(e)).map((e) => path.join(os.tmpdir(), e));
}

/** The file in a run's temp directory that names its marker (see global-setup). */
export const RUN_MARKER_FILE = ".run-marker";

/**
 * What earlier runs left when they were interrupted (Ctrl-C, a CI job's timeout: no teardown):
 * their marked processes (a PostgreSQL test cluster runs on by itself) and temp directories.
 * A run is over when its jest process (the marker's pid) is gone; each left over is killed and
 * removed, and said. A run still going is never touched.
 */
export function sweepInterruptedRuns(log: (line: string) => void): void {
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith("pe-test-run-")) continue;
    const dir = path.join(os.tmpdir(), name);
    let marker: string;
    try {
      marker = fs.readFileSync(path.join(dir, RUN_MARKER_FILE), "utf8").trim();
    } catch {
      continue; // not marked: a run of an older checkout, or one just starting
    }
    if (runIsAlive(marker)) continue;
    const left = processesMarked(marker);
    for (const p of left) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    log(
      `removed what an interrupted test run left: ${dir}` +
        (left.length > 0
          ? `, and killed ${left.map((p) => `${p.pid} ${p.command.slice(0, 80)}`).join("; ")}`
          : ""),
    );
  }
}

/** Whether the jest process that made `marker` (`<pid>-<time>`) still runs. */
function runIsAlive(marker: string): boolean {
  const pid = Number(marker.split("-")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("jest");
  } catch {
    return false;
  }
}
