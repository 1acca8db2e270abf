/**
 * Jest globalSetup (npm test): marks the run so that the teardown can tell what it left behind.
 * - Every process a test starts inherits `PULUMI_EDGE_TEST_RUN=<this run>` (tests/support/leftovers).
 * - The run gets a temp directory of its own (TMPDIR), so the `edge-*` directories it leaves are
 *   told apart from those of a developer's other runs in the same OS temp dir.
 * - What an interrupted earlier run left (no teardown ran) is killed and removed first.
 * - dist is brought up to date here, before any worker runs from it (see ensureBuilt).
 * - Programs are transpiled only (PULUMI_NODEJS_TRANSPILE_ONLY): see below.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ensureBuilt } from "./edge-service";
import { MARKER_VARIABLE, RUN_MARKER_FILE, sweepInterruptedRuns } from "./leftovers";

export interface RunMarks {
  marker: string;
  tmp: string;
  tmpBefore: string | undefined;
}

export default function globalSetup(): void {
  sweepInterruptedRuns((line) => console.warn(line));
  // Built once, before any worker runs from dist (workers then find nothing to build).
  ensureBuilt();
  const marks: RunMarks = {
    marker: `${process.pid}-${Date.now().toString(36)}`,
    tmp: fs.mkdtempSync(path.join(os.tmpdir(), "pe-test-run-")),
    tmpBefore: process.env.TMPDIR,
  };
  // Traversable by others (mkdtemp makes it 0700): the PostgreSQL test clusters run as an
  // unprivileged user from directories inside it (tests/support/postgres.ts).
  fs.chmodSync(marks.tmp, 0o711);
  fs.writeFileSync(path.join(marks.tmp, RUN_MARKER_FILE), marks.marker);
  process.env[MARKER_VARIABLE] = marks.marker;
  // The programs the engine runs here are transpiled, not type-checked again by ts-node in each
  // fresh workspace (about 4 s of CPU a first operation): `npm run typecheck`
  // (pretest, lint) type-checks every one of them, fixtures and examples included. The newcomer's
  // test (first-stack) runs as a user does and drops every PULUMI_ variable, so it type-checks.
  process.env.PULUMI_NODEJS_TRANSPILE_ONLY ??= "true";
  process.env.TMPDIR = marks.tmp;
  (globalThis as { __pulumiEdgeRun?: RunMarks }).__pulumiEdgeRun = marks;
}
