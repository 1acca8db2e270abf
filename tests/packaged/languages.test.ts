/**
 * The packaged provider from other languages, through the real engine: one lifecycle table run
 * by a Node.js program on the generated Node.js SDK and by a Python program on the generated
 * Python SDK (the `pulumi` Python SDK from PyPI at the pinned version, the Python language host
 * built by scripts/provision-pulumi.sh). Both programs read the same `spec`; each step asserts on
 * exactly what reached a recording server.
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
  stateExport,
  LIFECYCLE_ROUTE as baseRoute,
  stateFiles,
} from "../engine/support/harness";
import type { Workspace } from "../support/workspace";
import { packagedWorkspace } from "./support/plugin";
import { pythonEnv, pythonHostProblem } from "./support/python";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const WEBHOOK_SECRET = "whsec-7d2a-packaged-never-in-state";
const changed = { ...baseRoute, circuitBreaker: { ...baseRoute.circuitBreaker, numBuckets: 20 } };
const { compression: _removed, ...withoutCompression } = changed;
const spec = (route: Record<string, unknown>) => ({
  edges: ["a"],
  routes: [{ name: "api", edge: "a", args: route }],
});

const LANGUAGES = [
  { language: "Node.js", fixture: "packaged-spec-program", env: async () => ({}) },
  {
    language: "Python",
    fixture: "python-spec-program",
    env: async () => {
      const problem = pythonHostProblem();
      if (problem) throw new Error(problem);
      return (await pythonEnv()).env;
    },
  },
];

describe.each(LANGUAGES)(
  "the route lifecycle in $language on the generated SDK",
  ({ language, fixture, env }) => {
    let ws: Workspace;
    let server: RecordingServer;
    let stack: Stack;
    let edgeId: string;
    let routeId: string;
    /** The route's service id (its resource id on this face is `<edgeId>/<routeId>`). */
    const route = async () => {
      const out = (await stack.outputs()).routes!.value.api as {
        id: string;
        routeId: string;
        edgeId: string;
      };
      expect(out.id).toBe(`${out.edgeId}/${out.routeId}`);
      return { id: out.routeId, edgeId: out.edgeId };
    };
    const routePath = () => `/edges/https/${edgeId}/routes/${routeId}`;

    beforeAll(async () => {
      ws = packagedWorkspace(fixture, `lang-${language.replace(/\W/g, "").toLowerCase()}`);
      server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-lang-"))); // removed on close
      stack = await engine.directoryStack({
        workDir: ws.dir,
        stackName: "lifecycle",
        stateDir: ws.stateDir,
        env: await env(),
      });
      await stack.setConfig("edge:baseUrl", { value: server.url });
      await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
    });

    afterAll(async () => {
      await server?.close();
      ws?.cleanup();
    });

    test("create, then a preview shows no changes", async () => {
      await setSpec(stack, spec(baseRoute));
      const up = await stack.up(quiet);
      expect(up.summary.resourceChanges?.create).toBe(3); // stack, edge, route (the provider is default)
      ({ id: routeId, edgeId } = await route());
      const created = await server.client.getRoute(edgeId, routeId);
      expect(created.backend?.backend.id).toBe("bkd_1");
      expect(created.request_headers?.add).toEqual({ "X-Foo": "bar" });
      expect(created.webhook_verification).toEqual({
        enabled: true,
        provider: "github",
        secret: WEBHOOK_SECRET,
      });
      expect(created.ip_restriction?.ip_policies.map((r) => r.id)).toEqual(["ipp_b", "ipp_a"]);
      server.reset();
      await stack.preview({ ...quiet, expectNoChanges: true });
      expect(server.mutations()).toEqual([]);
    });

    test("one inner field changed: one PATCH carrying that module whole", async () => {
      await setSpec(stack, spec(changed));
      server.reset();
      const up = await stack.up(quiet);
      expect(up.summary.resourceChanges?.update).toBe(1);
      expect(server.mutations()).toEqual([
        {
          method: "PATCH",
          path: routePath(),
          body: {
            circuit_breaker: { tripped_duration: 30, num_buckets: 20, error_threshold_percentage: 0.5 },
          },
        },
      ]);
      await stack.preview({ ...quiet, expectNoChanges: true });
    });

    test("a module removed: its own DELETE and nothing else", async () => {
      await setSpec(stack, spec(withoutCompression));
      server.reset();
      await stack.up(quiet);
      expect(server.mutations()).toEqual([
        { method: "DELETE", path: `${routePath()}/compression`, body: undefined },
      ]);
      expect((await server.client.getRoute(edgeId, routeId)).compression).toBeNull();
      await stack.preview({ ...quiet, expectNoChanges: true });
    });

    test("drift is found by preview --refresh and undone by up --refresh", async () => {
      await server.client.updateRoute(edgeId, routeId, { backend: { backend_id: "bkd_rogue" } });
      await stack.preview({ ...quiet, expectNoChanges: true });
      const preview = await stack.preview({ ...quiet, refresh: true, diff: true });
      expect(preview.changeSummary.update).toBe(1);
      expect(preview.stdout).toMatch(/backendId/);
      server.reset();
      await stack.up({ ...quiet, refresh: true });
      expect(server.mutations()).toEqual([
        { method: "PATCH", path: routePath(), body: { backend: { backend_id: "bkd_1" } } },
      ]);
      await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
    });

    test("an out-of-band delete is noticed and the route recreated", async () => {
      await server.client.deleteRoute(edgeId, routeId);
      await stack.up({ ...quiet, refresh: true });
      const out = await route();
      expect(out.id).not.toBe(routeId);
      const recreated = await server.client.getRoute(edgeId, out.id);
      expect(recreated.match).toBe("/api");
      expect(recreated.circuit_breaker?.num_buckets).toBe(20);
      expect(recreated.compression).toBeNull();
      routeId = out.id;
      await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
    });

    test("the secret is encrypted in the state", async () => {
      const exported = await stateExport(stack, ws.stateDir);
      expect(exported).toContain("ciphertext");
      expect(exported).not.toContain(WEBHOOK_SECRET);
      for (const file of stateFiles(ws.stateDir))
        expect(readFileSync(file, "utf8")).not.toContain(WEBHOOK_SECRET);
    });

    test("destroy deletes the route and the edge", async () => {
      server.reset();
      await stack.destroy(quiet);
      expect(server.mutations()).toEqual(
        expect.arrayContaining([
          { method: "DELETE", path: routePath(), body: undefined },
          { method: "DELETE", path: `/edges/https/${edgeId}`, body: undefined },
        ]),
      );
      expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
    });
  },
);
