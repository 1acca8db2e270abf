/**
 * Faults between the provider and the service: a seeded fault-injecting proxy answers some
 * requests with 429 (Retry-After 0 or 1) or 503 without forwarding, resets the connection before
 * or after the server acted, answers 504 after the server acted, stalls beyond the client's
 * timeout (before or after the server acted), or answers late. `pulumi up`, an update and
 * `destroy` run through it: each completes, no route or edge is duplicated, and the state matches
 * the server.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import type { Route } from "../../sdk/contract";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { decodeRoute, routeOutputsOf } from "../../provider/model/route";
import { quiet, stateExport, stateFiles } from "../engine/support/harness";
import { removeDir } from "../service/helpers";
import { Tally } from "./fuzz";
import {
  ensureBuilt,
  FAULTS,
  type FaultAction,
  type FaultProxy,
  faultProxy,
  programStack,
  programWorkspace,
  setSpec,
  stateOf,
  type StateResource,
} from "./support";

const API_KEY = "faults-key-0c1d2e3f-never-logged";
const WEBHOOK_SECRET = "whsec-faults-7a6b5c-never-in-state";
const SEED = 424242;
const tally = new Tally();

let dataDir: string;
let server: RunningServer;
let proxy: FaultProxy;
let direct: EdgeClient;
let ws: ReturnType<typeof programWorkspace>;
let stack: Stack;
const output: string[] = [];
const onOutput = (s: string) => output.push(s);

beforeAll(async () => {
  ensureBuilt();
  dataDir = mkdtempSync(join(tmpdir(), "edge-faults-"));
  server = await startServer({ dataDir, port: 0, apiKey: API_KEY });
  direct = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: API_KEY, retries: 0 }));
  // Besides the seeded schedule, the first answers to a route create, an edge create and a TLS edge
  // create are lost after the server acted (reset, 504, stall): the cases a retry could duplicate.
  const forced: Record<string, FaultAction> = {
    "POST routes": "reset-after",
    "POST /edges/https": "504-after",
    "POST /edges/tls": "stall-after",
  };
  proxy = await faultProxy({
    target: server.url,
    seed: SEED,
    rate: 0.3,
    slowMs: 300,
    intercept: ({ method, path }) => {
      const key = `${method} ${path.endsWith("/routes") ? "routes" : path}`;
      const action = forced[key];
      delete forced[key];
      return action;
    },
  });
  ws = programWorkspace("faults");
  // A short per-attempt timeout, so that stalls cost seconds, not the default 30 s.
  stack = await programStack(ws, proxy.url, { apiKey: API_KEY, requestTimeoutMs: 1500 });
  await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
});

afterAll(async () => {
  const counts = proxy?.counts();
  if (counts) for (const [action, n] of Object.entries(counts)) tally.add("proxy actions", action, n);
  tally.write("faults");
  await proxy?.close();
  await server?.close();
  ws?.cleanup();
  if (dataDir) removeDir(dataDir);
});

const route = (match: string, modules: Record<string, unknown>) => ({
  matchType: "path_prefix",
  match,
  ...modules,
});
const oidc = { issuer: "https://id.example.com", clientId: "c", clientSecret: "secret:webhookSecret" };

const SPEC_1 = {
  edges: ["a", "b"],
  tlsEdges: ["t"],
  routes: [
    { name: "r0", edge: "a", args: route("/r0", { backend: { backendId: "bkd_0" } }) },
    { name: "r1", edge: "a", args: route("/r1", { circuitBreaker: { numBuckets: 10, trippedDuration: 5 } }) },
    {
      name: "r2",
      edge: "a",
      args: route("/r2", { requestHeaders: { add: { "X-A": "1" } }, compression: {} }),
    },
    {
      name: "r3",
      edge: "a",
      args: route("/r3", { webhookVerification: { provider: "stripe", secret: "secret:webhookSecret" } }),
    },
    { name: "r4", edge: "a", args: route("/r4", { oidc, backend: { backendId: "bkd_4" } }) },
    { name: "r5", edge: "a", args: route("/r5", { ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] } }) },
    { name: "r6", edge: "b", args: route("/r6", { trafficPolicy: { value: "p6" } }) },
    { name: "r7", edge: "b", args: route("/r7", { userAgentFilter: { deny: ["bot"] } }) },
    { name: "r8", edge: "b", args: route("/r8", { responseHeaders: { remove: ["Server"] } }) },
    {
      name: "r9",
      edge: "b",
      args: route("/r9", { websocketTcpConverter: {}, backend: { backendId: "bkd_9" } }),
    },
  ],
  tls: [{ name: "t-allow", edge: "t", args: { ipPolicyIds: ["ipp_office"] } }],
};

/** SPEC_1 changed in every way an update can: modules changed, added, removed, auth switched; routes gone and new. */
const SPEC_2 = {
  ...SPEC_1,
  routes: [
    { name: "r0", edge: "a", args: route("/r0", { backend: { backendId: "bkd_0b" }, compression: {} }) },
    { name: "r1", edge: "a", args: route("/r1", { circuitBreaker: { numBuckets: 20 } }) },
    { name: "r2", edge: "a", args: route("/r2", { requestHeaders: { add: { "X-A": "2" } } }) },
    {
      name: "r4",
      edge: "a",
      args: route("/r4", {
        saml: { idpMetadata: '<EntityDescriptor entityID="x"/>' },
        backend: { backendId: "bkd_4" },
      }),
    },
    { name: "r5", edge: "a", args: route("/r5", { ipRestriction: { ipPolicyIds: ["ipp_c"] } }) },
    { name: "r6", edge: "b", args: route("/r6", { trafficPolicy: { value: "p6b" } }) },
    { name: "r8", edge: "b", args: route("/r8", { responseHeaders: { remove: ["Server"] } }) },
    { name: "r9", edge: "b", args: route("/r9", { websocketTcpConverter: { enabled: false } }) },
    { name: "r10", edge: "b", args: route("/r10", { backend: { backendId: "bkd_10" } }) },
    { name: "r11", edge: "a", args: route("/r11", { oidc }) },
  ],
  tls: [{ name: "t-allow", edge: "t", args: { ipPolicyIds: ["ipp_office", "ipp_vpn"] } }],
};

/** What the server holds, read directly (no proxy). */
async function serverView() {
  const https = (await direct.listHttpsEdges()).https_edges;
  const tls = (await direct.listTlsEdges()).tls_edges;
  const routes: Route[] = [];
  for (const e of https) for await (const r of direct.allRoutes(e.id)) routes.push(r);
  return { https, tls, routes };
}

/** A route's configuration (the brain's value): comparable between the state (decrypted) and the server. */
const comparable = (outputs: Record<string, any>) => decodeRoute(outputs);

/** The state and the server hold exactly the same objects: no duplicate, nothing orphaned, same configuration. */
async function expectStateMatchesServer(expectedRoutes: number) {
  const { resources, pending } = await stateOf(stack, ws.stateDir);
  expect(pending).toEqual([]);
  const view = await serverView();
  const byKind = (k: StateResource["kind"]) => resources.filter((r) => r.kind === k);
  expect(byKind("route")).toHaveLength(expectedRoutes);
  expect(view.https.map((e) => e.id).sort()).toEqual(
    byKind("httpsEdge")
      .map((r) => r.id)
      .sort(),
  );
  expect(view.tls.map((e) => e.id).sort()).toEqual(
    byKind("tlsEdge")
      .map((r) => r.id)
      .sort(),
  );
  expect(view.routes.map((r) => r.id).sort()).toEqual(
    byKind("route")
      .map((r) => r.id)
      .sort(),
  );
  for (const r of byKind("route")) {
    const stored = view.routes.find((s) => s.id === r.id)!;
    expect([r.name, comparable(routeOutputsOf(stored))]).toEqual([r.name, comparable(r.outputs)]);
  }
  for (const r of byKind("tlsRestriction")) {
    const m = await direct.getTlsIpRestriction(r.id);
    expect(m.ip_policies.map((p) => p.id)).toEqual(r.outputs.ipPolicyIds);
  }
  // No 5xx from the server itself, whatever the proxy did.
  expect(proxy.upstreamStatuses().filter((s) => s >= 500)).toEqual([]);
}

test("pulumi up through the faults completes; nothing is duplicated; the state matches the server", async () => {
  await setSpec(stack, SPEC_1);
  await stack.up({ ...quiet, onOutput });
  await expectStateMatchesServer(10);
  // Faults of every kind were injected, creates among them.
  const counts = proxy.counts();
  for (const action of FAULTS) {
    expect([action, counts[action] > 0]).toEqual([action, true]);
  }
  const faultedCreates = proxy.log.filter((r) => r.method === "POST" && r.action !== "pass");
  const lostAfterActing = faultedCreates.filter(
    (r) => r.action.endsWith("-after") && r.upstreamStatus === 201,
  );
  expect(lostAfterActing.length).toBeGreaterThanOrEqual(3);
  // Every retried create carried the same Idempotency-Key on each attempt.
  expect(
    proxy.log.filter((r) => r.method === "POST").every((r) => typeof r.idempotencyKey === "string"),
  ).toBe(true);
  tally.add("up", "creates faulted", faultedCreates.length);
  tally.add("up", "creates acted on by the server, answer lost", lostAfterActing.length);
});

test("preview --refresh through the faults: no changes", async () => {
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true, onOutput });
});

test("an update of every kind through the faults converges to the new spec", async () => {
  await setSpec(stack, SPEC_2);
  await stack.up({ ...quiet, onOutput });
  await expectStateMatchesServer(10);
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true, onOutput });
});

test("destroy through the faults leaves the server empty", async () => {
  await stack.destroy({ ...quiet, onOutput });
  const view = await serverView();
  expect([view.https, view.tls, view.routes]).toEqual([[], [], []]);
  expect((await stateOf(stack, ws.stateDir)).resources).toEqual([]);
  expect(proxy.upstreamStatuses().filter((s) => s >= 500)).toEqual([]);
  tally.add("requests", "through the proxy", proxy.log.length);
});

test("the API key and secrets appear in no engine output, state file, or backup", async () => {
  const text = output.join("");
  expect(text.length).toBeGreaterThan(0);
  expect(text).not.toContain(API_KEY);
  expect(text).not.toContain(WEBHOOK_SECRET);
  expect(await stateExport(stack, ws.stateDir)).not.toContain(API_KEY);
  for (const file of stateFiles(ws.stateDir)) {
    const content = readFileSync(file, "utf8");
    expect(content).not.toContain(API_KEY);
    expect(content).not.toContain(WEBHOOK_SECRET);
  }
  // The stack's config file holds the key encrypted only.
  const config = readFileSync(join(ws.dir, "Pulumi.test.yaml"), "utf8");
  expect(config).toContain("edge:apiKey");
  expect(config).not.toContain(API_KEY);
  // ...and the key did reach the server, on every request.
  expect(proxy.log.every((r) => r.authorization === `Bearer ${API_KEY}`)).toBe(true);
});
