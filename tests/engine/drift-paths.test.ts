/**
 * The three paths of `pulumi-edge drift` give the same verdicts (issue 36): `engine` (`pulumi
 * preview --refresh`, the program run), `refresh` (`pulumi refresh --preview-only`) and `fast` (the
 * state against the service, no engine), through the real engine, both faces. One stack holds a
 * resource per kind of drift; each path must find the same resources drifted, the same way (what
 * `up` would do), the same fields and the same authors:
 *
 * | resource | drift |
 * |---|---|
 * | route `field` | a field changed (`backend.backendId`) |
 * | route `added` | a module added (`compression`) |
 * | route `removed` | a module removed (`backend`) |
 * | route `deleted` | the route deleted |
 * | route `secret` | its webhook secret changed |
 * | edge `gone` (and its route) | the edge deleted, its route with it |
 * | route `kept`, edge `web`, TLS edge and restriction | nothing changed |
 *
 * Before the changes every path says clean. The fast path hands a stack to the engine path, and
 * says why, where it cannot judge: a resource of another provider; a state a refresh wrote last.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckPath, checkStack, type Engine, pulumiEnv } from "../../commands/drift/run";
import type { StackReport } from "../../commands/drift/report";
import { EdgeClient } from "../../sdk/client";
import { createKey } from "../../service/api-keys";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { packagedWorkspace } from "../packaged/support/plugin";
import { ensureBuilt } from "../support/edge-service";
import type { Workspace } from "../support/workspace";
import { quiet, setSpec, workspace } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const BOOTSTRAP = "bootstrap-key.drift-paths-0123456789abcdefghij";
const route = (match: string, extra: object = {}) => ({
  matchType: "path_prefix",
  match,
  backend: { backendId: "bkd_1" },
  ...extra,
});
const SPEC = {
  edges: ["web", "gone"],
  routes: [
    { name: "field", edge: "web", args: route("/field") },
    { name: "added", edge: "web", args: route("/added") },
    { name: "removed", edge: "web", args: route("/removed") },
    { name: "deleted", edge: "web", args: route("/deleted") },
    {
      name: "secret",
      edge: "web",
      args: route("/secret", { webhookVerification: { provider: "github", secret: "secret:hook" } }),
    },
    { name: "kept", edge: "web", args: route("/kept") },
    { name: "orphan", edge: "gone", args: route("/orphan") },
  ],
  tlsEdges: ["tcp"],
  tls: [{ name: "allow", edge: "tcp", args: { ipPolicyIds: ["ipp_1"] } }],
};
const PATHS: readonly CheckPath[] = ["engine", "refresh", "fast"];

const FACES = [
  { face: "dynamic", ws: (label: string) => workspace("spec-program", label) },
  { face: "packaged", ws: (label: string) => packagedWorkspace("packaged-spec-program", label) },
];

/** What a report says, path aside: the verdict, and each drifted resource's op, fields and authors. */
function verdictOf(r: StackReport) {
  return {
    verdict: r.verdict,
    error: r.error,
    resources: Object.fromEntries(
      [...r.resources]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((x) => [
          x.name,
          {
            op: x.op,
            fields: x.fields.map((f) => f.path).sort(),
            authors: x.authors.map((a) => `${a.field} ${a.key}`).sort(),
          },
        ]),
    ),
  };
}

beforeAll(() => ensureBuilt(), 300_000);

describe.each(FACES)("$face face", ({ face, ws: makeWs }) => {
  let server: RunningServer;
  let dataDir: string;
  const workspaces: Workspace[] = [];
  let ops: EdgeClient;

  const driftEngine = (ws: Workspace): Engine => ({
    command: undefined as never,
    env: pulumiEnv({ ...process.env, ...engine.engineEnv({ stateDir: ws.stateDir }) }),
    progress: () => undefined,
    selecting: new Map(),
  });

  async function deploy(label: string, spec: object, foreign = false) {
    const ws = makeWs(`drift-paths-${face}-${label}`);
    workspaces.push(ws);
    const stack = await engine.directoryStack({ workDir: ws.dir, stackName: "paths", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("edge:apiKey", { value: BOOTSTRAP, secret: true });
    await stack.setConfig("hook", { value: "whsec_paths_1", secret: true });
    if (foreign) await stack.setConfig("foreign", { value: "true" });
    await setSpec(stack, spec);
    await stack.up(quiet);
    const e = driftEngine(ws);
    e.command = await engine.pulumiCommand();
    return { ws, stack, target: { dir: ws.dir, stack: "paths" }, engine: e };
  }

  const check = async (d: Awaited<ReturnType<typeof deploy>>) => {
    const out: Partial<Record<CheckPath, StackReport>> = {};
    for (const path of PATHS) out[path] = await checkStack(d.target, d.engine, path);
    return out as Record<CheckPath, StackReport>;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "edge-drift-paths-"));
    server = await startServer({ dataDir, port: 0, apiKey: BOOTSTRAP });
    ops = new EdgeClient(
      httpTransport({
        baseUrl: server.url,
        apiKey: await createKey(server.store, "ops", "write"),
        retries: 0,
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
    for (const ws of workspaces) ws.cleanup();
  });

  test("every kind of drift: the three paths agree", async () => {
    const d = await deploy("kinds", SPEC);
    const clean = await check(d);
    for (const path of PATHS) expect([path, verdictOf(clean[path])]).toEqual([path, verdictOf(clean.engine)]);
    expect(clean.engine.verdict).toBe("clean");
    expect(clean.fast.path).toBe("fast");

    const routes = (await d.stack.outputs()).routes!.value as Record<
      string,
      { id: string; edgeId: string; routeId?: string }
    >;
    const id = (name: string) => routes[name]!.routeId ?? routes[name]!.id;
    const web = routes.field!.edgeId;
    await ops.updateRoute(web, id("field"), { backend: { backend_id: "bkd_ops" } });
    await ops.putRouteModule(web, id("added"), "compression", {});
    await ops.deleteRouteModule(web, id("removed"), "backend");
    await ops.deleteRoute(web, id("deleted"));
    await ops.putRouteModule(web, id("secret"), "webhook_verification", {
      provider: "github",
      secret: "whsec_ops",
    });
    await ops.deleteHttpsEdge(routes.orphan!.edgeId);

    const drifted = await check(d);
    const want = verdictOf(drifted.engine);
    expect(want.verdict).toBe("drifted");
    expect(Object.keys(want.resources).sort()).toEqual(
      ["added", "deleted", "field", "gone", "orphan", "removed", "secret"].sort(),
    );
    expect(want.resources.field).toEqual({
      op: "update",
      fields: ["backend.backendId"],
      authors: ["backend.backendId ops"],
    });
    expect(want.resources.deleted!.op).toBe("create");
    for (const path of ["refresh", "fast"] as const) {
      expect([path, verdictOf(drifted[path])]).toEqual([path, want]);
    }
    expect([drifted.fast.path, drifted.fast.fallback]).toEqual(["fast", undefined]);
    // The fast path reads no program and runs no engine: a fraction of the engine path's time.
    expect(drifted.fast.seconds).toBeLessThan(drifted.engine.seconds);

    // A refresh that wrote the drift into the state: the state no longer says what was deployed,
    // so the fast path hands the stack to the program, which still sees the drift.
    await d.stack.refresh(quiet);
    const [fast, viaEngine] = [
      await checkStack(d.target, d.engine, "fast"),
      await checkStack(d.target, d.engine, "engine"),
    ];
    expect([fast.path, fast.fallback]).toEqual([
      "engine",
      expect.stringContaining("last operation was a refresh"),
    ]);
    expect(verdictOf(fast)).toEqual(verdictOf(viaEngine));
    expect(fast.verdict).toBe("drifted");
    await d.stack.destroy(quiet);
  }, 600_000);

  test("a stack with another provider's resource is the engine path's, and says why", async () => {
    const d = await deploy("foreign", { edges: ["solo"] }, true);
    const fast = await checkStack(d.target, d.engine, "fast");
    expect(fast).toMatchObject({
      verdict: "clean",
      path: "engine",
      fallback: expect.stringContaining("pulumi-nodejs:dynamic:Resource"),
    });
    const edgeId = ((await d.stack.outputs()).edgeIds!.value as Record<string, string>).solo!;
    await ops.deleteHttpsEdge(edgeId);
    const [viaFast, viaEngine] = [
      await checkStack(d.target, d.engine, "fast"),
      await checkStack(d.target, d.engine, "engine"),
    ];
    expect(verdictOf(viaFast)).toEqual(verdictOf(viaEngine));
    expect(viaFast.verdict).toBe("drifted");
    await d.stack.destroy(quiet);
  }, 600_000);
});
