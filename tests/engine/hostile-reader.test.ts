/**
 * Authorship and secrets against a hostile reader (issue 35), through the real engine, both faces:
 * - a refresh with a `read` key, which the service answers with secrets redacted, shows no drift
 *   for values it cannot see; a secret changed out of band is drift all the same, and named from
 *   the audit trail;
 * - attribution is not fooled: a change whose event could not list every field (truncated) makes
 *   the author unknown rather than an older event's key; an author stays found behind more than a
 *   page of other events; changes made before the stack's own last write are not drift's authors.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import { createKey } from "../../service/api-keys";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { packagedWorkspace } from "../packaged/support/plugin";
import { ensureBuilt } from "../support/edge-service";
import type { Workspace } from "../support/workspace";
import { quiet, setSpec, workspace } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const BOOTSTRAP = "bootstrap-key.hostile-reader-0123456789abcdefghij";
const WEBHOOK_SECRET = "whsec_hostile_reader_1";
const spec = {
  edges: ["a"],
  routes: [
    {
      name: "hooks",
      edge: "a",
      args: {
        matchType: "path_prefix",
        match: "/hooks",
        backend: { backendId: "bkd_1" },
        requestHeaders: { add: { "X-Target": "v1" } },
        webhookVerification: { provider: "github", secret: "secret:webhookSecret" },
      },
    },
  ],
};

const FACES = [
  { face: "dynamic", ws: () => workspace("spec-program", "hostile-dyn") },
  { face: "packaged", ws: () => packagedWorkspace("packaged-spec-program", "hostile-pkg") },
];

beforeAll(() => ensureBuilt(), 300_000);

describe.each(FACES)("$face face", ({ ws: makeWs }) => {
  let ws: Workspace;
  let server: RunningServer;
  let stack: Stack;
  let dataDir: string;
  let route: { edgeId: string; routeId: string };
  let keys: Record<"read" | "writer" | "mallory", string>;
  let as: (key: string) => EdgeClient;

  /** `preview --refresh` with the API key `key` (EDGE_API_KEY wins over the stack's edge:apiKey). */
  const refreshWith = async (key: string) => {
    const local = stack.workspace as LocalWorkspace;
    local.envVars.EDGE_API_KEY = key;
    try {
      return await stack.preview({ ...quiet, refresh: true });
    } finally {
      delete local.envVars.EDGE_API_KEY;
    }
  };
  const line = (field: string, key: string) =>
    new RegExp(`route hooks: ${field.replace(/\./g, "\\.")} changed out of band at \\S+ by key "${key}"`);

  beforeAll(async () => {
    ws = makeWs();
    dataDir = mkdtempSync(join(tmpdir(), "edge-hostile-"));
    server = await startServer({ dataDir, port: 0, apiKey: BOOTSTRAP });
    keys = {
      read: await createKey(server.store, "dashboard", "read"),
      writer: await createKey(server.store, "writer", "write"),
      mallory: await createKey(server.store, "mallory", "write"),
    };
    as = (key) => new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: key, retries: 0 }));
    stack = await engine.directoryStack({ workDir: ws.dir, stackName: "hostile", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("edge:apiKey", { value: BOOTSTRAP, secret: true });
    await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
    await setSpec(stack, spec);
    await stack.up(quiet);
    const out = (await stack.outputs()).routes!.value.hooks as {
      id: string;
      routeId?: string;
      edgeId: string;
    };
    route = { edgeId: out.edgeId, routeId: out.routeId ?? out.id };
  }, 300_000);

  afterAll(async () => {
    await stack?.destroy(quiet);
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
    ws?.cleanup();
  });

  /** Back to what the program says, with the deploying key (the stack's own last write). */
  const restore = async () => {
    await stack.up({ ...quiet, refresh: true });
    await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
  };

  test("a read key sees no secret, and makes no drift of it", async () => {
    const read = await as(keys.read).getRoute(route.edgeId, route.routeId);
    expect(read.webhook_verification?.secret).toBe("[redacted]");
    const clean = await refreshWith(keys.read);
    expect(clean.changeSummary.update ?? 0).toBe(0);
    expect(clean.stdout).not.toContain("out of band");
    expect(clean.stdout).not.toContain(WEBHOOK_SECRET);
  }, 300_000);

  test("a secret changed out of band is drift to a read key too, named from the trail", async () => {
    await as(keys.mallory).putRouteModule(route.edgeId, route.routeId, "webhook_verification", {
      provider: "github",
      secret: "whsec_mallory",
    });
    const drifted = await refreshWith(keys.read);
    expect(drifted.changeSummary.update).toBe(1);
    expect(drifted.stdout).toMatch(line("webhookVerification.secret", "mallory"));
    expect(drifted.stdout).not.toContain("whsec_mallory");
    await restore();
  }, 300_000);

  test("a truncated event makes the author unknown, never an older event's key", async () => {
    // writer sets X-Target; then mallory changes it together with so many long header names
    // that the event cannot list them all (truncated).
    const headers = (target: string, many: number) => ({
      add: {
        "X-Target": target,
        ...Object.fromEntries(
          Array.from({ length: many }, (_, i) => [`X-${"Long-Header-Name-".repeat(12)}${i}`, "v"]),
        ),
      },
    });
    await as(keys.writer).putRouteModule(route.edgeId, route.routeId, "request_headers", headers("v2", 0));
    await as(keys.mallory).putRouteModule(route.edgeId, route.routeId, "request_headers", headers("v3", 99));
    const [last] = (await as(keys.writer).listAuditEvents({ objectId: route.routeId, limit: 1 }))
      .audit_events;
    expect([last!.key, last!.truncated]).toEqual(["mallory", true]);
    const preview = await refreshWith(BOOTSTRAP);
    expect(preview.changeSummary.update).toBe(1);
    expect(preview.stdout).not.toMatch(/requestHeaders[^\n]*by key "writer"/);
    expect(preview.stdout).not.toMatch(/requestHeaders[^\n]*out of band/);
    await restore();
  }, 300_000);

  test("an author behind more than a page of other events is found; empty requests write none", async () => {
    await as(keys.writer).updateRoute(route.edgeId, route.routeId, { backend: { backend_id: "bkd_writer" } });
    for (let i = 0; i < 120; i++) {
      await as(keys.mallory).updateRoute(route.edgeId, route.routeId, { metadata: `m${i}` });
      await as(keys.mallory).updateRoute(route.edgeId, route.routeId, {}); // no change, no event
    }
    const preview = await refreshWith(BOOTSTRAP);
    expect(preview.stdout).toMatch(line("backend.backendId", "writer"));
    expect(preview.stdout).toMatch(line("metadata", "mallory"));
    await restore();
  }, 300_000);

  test("changes the stack's own last write undid are not drift's authors", async () => {
    // writer changed the backend before the stack's last up (which put it back): a later
    // change of another field is drift; the backend is not, and writer is named nowhere.
    await as(keys.writer).updateRoute(route.edgeId, route.routeId, { backend: { backend_id: "bkd_before" } });
    await restore();
    await as(keys.mallory).updateRoute(route.edgeId, route.routeId, { description: "by mallory" });
    const preview = await refreshWith(BOOTSTRAP);
    expect(preview.stdout).toMatch(line("description", "mallory"));
    expect(preview.stdout).not.toContain('by key "writer"');
    await restore();
  }, 300_000);
});
