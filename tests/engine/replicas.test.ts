/**
 * A stack managed through two `edge-service serve` replicas on one PostgreSQL database, taken in
 * turn (what a round-robin load balancer does to one `pulumi up`'s requests, made deterministic):
 * up through one, a drift preview and its repair through the other, destroy through the first.
 */
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { type Cli, ensureBuilt, killClis, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { quiet, setSpec, specStack, workspace } from "./support/harness";

const route = {
  matchType: "path_prefix",
  match: "/api",
  description: "public API",
  backend: { backendId: "bkd_1" },
  compression: {},
  requestHeaders: { add: { "X-Foo": "bar" }, remove: ["Cookie"] },
};
const spec = {
  edges: ["a", "b"],
  routes: [
    { name: "api", edge: "a", args: route },
    { name: "web", edge: "b", args: { ...route, match: "/web" } },
  ],
};

let ws: ReturnType<typeof workspace>;
let a: Cli;
let b: Cli;
let stack: Stack;

beforeAll(async () => {
  ensureBuilt();
  const url = await (await sharedCluster()).createDatabase();
  [a, b] = await Promise.all([
    startCli(["--port", "0", "--database", url]),
    startCli(["--port", "0", "--database", url]),
  ]);
  ws = workspace("spec-program", "replicas");
  stack = await specStack(ws, a.url);
});

afterAll(() => {
  killClis();
  ws?.cleanup();
});

const useReplica = (cli: Cli) => stack.setConfig("edge:baseUrl", { value: cli.url });

test("up through one replica; drift preview and repair through the other; destroy through the first", async () => {
  await setSpec(stack, spec);
  await stack.up(quiet);

  // Through the other replica: what the first wrote reads back as no change.
  await useReplica(b);
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });

  // Drift made through the first replica shows in a refreshing preview through the second...
  const out = (await stack.outputs()).routes!.value.api as { id: string; edgeId: string };
  const viaA = new EdgeClient(httpTransport({ baseUrl: a.url, retries: 0 }));
  await viaA.updateRoute(out.edgeId, out.id, { description: "changed by hand" });
  const drift = await stack.preview({ ...quiet, refresh: true });
  expect(drift.changeSummary.update).toBe(1);
  // ...and is repaired through it.
  await stack.up({ ...quiet, refresh: true });
  expect((await viaA.getRoute(out.edgeId, out.id)).description).toBe("public API");

  // Back on the first replica: nothing to do, then destroy; the second sees nothing left.
  await useReplica(a);
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
  await stack.destroy(quiet);
  const viaB = new EdgeClient(httpTransport({ baseUrl: b.url, retries: 0 }));
  expect((await viaB.listHttpsEdges()).https_edges).toEqual([]);
});
