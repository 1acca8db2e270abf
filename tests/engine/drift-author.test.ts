/**
 * Drift that names its author, through the real engine: a stack is brought up with the service's
 * bootstrap key, then a person changes a route out of band over HTTP with a named key
 * ("ops-console"), and `pulumi preview --refresh` says, as a warning of that route, which fields
 * changed, when, with which key and in which request, in the one form other tools parse. On both
 * faces (dynamic, packaged) and from Node.js and Python (the packaged face's generated SDK).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import type { AuditEvent } from "../../sdk/contract";
import { createKey } from "../../service/api-keys";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { packagedWorkspace } from "../packaged/support/plugin";
import { pythonEnv, pythonHostProblem } from "../packaged/support/python";
import { ensureBuilt } from "../support/edge-service";
import type { Workspace } from "../support/workspace";
import { quiet, setSpec, workspace } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const BOOTSTRAP = "bootstrap-key.drift-author-0123456789abcdefghij";
const spec = {
  edges: ["a"],
  routes: [
    {
      name: "shop-r2",
      edge: "a",
      args: { matchType: "path_prefix", match: "/shop", backend: { backendId: "bkd_1" }, compression: {} },
    },
  ],
};

const FACES = [
  {
    face: "dynamic, Node.js",
    ws: () => workspace("spec-program", "drift-author-dyn"),
    env: async () => ({}),
  },
  {
    face: "packaged, Node.js",
    ws: () => packagedWorkspace("packaged-spec-program", "drift-author-pkg"),
    env: async () => ({}),
  },
  {
    face: "packaged, Python",
    ws: () => packagedWorkspace("python-spec-program", "drift-author-py"),
    env: async () => {
      const problem = pythonHostProblem();
      if (problem) throw new Error(problem);
      return (await pythonEnv()).env;
    },
  },
];

/** The line the warning must hold for `event`'s change of `field`. */
const line = (field: string, verb: string, e: AuditEvent) =>
  `route shop-r2: ${field} ${verb} out of band at ${e.time.replace(/\.\d+Z$/, "Z")} by key "ops-console" (request ${e.request_id})`;

beforeAll(() => ensureBuilt(), 300_000);

describe.each(FACES)(
  "a refresh on the $face face names who drifted the route",
  ({ face, ws: makeWs, env }) => {
    let ws: Workspace;
    let server: RunningServer;
    let stack: Stack;
    let dataDir: string;

    beforeAll(async () => {
      ws = makeWs();
      dataDir = mkdtempSync(join(tmpdir(), "edge-drift-author-"));
      server = await startServer({
        dataDir,
        port: 0,
        apiKey: BOOTSTRAP,
      });
      stack = await engine.directoryStack({
        workDir: ws.dir,
        stackName: "drift",
        stateDir: ws.stateDir,
        env: await env(),
      });
      await stack.setConfig("edge:baseUrl", { value: server.url });
      await stack.setConfig("edge:apiKey", { value: BOOTSTRAP, secret: true });
      await setSpec(stack, spec);
    }, 300_000);

    afterAll(async () => {
      await server?.close();
      rmSync(dataDir, { recursive: true, force: true });
      ws?.cleanup();
    });

    test(`${face}: the warning names each drifted field, the time, the key and the request`, async () => {
      await stack.up(quiet);
      const out = (await stack.outputs()).routes!.value["shop-r2"] as {
        id: string;
        routeId?: string;
        edgeId: string;
      };
      const routeId = out.routeId ?? out.id;

      // Nothing drifted: no warning.
      const clean = await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
      expect(clean.stdout).not.toContain("out of band");

      // A person changes the route with their own key, over HTTP.
      const opsKey = await createKey(server.store, "ops-console", "write");
      const ops = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: opsKey, retries: 0 }));
      await ops.updateRoute(out.edgeId, routeId, { backend: { backend_id: "bkd_2" } });
      await ops.deleteRouteModule(out.edgeId, routeId, "compression");
      const [deleted, patched] = (await ops.listAuditEvents({ objectId: routeId, limit: 2 })).audit_events;
      expect([patched!.operation, deleted!.operation]).toEqual(["update_route", "delete_compression_module"]);

      const preview = await stack.preview({ ...quiet, refresh: true });
      expect(preview.changeSummary.update).toBe(1);
      expect(preview.stdout).toContain(line("backend.backendId", "changed", patched!));
      expect(preview.stdout).toContain(line("compression", "deleted", deleted!));
      // A warning of the route itself, in the engine's diagnostics.
      expect(preview.stdout).toMatch(/warning: route shop-r2: /);
      expect(preview.stdout).not.toContain(opsKey);

      // Deleted out of band: the warning says who deleted it.
      await ops.deleteRoute(out.edgeId, routeId);
      const [gone] = (await ops.listAuditEvents({ objectId: routeId, limit: 1 })).audit_events;
      const afterDelete = await stack.preview({ ...quiet, refresh: true });
      expect(afterDelete.stdout).toContain(
        `route shop-r2: deleted out of band at ${gone!.time.replace(/\.\d+Z$/, "Z")} by key "ops-console" (request ${gone!.request_id})`,
      );
      await stack.destroy(quiet);
    }, 600_000);
  },
);
