/**
 * Jest globalTeardown (npm test): the run leaves no process and no `edge-*` temp directory behind
 * (see global-setup). Survivors are killed and leftovers removed, then the run fails naming them.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { RunMarks } from "./global-setup";
import { survivors } from "./leftovers";

export default async function globalTeardown(): Promise<void> {
  const marks = (globalThis as { __pulumiEdgeRun?: RunMarks }).__pulumiEdgeRun;
  if (!marks) return;
  if (marks.tmpBefore === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = marks.tmpBefore;

  // Jest's own processes carry the marker too (the workers, when still shutting down).
  const left = (await survivors(marks.marker, [process.pid])).filter(
    (p) => !/jest-worker|processChild/.test(p.command),
  );
  for (const p of left) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const leftDirs = fs.readdirSync(marks.tmp).filter((e) => e.startsWith("edge-"));
  fs.rmSync(marks.tmp, { recursive: true, force: true });

  const problems: string[] = [];
  if (left.length > 0) {
    problems.push(
      `processes started by the tests outlived them (killed now):\n${left.map((p) => `  ${p.pid} ${p.command}`).join("\n")}`,
    );
  }
  if (leftDirs.length > 0) {
    problems.push(
      `temp directories left behind (removed now):\n${leftDirs.map((d) => `  ${path.join(marks.tmp, d)}`).join("\n")}`,
    );
  }
  if (problems.length > 0) throw new Error(`the test run left things behind:\n${problems.join("\n")}`);
}
