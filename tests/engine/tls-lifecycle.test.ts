/** TlsEdgeIpRestriction through the real engine: PUT/GET/DELETE, drift, adoption, replace. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import {
  quiet,
  type RecordingServer,
  recordingServer,
  setSpec,
  specStack,
  workspace,
} from "./support/harness";

let ws: ReturnType<typeof workspace>;
let server: RecordingServer;
let stack: Stack;
let edgeId: string;

const spec = (args: Record<string, unknown> | null, edge = "t1") => ({
  tlsEdges: ["t1", "t2"],
  tls: args ? [{ name: "allow", edge, args }] : [],
});

beforeAll(async () => {
  ws = workspace("spec-program", "tls");
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-tls-")));
  stack = await specStack(ws, server.url);
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

test("create with PUT, then a preview shows no changes", async () => {
  await setSpec(stack, spec({ ipPolicyIds: ["ipp_2", "ipp_1"] }));
  server.reset();
  await stack.up(quiet);
  edgeId = ((await stack.outputs()).tlsEdgeIds!.value as Record<string, string>).t1!;
  const puts = server.mutations().filter((r) => r.path.endsWith("/ip_restriction"));
  expect(puts).toEqual([
    {
      method: "PUT",
      path: `/edges/tls/${edgeId}/ip_restriction`,
      body: { ip_policy_ids: ["ipp_2", "ipp_1"] },
    },
  ]);
  expect(await server.client.getTlsIpRestriction(edgeId)).toMatchObject({ enabled: true });
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("an update PUTs the whole module; order of ids is not a change", async () => {
  await setSpec(stack, spec({ ipPolicyIds: ["ipp_1", "ipp_2"] }));
  await stack.preview({ ...quiet, expectNoChanges: true });
  await setSpec(stack, spec({ ipPolicyIds: ["ipp_1", "ipp_3"], enabled: false }));
  server.reset();
  await stack.up(quiet);
  expect(server.mutations()).toEqual([
    {
      method: "PUT",
      path: `/edges/tls/${edgeId}/ip_restriction`,
      body: { enabled: false, ip_policy_ids: ["ipp_1", "ipp_3"] },
    },
  ]);
  const module = await server.client.getTlsIpRestriction(edgeId);
  expect(module.enabled).toBe(false);
  expect(module.ip_policies.map((r) => r.id)).toEqual(["ipp_1", "ipp_3"]);
});

test("out-of-band change: preview --refresh reports it, up --refresh restores it", async () => {
  await server.client.putTlsIpRestriction(edgeId, { ip_policy_ids: ["ipp_rogue"] });
  const preview = await stack.preview({ ...quiet, refresh: true });
  expect(preview.changeSummary.update).toBe(1);
  await stack.up({ ...quiet, refresh: true });
  const module = await server.client.getTlsIpRestriction(edgeId);
  expect(module.enabled).toBe(false);
  expect(module.ip_policies.map((r) => r.id)).toEqual(["ipp_1", "ipp_3"]);
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
});

test("out-of-band delete: refresh + up recreates it", async () => {
  await server.client.deleteTlsIpRestriction(edgeId);
  await stack.up({ ...quiet, refresh: true });
  expect((await server.client.getTlsIpRestriction(edgeId)).ip_policies.map((r) => r.id)).toEqual([
    "ipp_1",
    "ipp_3",
  ]);
});

test("removing the resource calls the module's DELETE", async () => {
  await setSpec(stack, spec(null));
  server.reset();
  await stack.up(quiet);
  expect(server.mutations()).toEqual([
    { method: "DELETE", path: `/edges/tls/${edgeId}/ip_restriction`, body: undefined },
  ]);
  await expect(server.client.getTlsIpRestriction(edgeId)).rejects.toMatchObject({ status: 404 });
});

test("create refuses to overwrite an existing module unless told to adopt", async () => {
  await server.client.putTlsIpRestriction(edgeId, { ip_policy_ids: ["ipp_existing"] });
  await setSpec(stack, spec({ ipPolicyIds: ["ipp_mine"] }));
  await expect(stack.up(quiet)).rejects.toThrow(/already has an IP restriction module.*adopt: true/s);
  expect((await server.client.getTlsIpRestriction(edgeId)).ip_policies.map((r) => r.id)).toEqual([
    "ipp_existing",
  ]);

  await setSpec(stack, spec({ ipPolicyIds: ["ipp_mine"], adopt: true }));
  await stack.up(quiet);
  expect((await server.client.getTlsIpRestriction(edgeId)).ip_policies.map((r) => r.id)).toEqual([
    "ipp_mine",
  ]);
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("invalid input fails at preview naming the property", async () => {
  await setSpec(stack, spec({ ipPolicyIds: [], adopt: true }));
  await expect(stack.preview(quiet)).rejects.toThrow(/property ipPolicyIds .*at least one IP policy id/);
});

test("changing edgeId replaces the module: created on the new edge, deleted from the old", async () => {
  await setSpec(stack, spec({ ipPolicyIds: ["ipp_mine"], adopt: true }, "t2"));
  const preview = await stack.preview(quiet);
  expect(preview.changeSummary.replace).toBe(1);
  await stack.up(quiet);
  const t2 = ((await stack.outputs()).tlsEdgeIds!.value as Record<string, string>).t2!;
  expect((await server.client.getTlsIpRestriction(t2)).ip_policies.map((r) => r.id)).toEqual(["ipp_mine"]);
  await expect(server.client.getTlsIpRestriction(edgeId)).rejects.toMatchObject({ status: 404 });
});

test("destroy leaves nothing on the server", async () => {
  await stack.destroy(quiet);
  expect((await server.client.listTlsEdges()).tls_edges).toEqual([]);
});
