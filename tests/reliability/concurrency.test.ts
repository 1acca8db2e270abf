/**
 * Load through the real engine against the standalone server (the compiled CLI, a child process,
 * with an API key): `pulumi up --parallel 32` of 100 routes on one edge, then an update and a
 * destroy of all of them at the same parallelism; and two stacks deploying, updating, racing for
 * one selector and destroying at the same time against one server and one shared edge. Every
 * request's status is read from the server's own log: no 5xx.
 */
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { quiet } from "../engine/support/harness";
import { makeTempDir, removeDir } from "../service/helpers";
import { Tally } from "./fuzz";
import {
  type Cli,
  ensureBuilt,
  killChildren,
  NO_DRAIN,
  programStack,
  programWorkspace,
  setSpec,
  startCli,
  stateOf,
} from "./support";

const API_KEY = "concurrency-key-9f8e7d6c";
const tally = new Tally();

let dataDir: string;
let cli: Cli;
let client: EdgeClient;
const workspaces: Array<ReturnType<typeof programWorkspace>> = [];

beforeAll(async () => {
  ensureBuilt();
  dataDir = makeTempDir("concurrency");
  cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir, "--api-key", API_KEY]);
  client = new EdgeClient(httpTransport({ baseUrl: cli.url, apiKey: API_KEY, retries: 0 }));
});

afterAll(async () => {
  cli?.child.kill("SIGTERM");
  await cli?.exit;
  killChildren();
  tally.write("concurrency");
  for (const ws of workspaces) ws.cleanup();
  if (dataDir) removeDir(dataDir);
});

/** Statuses of every request the server logged so far (one line per request). */
function loggedStatuses(): number[] {
  return [...cli.stderr().matchAll(/ (GET|POST|PUT|PATCH|DELETE) \S+ (\d{3}) /g)].map((m) => Number(m[2]));
}

async function newStack(label: string): Promise<{ stack: Stack; ws: ReturnType<typeof programWorkspace> }> {
  const ws = programWorkspace(label);
  workspaces.push(ws);
  return { ws, stack: await programStack(ws, cli.url, { apiKey: API_KEY }) };
}

/** Route ids in a stack's state, and the routes of an edge on the server, agree. */
async function expectSameRoutes(
  stacks: Array<{ stack: Stack; ws: { stateDir: string } }>,
  edgeId: string,
  count: number,
) {
  const inState: string[] = [];
  for (const { stack, ws } of stacks) {
    const { resources, pending } = await stateOf(stack, ws.stateDir);
    expect(pending).toEqual([]);
    inState.push(
      ...resources.filter((r) => r.kind === "route" && r.outputs.edgeId === edgeId).map((r) => r.id),
    );
  }
  const onServer: string[] = [];
  for await (const r of client.allRoutes(edgeId)) onServer.push(r.id);
  expect(onServer.sort()).toEqual(inState.sort());
  expect(onServer).toHaveLength(count);
}

test("pulumi up --parallel 32: 100 routes on one edge created, updated and destroyed; no 5xx", async () => {
  const { stack, ws } = await newStack("parallel");
  const spec = (backendId: string) => ({
    edges: ["e"],
    bulk: [
      {
        prefix: "p",
        count: 100,
        edge: "e",
        args: { backend: { backendId }, circuitBreaker: { numBuckets: 8 } },
      },
    ],
  });
  await setSpec(stack, spec("bkd_one"));
  const up = await stack.up({ ...quiet, parallel: 32 });
  expect(up.summary.resourceChanges).toMatchObject({ create: 103 }); // 100 routes, the edge, the stack, its anchor
  const edgeId = (await stack.outputs()).edgeIds!.value.e as string;
  await expectSameRoutes([{ stack, ws }], edgeId, 100);
  await stack.preview({ ...quiet, expectNoChanges: true, parallel: 32 });

  // Every route updated at once: none of the 100 PATCHes is lost.
  await setSpec(stack, spec("bkd_two"));
  const update = await stack.up({ ...quiet, parallel: 32 });
  expect(update.summary.resourceChanges).toMatchObject({ update: 100 });
  const routes = [];
  for await (const r of client.allRoutes(edgeId)) routes.push(r);
  expect(
    routes.filter((r) => r.backend?.backend.id === "bkd_two" && r.circuit_breaker?.num_buckets === 8),
  ).toHaveLength(100);

  await stack.destroy({ ...quiet, parallel: 32 });
  expect((await client.listHttpsEdges()).https_edges).toEqual([]);
  const statuses = loggedStatuses();
  expect(statuses.filter((s) => s >= 500)).toEqual([]);
  tally.add("parallel 32", "requests logged by the server", statuses.length);
});

test("two stacks against one server and one shared edge: all created, no lost update, one winner per selector, no 5xx", async () => {
  const edgesBefore = (await client.listHttpsEdges()).https_edges.map((e) => e.id);
  const shared = (await client.createHttpsEdge({ description: "shared" })).id;
  const a = await newStack("stack-a");
  const b = await newStack("stack-b");
  const spec = (prefix: string, value: string, extra: object[] = []) => ({
    edges: [`own-${prefix}`],
    bulk: [
      { prefix, count: 30, edgeId: shared, args: { trafficPolicy: { value } } },
      { prefix: `${prefix}-own`, count: 10, edge: `own-${prefix}`, args: { compression: {} } },
    ],
    routes: extra,
  });
  await setSpec(a.stack, spec("a", "a1"));
  await setSpec(b.stack, spec("b", "b1"));
  await Promise.all([a.stack.up({ ...quiet, parallel: 16 }), b.stack.up({ ...quiet, parallel: 16 })]);
  await expectSameRoutes([a, b], shared, 60);

  // Both update every route they own, at the same time: every route ends with its own stack's value.
  await setSpec(a.stack, spec("a", "a2"));
  await setSpec(b.stack, spec("b", "b2"));
  await Promise.all([a.stack.up({ ...quiet, parallel: 16 }), b.stack.up({ ...quiet, parallel: 16 })]);
  const values = new Map<string, string>();
  for await (const r of client.allRoutes(shared)) values.set(r.match, r.traffic_policy!.value);
  for (let i = 0; i < 30; i++) {
    expect([i, values.get(`/a/${i}`), values.get(`/b/${i}`)]).toEqual([i, "a2", "b2"]);
  }

  // Both claim the same selector at once: one creates it, the other fails clearly; nothing is duplicated.
  const contested = {
    name: "contested",
    edgeId: shared,
    args: { matchType: "exact_path", match: "/contested" },
  };
  await setSpec(a.stack, spec("a", "a2", [contested]));
  await setSpec(b.stack, spec("b", "b2", [contested]));
  const results = await Promise.allSettled([a.stack.up({ ...quiet }), b.stack.up({ ...quiet })]);
  expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  const failure = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
  expect(String(failure.reason)).toMatch(
    /already has a route with matchType "exact_path" and match "\/contested"/,
  );
  const contestedRoutes = [];
  for await (const r of client.allRoutes(shared)) if (r.match === "/contested") contestedRoutes.push(r);
  expect(contestedRoutes).toHaveLength(1);
  await expectSameRoutes([a, b], shared, 61);

  await Promise.all([
    a.stack.destroy({ ...quiet, parallel: 16 }),
    b.stack.destroy({ ...quiet, parallel: 16 }),
  ]);
  expect((await client.listRoutes(shared)).routes).toEqual([]);
  expect((await client.listHttpsEdges()).https_edges.map((e) => e.id).sort()).toEqual(
    [...edgesBefore, shared].sort(),
  );
  const statuses = loggedStatuses();
  expect(statuses.filter((s) => s >= 500)).toEqual([]);
  tally.add("two stacks", "requests logged by the server (both tests)", statuses.length);
  tally.add("two stacks", "409 answers (the contested selector)", statuses.filter((s) => s === 409).length);
});

test("the server's log names no key", () => {
  expect(cli.stderr()).not.toContain(API_KEY);
  expect(cli.stdout()).not.toContain(API_KEY);
});
