/**
 * A service started with an API key: the provider authenticates with `edge:apiKey` (a stack
 * secret read at call time), the key never lands in the state, a wrong key fails clearly; and
 * the classes' static get read existing objects.
 */
import { fingerprint } from "../support/fingerprint";
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
  stateFiles,
  workspace,
} from "./support/harness";

const API_KEY = "edge-key-5d1f0c7a-never-in-state";

let ws: ReturnType<typeof workspace>;
let server: RecordingServer;
let stack: Stack;

beforeAll(async () => {
  ws = workspace("spec-program", "apikey");
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-apikey-")), { apiKey: API_KEY });
  stack = await specStack(ws, server.url);
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

const spec = {
  edges: ["e"],
  routes: [
    { name: "r", edge: "e", args: { matchType: "exact_path", match: "/k", backend: { backendId: "bkd_k" } } },
  ],
};

test("without a key the deployment fails with the service's 401, naming what to set", async () => {
  await setSpec(stack, spec);
  await expect(stack.up(quiet)).rejects.toThrow(/401 ERR_EDGE_401: missing API key/);
});

test("with edge:apiKey as a stack secret it deploys, and the key is nowhere in the state", async () => {
  await stack.setConfig("edge:apiKey", { value: API_KEY, secret: true });
  await stack.up(quiet);
  await stack.preview({ ...quiet, expectNoChanges: true });
  const exported = await stateExport(stack, ws.stateDir);
  expect(exported).not.toContain(API_KEY);
  for (const file of stateFiles(ws.stateDir)) expect(readFileSync(file, "utf8")).not.toContain(API_KEY);
});

test("a wrong key fails clearly and changes nothing", async () => {
  const changed = structuredClone(spec);
  changed.routes[0]!.args.backend.backendId = "bkd_other";
  await setSpec(stack, changed);
  await stack.setConfig("edge:apiKey", { value: "wrong-key", secret: true });
  try {
    const before = fingerprint(server.store);
    await expect(stack.up(quiet)).rejects.toThrow(/401 ERR_EDGE_401: the API key is not valid/);
    expect(fingerprint(server.store)).toBe(before); // the PATCH was refused: nothing changed
  } finally {
    await stack.setConfig("edge:apiKey", { value: API_KEY, secret: true });
    await setSpec(stack, spec);
  }
});

test("static get reads existing objects without managing them", async () => {
  const route = (await stack.outputs()).routes!.value.r as { id: string; edgeId: string };
  const tls = await server.client.createTlsEdge({});
  await server.client.putTlsIpRestriction(tls.id, { ip_policy_ids: ["ipp_seen"] });
  await setSpec(stack, { ...spec, lookups: { route, httpsEdge: route.edgeId, tlsRestriction: tls.id } });
  const up = await stack.up(quiet);
  expect(up.outputs.lookedUp!.value).toEqual({
    route: { enabled: true, backendId: "bkd_k" },
    httpsEdge: "e",
    tlsRestriction: ["ipp_seen"],
  });
  await stack.destroy(quiet);
  // Looked-up objects are not deleted by destroy.
  expect((await server.client.getTlsIpRestriction(tls.id)).ip_policies[0]!.id).toBe("ipp_seen");
  expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
});
