/**
 * `pulumi up` interrupted midway (after the first creates), as a user or a CI runner does it:
 * Ctrl-C (SIGINT), a runner's SIGTERM, and a hard kill (SIGKILL of the whole engine: CLI,
 * language host, provider) while a create is in flight — before it reached the service, and after
 * the service acted but before its answer arrived. What the next `up` needs with Pulumi 3.259 is
 * asserted here and written down in RELIABILITY.md.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { quiet, type RecordingServer, recordingServer } from "../engine/support/harness";
import { Tally } from "./fuzz";
import {
  ensureBuilt,
  type FaultAction,
  type FaultProxy,
  faultProxy,
  killChildren,
  killEngine,
  programStack,
  programWorkspace,
  repairEmptyAttrs,
  setSpec,
  spawnPulumi,
  stateOf,
  waitFor,
} from "./support";

const COUNT = 12;
const SPEC = {
  edges: ["e"],
  bulk: [{ prefix: "r", count: COUNT, edge: "e", args: { backend: { backendId: "b" } } }],
};
const tally = new Tally();
afterAll(() => {
  killChildren();
  tally.write("interrupt");
});

interface Setup {
  server: RecordingServer;
  proxy: FaultProxy;
  ws: ReturnType<typeof programWorkspace>;
  stack: Stack;
  /** Route creates seen by the proxy. */
  creates: () => number;
}

/** A stack of COUNT routes behind a proxy that applies `action` to the route creates from the 5th on. */
async function setup(label: string, action: FaultAction, from = 5, only = false): Promise<Setup> {
  ensureBuilt();
  const server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-interrupt-${label}-`)));
  let creates = 0;
  const proxy = await faultProxy({
    target: server.url,
    seed: 1,
    rate: 0,
    slowMs: 3000,
    intercept: ({ method, path }) => {
      if (method !== "POST" || !path.endsWith("/routes")) return undefined;
      creates++;
      return creates === from || (!only && creates > from) ? action : undefined;
    },
  });
  const ws = programWorkspace(`interrupt-${label}`);
  const stack = await programStack(ws, proxy.url);
  await setSpec(stack, SPEC);
  return { server, proxy, ws, stack, creates: () => creates };
}

async function teardown(s: Setup | undefined) {
  await s?.proxy.close();
  await s?.server.close();
  s?.ws.cleanup();
}

/** The state and the server agree: the same route ids, no pending operation, no orphan. */
async function expectConverged(s: Setup, routes = COUNT) {
  const { resources, pending } = await stateOf(s.stack, s.ws.stateDir);
  expect(pending).toEqual([]);
  const inState = resources
    .filter((r) => r.kind === "route")
    .map((r) => r.id)
    .sort();
  const edges = (await s.server.client.listHttpsEdges()).https_edges;
  expect(edges.map((e) => e.id)).toEqual(resources.filter((r) => r.kind === "httpsEdge").map((r) => r.id));
  const onServer = edges.flatMap((e) => e.routes.map((r) => r.id)).sort();
  expect(onServer).toEqual(inState);
  expect(inState).toHaveLength(routes);
}

describe.each(["SIGINT", "SIGTERM"] as const)("%s during pulumi up (graceful cancel)", (signal) => {
  let s: Setup;
  afterAll(() => teardown(s));

  test("the engine finishes the creates in flight, records them, and the next up converges", async () => {
    s = await setup(signal.toLowerCase(), "slow");
    // --parallel 2: the signal lands with two creates in flight, well before the last one.
    const up = spawnPulumi(["up", "--yes", "--skip-preview", "--parallel", "2"], {
      cwd: s.ws.dir,
      stateDir: s.ws.stateDir,
    });
    await waitFor(() => s.creates() >= 5, "the 5th route create", 180_000);
    up.child.kill(signal); // the CLI's own pid: what Ctrl-C or a CI runner delivers
    const exit = await up.exit;
    expect(exit.code).not.toBe(0);
    expect(up.output()).toMatch(
      new RegExp(`${signal === "SIGINT" ? "\\^C" : "SIGTERM"} received; cancelling`),
    );
    expect(up.output()).toContain("update canceled");
    // Stopped midway, consistently: no pending operation, every route on the server is in the state.
    const { resources, pending } = await stateOf(s.stack, s.ws.stateDir);
    expect(pending).toEqual([]);
    const recorded = resources.filter((r) => r.kind === "route").length;
    expect(recorded).toBeGreaterThan(0);
    expect(recorded).toBeLessThan(COUNT);
    await expectConverged(s, recorded);
    tally.add(signal, "routes recorded when the engine stopped", recorded);
    // The next up, as is: converges.
    await s.stack.up(quiet);
    await expectConverged(s);
    await s.stack.preview({ ...quiet, expectNoChanges: true });
  });
});

/**
 * SIGKILL of the engine's whole process group at the moment the 5th route create is in flight
 * (`--parallel 1`: it is the only operation in flight), then the repairs Pulumi 3.259 needs.
 */
async function killDuringCreate(s: Setup, action: "stall-before" | "stall-after") {
  const up = spawnPulumi(["up", "--yes", "--skip-preview", "--parallel", "1"], {
    cwd: s.ws.dir,
    stateDir: s.ws.stateDir,
  });
  await waitFor(
    () =>
      s.proxy.log.some((r) => r.action === action && (action === "stall-before" || r.upstreamStatus === 201)),
    `the create (${action})`,
    180_000,
  );
  killEngine(up.child);
  expect((await up.exit).signal).toBe("SIGKILL");
  // A kill during a checkpoint write can leave the file backend's .attrs sidecar empty.
  const repaired = repairEmptyAttrs(s.ws.stateDir);
  tally.add(`SIGKILL (${action})`, "empty checkpoint .attrs removed", repaired.length);
  tally.add(`SIGKILL (${action})`, "kills", 1);
  // The file backend keeps the killed update's lock: every command is refused until `pulumi cancel`.
  await expect(s.stack.up(quiet)).rejects.toThrow(/the stack is currently locked/);
  const cancel = spawnPulumi(["cancel", "--yes"], { cwd: s.ws.dir, stateDir: s.ws.stateDir });
  expect((await cancel.exit).code).toBe(0);
  const { pending } = await stateOf(s.stack, s.ws.stateDir);
  expect(pending.map((p) => p.type)).toEqual(["creating"]);
}

/** `pulumi refresh --clear-pending-creates`: what drops the killed update's pending creates. */
async function clearPendingCreates(s: Setup) {
  const refresh = spawnPulumi(["refresh", "--yes", "--skip-preview", "--clear-pending-creates"], {
    cwd: s.ws.dir,
    stateDir: s.ws.stateDir,
  });
  expect((await refresh.exit).code).toBe(0);
  expect((await stateOf(s.stack, s.ws.stateDir)).pending).toEqual([]);
}

describe("SIGKILL of the whole engine while a create has not reached the service", () => {
  let s: Setup;
  afterAll(() => teardown(s));

  test("after `pulumi cancel` the next up retries the pending create and converges; refresh --clear-pending-creates clears the record", async () => {
    s = await setup("kill-before", "stall-before", 5, true);
    await killDuringCreate(s, "stall-before");
    // The engine retries the pending create as a fresh create (nothing of it reached the service)...
    await s.stack.up(quiet);
    const after = await stateOf(s.stack, s.ws.stateDir);
    expect(after.resources.filter((r) => r.kind === "route")).toHaveLength(COUNT);
    // ...but keeps the stale pending-create record (and its warning) until a refresh clears it.
    expect(after.pending.map((p) => p.type)).toEqual(["creating"]);
    await clearPendingCreates(s);
    await expectConverged(s);
    await s.stack.preview({ ...quiet, expectNoChanges: true });
  });
});

describe("SIGKILL of the whole engine after the service acted on a create, before its answer arrived", () => {
  let s: Setup;
  afterAll(() => teardown(s));

  test("the next up finds the route the killed run made (exactly-once create): no 409, no adopt, no duplicate", async () => {
    s = await setup("kill-after", "stall-after", 5, true);
    await killDuringCreate(s, "stall-after");
    await clearPendingCreates(s);
    const { resources } = await stateOf(s.stack, s.ws.stateDir);
    const orphans = (await s.server.client.listHttpsEdges()).https_edges[0]!.routes.filter(
      (r) => !resources.some((x) => x.id === r.id),
    );
    expect(orphans).toHaveLength(1);
    const [orphan] = orphans;
    // The recovery create carries the same identity: the service answers it with the orphan.
    await s.stack.up(quiet);
    await expectConverged(s);
    expect((await stateOf(s.stack, s.ws.stateDir)).resources.some((r) => r.id === orphan!.id)).toBe(true);
    await s.stack.preview({ ...quiet, expectNoChanges: true });
    tally.add("SIGKILL (stall-after)", "orphans found again by the next up", 1);
  });
});
