/**
 * HttpsEdgeRoute through the real engine: module-aware updates, drift, replace, secrets.
 * The provider talks over HTTP to a recording server, so each test asserts on exactly what
 * reached the service.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import {
  quiet,
  type RecordingServer,
  recordingServer,
  setSpec,
  specStack,
  stateExport,
  LIFECYCLE_ROUTE as baseRoute,
  stateFiles,
  workspace,
} from "./support/harness";

const WEBHOOK_SECRET = "whsec-4f1c9e2b-never-in-state";
const spec = (route: Record<string, unknown>, edge = "a") => ({
  edges: ["a", "b"],
  routes: [{ name: "api", edge, args: route }],
});

let ws: ReturnType<typeof workspace>;
let server: RecordingServer;
let stack: Stack;
let routeId: string;
let edgeA: string;

const routeOutput = async () => (await stack.outputs()).routes!.value.api as { id: string; edgeId: string };

beforeAll(async () => {
  ws = workspace("spec-program", "route");
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-route-")));
  stack = await specStack(ws, server.url);
  await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

test("create, then a preview shows no changes", async () => {
  await setSpec(stack, spec(baseRoute));
  await stack.up(quiet);
  const out = await routeOutput();
  routeId = out.id;
  edgeA = out.edgeId;
  const route = await server.client.getRoute(edgeA, routeId);
  expect(route.backend?.backend.id).toBe("bkd_1");
  expect(route.webhook_verification).toEqual({ enabled: true, provider: "github", secret: WEBHOOK_SECRET });
  expect(route.request_headers?.add).toEqual({ "X-Foo": "bar" });
  expect(route.ip_restriction?.ip_policies.map((r) => r.id)).toEqual(["ipp_b", "ipp_a"]);
  // Defaults filled by the service, case-folded provider name: none of it is a diff.
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("changing one inner field sends one PATCH carrying only that module, whole", async () => {
  server.reset();
  await setSpec(
    stack,
    spec({ ...baseRoute, circuitBreaker: { ...baseRoute.circuitBreaker, numBuckets: 20 } }),
  );
  const result = await stack.up(quiet);
  expect(result.summary.resourceChanges?.update).toBe(1);
  expect(server.mutations()).toEqual([
    {
      method: "PATCH",
      path: `/edges/https/${edgeA}/routes/${routeId}`,
      body: { circuit_breaker: { tripped_duration: 30, num_buckets: 20, error_threshold_percentage: 0.5 } },
    },
  ]);
  expect((await server.client.getRoute(edgeA, routeId)).circuit_breaker?.num_buckets).toBe(20);
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("policy id order and webhook provider case are not changes", async () => {
  server.reset();
  await setSpec(
    stack,
    spec({
      ...baseRoute,
      circuitBreaker: { ...baseRoute.circuitBreaker, numBuckets: 20 },
      ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b"] },
      webhookVerification: { provider: "github", secret: "secret:webhookSecret" },
    }),
  );
  await stack.preview({ ...quiet, expectNoChanges: true });
  expect(server.mutations()).toEqual([]);
});

const current = {
  ...baseRoute,
  circuitBreaker: { ...baseRoute.circuitBreaker, numBuckets: 20 },
};

test("removing a module calls that module's delete operation and nothing else", async () => {
  const { compression: _removed, ...withoutCompression } = current;
  await setSpec(stack, spec(withoutCompression));
  server.reset();
  await stack.up(quiet);
  expect(server.mutations()).toEqual([
    { method: "DELETE", path: `/edges/https/${edgeA}/routes/${routeId}/compression`, body: undefined },
  ]);
  const route = await server.client.getRoute(edgeA, routeId);
  expect(route.compression).toBeNull();
  expect(route.circuit_breaker?.num_buckets).toBe(20);
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("an out-of-band change is reported by preview --refresh and restored by up --refresh", async () => {
  await server.client.updateRoute(edgeA, routeId, { backend: { backend_id: "bkd_rogue" } });
  // Without refresh the engine compares against its stored state: no change.
  await stack.preview({ ...quiet, expectNoChanges: true });
  const preview = await stack.preview({ ...quiet, refresh: true, diff: true });
  expect(preview.changeSummary.update).toBe(1);
  expect(preview.stdout).toMatch(/backendId/);
  await expect(stack.preview({ ...quiet, refresh: true, expectNoChanges: true })).rejects.toThrow();

  server.reset();
  await stack.up({ ...quiet, refresh: true });
  expect(server.mutations()).toEqual([
    {
      method: "PATCH",
      path: `/edges/https/${edgeA}/routes/${routeId}`,
      body: { backend: { backend_id: "bkd_1" } },
    },
  ]);
  expect((await server.client.getRoute(edgeA, routeId)).backend?.backend.id).toBe("bkd_1");
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
});

test("an out-of-band delete is noticed by refresh and the route recreated by up", async () => {
  await server.client.deleteRoute(edgeA, routeId);
  await stack.up({ ...quiet, refresh: true });
  const out = await routeOutput();
  expect(out.id).not.toBe(routeId);
  const route = await server.client.getRoute(edgeA, out.id);
  expect(route.match).toBe("/api");
  expect(route.circuit_breaker?.num_buckets).toBe(20);
  routeId = out.id;
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
});

test("invalid input fails at preview, naming the property path, before any API call", async () => {
  server.reset();
  await setSpec(
    stack,
    spec({
      ...current,
      circuitBreaker: { numBuckets: 500 },
      requestHeaders: { add: { "X-A": "1", "x-a": "2" } },
    }),
  );
  // The engine prints a top-level input's value only: the failure names the module, then the
  // nested field and the value given (never `{<nil>}`).
  const failure = stack.preview(quiet);
  await expect(failure).rejects.toThrow(
    /property circuitBreaker value \{.*\} has a problem: numBuckets is 500: must be between 1 and 128/,
  );
  await expect(stack.preview(quiet)).rejects.toThrow(
    /property requestHeaders value \{.*\} has a problem: add\["x-a"\] is "2": duplicates header/,
  );
  expect(server.mutations()).toEqual([]);
  await setSpec(stack, spec({ ...current, backend: { backend_id: "bkd_1" } }));
  await expect(stack.preview(quiet)).rejects.toThrow(
    /property backend value \{.*\} has a problem: backend_id .*use camelCase property names \(backendId\)/,
  );
});

test("changing edgeId replaces the route", async () => {
  const { compression: _removed, ...route } = current;
  await setSpec(stack, spec(route, "b"));
  const preview = await stack.preview(quiet);
  expect(preview.changeSummary.replace).toBe(1);
  await stack.up(quiet);
  const out = await routeOutput();
  expect(out.edgeId).not.toBe(edgeA);
  expect((await server.client.getRoute(out.edgeId, out.id)).match).toBe("/api");
  await expect(server.client.getRoute(edgeA, routeId)).rejects.toMatchObject({ status: 404 });
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("secrets never appear in the state in plaintext", async () => {
  // What `pulumi stack export` prints, and the state file itself (the Automation API's
  // exportStack decrypts secrets, so it is not used here).
  const exported = await stateExport(stack, ws.stateDir);
  expect(exported).toContain("webhookVerification");
  expect(exported).toContain("ciphertext");
  expect(exported).not.toContain(WEBHOOK_SECRET);
  for (const file of stateFiles(ws.stateDir))
    expect(readFileSync(file, "utf8")).not.toContain(WEBHOOK_SECRET);
});

test("destroy leaves nothing on the server", async () => {
  await stack.destroy(quiet);
  expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
  expect((await server.client.listTlsEdges()).tls_edges).toEqual([]);
});
