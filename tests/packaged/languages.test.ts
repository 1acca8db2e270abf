/**
 * The packaged provider from other languages, through the real engine: one lifecycle table run
 * by a Node.js program on the generated Node.js SDK and by a Python program on the generated
 * Python SDK (the `pulumi` Python SDK from PyPI at the pinned version, the Python language host
 * built by scripts/provision-pulumi.sh). Both programs read the same `spec`; each step asserts on
 * exactly what reached a recording server. Then examples/python as a user copies it: its own
 * virtualenv from its requirements.txt (pinned `pulumi`, the SDK's wheel from EDGE_DIST), through
 * its lifecycle.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
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
import { scaled } from "../support/machine";
import { programWorkspace, type Workspace } from "../support/workspace";
import { declareCheckoutPlugin, packagedWorkspace } from "./support/plugin";
import { pythonEnv, pythonHostProblem } from "./support/python";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const PACKAGE_VERSION = (require("../../package.json") as { version: string }).version;

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

/**
 * What each SDK does with text the service does not keep (docs/guide.md, "Text in inputs"): the
 * Node.js SDK's constructors name the input before serializing (it would drop half of a surrogate
 * pair in silence); the Python SDK cannot serialize such a half and fails naming the resource; a
 * U+0000 reaches the plugin, whose check names the input.
 */
const TEXT_REFUSED: Record<string, [string, string[]][]> = {
  "Node.js": [
    ["lone \ud800 here", ['HttpsEdgeRoute "api": input description must be well-formed Unicode']],
    ["nul \u0000 here", ['HttpsEdgeRoute "api": input description must not hold U+0000']],
  ],
  Python: [
    [
      "lone \ud800 here",
      ["While processing resource: 'api', type: 'edge:index:HttpsEdgeRoute'", "surrogates not allowed"],
    ],
    ["nul \u0000 here", ["property description value", "must not hold U+0000 (NUL, at UTF-16 offset 4)"]],
  ],
};

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

    test("text the service does not keep fails the preview, each SDK as the guide says, and nothing is sent", async () => {
      server.reset();
      for (const [text, said] of TEXT_REFUSED[language]!) {
        await setSpec(stack, spec({ ...withoutCompression, description: text }));
        const error = await stack.preview(quiet).then(
          () => "no error",
          (e: unknown) => String(e),
        );
        for (const words of said) expect(error).toContain(words);
      }
      expect(server.mutations()).toEqual([]);
      await setSpec(stack, spec(withoutCompression));
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

describe("examples/python, as a user copies it", () => {
  const OIDC_SECRET = "oidc-python-example-never-in-state";
  let ws: Workspace;
  let server: RecordingServer;
  let stack: Stack;

  beforeAll(async () => {
    const problem = pythonHostProblem();
    if (problem) throw new Error(problem);
    ws = programWorkspace(join(engine.ROOT, "examples", "python"), "example-python");
    // This checkout's plugin, named by path: the tests' engine downloads nothing.
    declareCheckoutPlugin(ws.dir);
    // What the guide says to run: a virtualenv named as Pulumi.yaml names it, from requirements.txt,
    // whose wheel is in EDGE_DIST (here the directory `npm run sdks` built it into).
    const run = async (cmd: string, args: string[]) => {
      try {
        await promisify(execFile)(cmd, args, {
          cwd: ws.dir,
          encoding: "utf8",
          env: { ...process.env, EDGE_DIST: join(engine.ROOT, "dist", "python") },
        });
      } catch (e) {
        const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
        throw new Error(`${cmd} ${args.join(" ")} failed in ${ws.dir}:\n${stdout}\n${stderr}`);
      }
    };
    await run("python3", ["-m", "venv", "venv"]);
    await run(join(ws.dir, "venv/bin/python"), [
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "-r",
      "requirements.txt",
    ]);
    server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-lang-"))); // removed on close
    stack = await engine.directoryStack({
      workDir: ws.dir,
      stackName: "dev",
      stateDir: ws.stateDir,
      // This engine's Python host ignores Pulumi.yaml's virtualenv (the guide's Python gotcha).
      env: { PULUMI_PYTHON_CMD: join(ws.dir, "venv/bin/python") },
    });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("oidcClientSecret", { value: OIDC_SECRET, secret: true });
  }, scaled(900_000));

  afterAll(async () => {
    await server?.close();
    ws?.cleanup();
  });

  const apiRoute = async () => {
    const [edgeId, routeId] = ((await stack.outputs()).routeId!.value as string).split("/") as [
      string,
      string,
    ];
    return { edgeId, routeId, path: `/edges/https/${edgeId}/routes/${routeId}` };
  };

  test("the virtualenv holds pulumi at the engine's version and the SDK from the wheel", async () => {
    const { stdout } = await promisify(execFile)(
      join(ws.dir, "venv/bin/python"),
      [
        "-c",
        "import importlib.metadata as m, pulumi_edge; print(m.version('pulumi'), m.version('pulumi_edge'))",
      ],
      { encoding: "utf8" },
    );
    expect(stdout.trim()).toBe(`${engine.PULUMI_VERSION} ${PACKAGE_VERSION}`);
  });

  test("up creates both edges, the route with its modules and the IP restriction; no changes after", async () => {
    const up = await stack.up(quiet);
    expect(up.summary.resourceChanges?.create).toBe(5); // stack, 2 edges, route, IP restriction
    expect(up.outputs.allowed!.value).toEqual(["ipp_office"]);
    const { edgeId, routeId } = await apiRoute();
    const route = await server.client.getRoute(edgeId, routeId);
    expect(route.backend?.backend.id).toBe("bkd_shop_api");
    expect(route.request_headers).toMatchObject({ add: { "X-Request-Source": "edge" }, remove: ["Cookie"] });
    expect(route.circuit_breaker).toMatchObject({ num_buckets: 10, error_threshold_percentage: 0.5 });
    expect(route.oidc).toMatchObject({ client_id: "shop", client_secret: OIDC_SECRET });
    server.reset();
    await stack.preview({ ...quiet, expectNoChanges: true });
    expect(server.mutations()).toEqual([]);
  });

  test("a changed input is one PATCH of that module", async () => {
    await stack.setConfig("backendId", { value: "bkd_shop_api_v2" });
    server.reset();
    const up = await stack.up(quiet);
    expect(up.summary.resourceChanges?.update).toBe(1);
    const { path } = await apiRoute();
    expect(server.mutations()).toEqual([
      { method: "PATCH", path, body: { backend: { backend_id: "bkd_shop_api_v2" } } },
    ]);
  });

  test("drift is found by preview --refresh and undone by up --refresh", async () => {
    const { edgeId, routeId, path } = await apiRoute();
    await server.client.updateRoute(edgeId, routeId, { backend: { backend_id: "bkd_rogue" } });
    const preview = await stack.preview({ ...quiet, refresh: true, diff: true });
    expect(preview.changeSummary.update).toBe(1);
    expect(preview.stdout).toMatch(/backendId/);
    server.reset();
    await stack.up({ ...quiet, refresh: true });
    expect(server.mutations()).toEqual([
      { method: "PATCH", path, body: { backend: { backend_id: "bkd_shop_api_v2" } } },
    ]);
    await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
  });

  test("the OIDC client secret is encrypted in the state", async () => {
    const exported = await stateExport(stack, ws.stateDir);
    expect(exported).toContain("ciphertext");
    expect(exported).not.toContain(OIDC_SECRET);
    for (const file of stateFiles(ws.stateDir)) expect(readFileSync(file, "utf8")).not.toContain(OIDC_SECRET);
  });

  test("destroy leaves nothing on the service", async () => {
    await stack.destroy(quiet);
    expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
    expect((await server.client.listTlsEdges()).tls_edges).toEqual([]);
  });
});
