/**
 * Retention pruning past the stack's last write (`--audit-retention`): the service really prunes
 * the trail of a route the stack wrote, then a person changes the route with their own key, and
 * the provider's refresh of the route (its lifecycle's read, with the client and context a face
 * gives it) names no key: nothing left in the trail proves its events newer than the stack's
 * write, so the line says why instead ("restored or pruned?"). The restore, through the engine on
 * both stores: tests/engine/restore.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EdgeClient } from "../../sdk/client";
import { createKey } from "../../service/api-keys";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { parseAuthorLines, parseUnattributedLines } from "../../provider/lifecycle/authorship";
import { routeLifecycle } from "../../provider/lifecycle/route";
import { routeOutputsOf } from "../../provider/model/route";
import { scaled } from "../support/machine";

const BOOTSTRAP = "bootstrap-key.retention-test-0123456789abcdef";
const RETENTION_MS = 4000;

let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "edge-retention-"));
  server = await startServer({ dataDir, port: 0, apiKey: BOOTSTRAP, auditRetentionMs: RETENTION_MS });
});

afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a drift after retention pruned the stack's write names no key, and says why", async () => {
  const stack = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: BOOTSTRAP, retries: 0 }));
  const edge = await stack.createHttpsEdge({ description: "web" });
  const route = await stack.createRoute(edge.id, {
    match_type: "path_prefix",
    match: "/shop",
    backend: { backend_id: "bkd_1" },
  });
  const lastWrite = stack.lastWrite;
  expect(lastWrite).toMatch(/^op_/);

  // Pruned by the service itself, in the background.
  const until = Date.now() + scaled(60_000);
  while ((await stack.listAuditEvents({ objectId: route.id })).audit_events.length > 0) {
    if (Date.now() > until)
      throw new Error(`the route's create event was not pruned within ${scaled(60_000)} ms`);
    await sleep(250);
  }

  const opsKey = await createKey(server.store, "ops-console", "write");
  const ops = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: opsKey, retries: 0 }));
  await ops.updateRoute(edge.id, route.id, { backend: { backend_id: "bkd_hotfix" } });

  const warnings: string[] = [];
  const read = await routeLifecycle.read(
    stack,
    `${edge.id}/${route.id}`,
    { ...routeOutputsOf(route), edgeId: edge.id },
    { name: "shop", lastWrite, log: { info: () => undefined, warn: (m) => void warnings.push(m) } },
  );
  // The person's event was still in the trail when the refresh read it: only the stack's was gone.
  const [patched] = (await stack.listAuditEvents({ objectId: route.id })).audit_events;
  expect(patched).toMatchObject({ key: "ops-console", operation: "update_route" });

  expect(read?.outs.backend).toMatchObject({ backendId: "bkd_hotfix" });
  expect(warnings.flatMap(parseAuthorLines)).toEqual([]);
  expect(warnings.flatMap(parseUnattributedLines)).toEqual([
    { label: "route", name: "shop", field: "backend.backendId", verb: "changed", since: lastWrite },
  ]);
  expect(warnings.join("\n")).toContain(
    `route shop: backend.backendId changed out of band, author unknown: the service's history does not reach the stack's last change (request ${lastWrite}): restored or pruned?`,
  );
}, 120_000);
