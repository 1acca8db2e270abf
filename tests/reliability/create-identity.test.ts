/**
 * What the identity of creates means beyond a lost answer (see provider/identity), through the
 * real engine, both faces, against one service:
 * - two stacks with the same project, stack and resource names (two backends, two checkouts)
 *   never share an object, even when they share one settings file (its salt) or have no salt;
 * - an object older than the recovery window is never taken back silently;
 * - destroy then up makes new objects;
 * - a forced replace (`pulumi up --replace`) whose create request is unchanged keeps the object
 *   (and says so); a replace the program asks for makes a new one;
 * - the program changed between a failed run and its recovery: a route the failed run made is
 *   found again and brought to the new inputs; an edge cannot be updated, so a changed edge is
 *   made anew and the failed run's edge is left on the service (what the docs say).
 */
import { mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "libsql";
import type { Workspace } from "../support/workspace";
import { type RecordingServer, recordingServer } from "../engine/support/harness";
import { packagedWorkspace } from "../packaged/support/plugin";
import {
  engine,
  ensureBuilt,
  type FaultProxy,
  faultProxy,
  killChildren,
  programWorkspace,
  runPulumi,
  stateOf,
} from "./support";

jest.setTimeout(300_000);

type Face = "dynamic" | "packaged";
const SPEC = {
  edges: ["web"],
  routes: [
    { name: "api", edge: "web", args: { matchType: "path_prefix", match: "/api", description: "v1" } },
  ],
  tlsEdges: ["tcp"],
  tls: [{ name: "allow", edge: "tcp", args: { ipPolicyIds: ["ipp_1"] } }],
};

let server: RecordingServer;
let serviceDir: string;
beforeAll(async () => {
  ensureBuilt();
  serviceDir = mkdtempSync(join(tmpdir(), "edge-identity-"));
  server = await recordingServer(serviceDir);
});
afterAll(async () => {
  killChildren();
  await server?.close();
});

/** After each test, pass or fail: its proxies closed, its workspaces removed, the service emptied. */
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
  for (const e of (await server.client.listHttpsEdges()).https_edges)
    await server.client.deleteHttpsEdge(e.id);
  for (const e of (await server.client.listTlsEdges()).tls_edges) await server.client.deleteTlsEdge(e.id);
});

interface Stack {
  ws: Workspace;
  proxy?: FaultProxy;
  run(args: string[]): Promise<{ code: number | null; output: string }>;
  setSpec(spec: unknown): Promise<void>;
  ids(): Promise<string[]>;
  /** Sets the creation time of a route on the service to `hours` ago. */
  ageOnService(routeId: string, hours: number): Promise<void>;
}

async function stack(face: Face, label: string, opts: { proxy?: FaultProxy } = {}): Promise<Stack> {
  const ws =
    face === "dynamic"
      ? programWorkspace(`identity-${label}`)
      : packagedWorkspace("packaged-spec-program", `identity-${label}`);
  cleanups.push(() => ws.cleanup());
  if (opts.proxy) cleanups.push(() => opts.proxy!.close());
  const s = await engine.directoryStack({ workDir: ws.dir, stackName: "test", stateDir: ws.stateDir });
  await s.setAllConfig({
    "edge:baseUrl": { value: opts.proxy?.url ?? server.url },
    "edge:requestDeadlineMs": { value: "2000" },
    spec: { value: JSON.stringify(SPEC) },
  });
  return {
    ws,
    proxy: opts.proxy,
    run: (args) => runPulumi(args, { cwd: ws.dir, stateDir: ws.stateDir }),
    setSpec: (spec) => s.setConfig("spec", { value: JSON.stringify(spec) }),
    async ids() {
      const { resources } = await stateOf({ name: "test", workspace: { workDir: ws.dir } }, ws.stateDir);
      return resources.map((r) => r.id.split("/").pop()!).sort();
    },
    async ageOnService(routeId, hours) {
      // Straight into the service's database: no API changes a creation time.
      const db = new Database(join(serviceDir, "edge.db"));
      try {
        const at = new Date(Date.now() - hours * 3_600_000).toISOString();
        expect(db.prepare("UPDATE routes SET created_at = ? WHERE id = ?").run(at, routeId).changes).toBe(1);
      } finally {
        db.close();
      }
    },
  };
}

/** Every object on the service: edges, routes, TLS edges with a restriction (as `<id>/ip`). */
async function onService(): Promise<string[]> {
  const https = (await server.client.listHttpsEdges()).https_edges;
  const tls = (await server.client.listTlsEdges()).tls_edges;
  return [
    ...https.map((e) => e.id),
    ...https.flatMap((e) => e.routes.map((r) => r.id)),
    ...tls.map((e) => e.id),
    ...tls.filter((e) => e.ip_restriction).map((e) => e.id), // the restriction's id is its edge's
  ].sort();
}

async function destroyed(...stacks: Stack[]) {
  for (const s of stacks) ok(await s.run(["destroy", "--yes", "--skip-preview"]));
  expect(await onService()).toEqual([]);
}

function ok(r: { code: number | null; output: string }) {
  if (r.code !== 0) throw new Error(`pulumi exited with ${r.code}:\n${r.output}`);
}

describe.each<Face>(["dynamic", "packaged"])("%s face", (face) => {
  test("two stacks with the same project, stack and resource names never share an object", async () => {
    const one = await stack(face, `${face}-twin-1`);
    const two = await stack(face, `${face}-twin-2`);
    ok(await one.run(["up", "--yes", "--skip-preview"]));
    ok(await two.run(["up", "--yes", "--skip-preview"]));
    const [a, b] = [await one.ids(), await two.ids()];
    expect(a).toHaveLength(4);
    expect(b).toHaveLength(4);
    expect(a.filter((id) => b.includes(id))).toEqual([]);
    expect(await onService()).toEqual([...a, ...b].sort());
    // Their creates carried different keys: the stacks' settings hold different secret salts.
    await destroyed(one, two);
  });

  test.each(["the committed settings file", "--config-file"])(
    "a stack of the same name on a second backend, sharing %s, takes none of the first's objects",
    async (how) => {
      const viaFile = how === "--config-file";
      const one = await stack(face, `${face}-backend-${viaFile ? "cfg" : "settings"}`);
      const dir = one.ws.dir;
      const settings = join(dir, "Pulumi.test.yaml");
      const configFile = join(dir, "edge-stack.yaml");
      const withConfig = viaFile ? ["--config-file", configFile] : [];
      // With --config-file the settings live elsewhere: the provider finds no salt at all.
      if (viaFile) renameSync(settings, configFile);
      const saltOf = (file: string) => /encryptionsalt: (\S+)/.exec(readFileSync(file, "utf8"))?.[1];
      const salt = saltOf(viaFile ? configFile : settings);
      expect(salt).toBeDefined();
      ok(await one.run(["up", "--yes", "--skip-preview", ...withConfig]));
      const a = await one.ids();
      expect(a).toHaveLength(4);

      // Stack B: the same checkout, project, stack name and settings, on another backend (a
      // second CI backend, a local one beside the team's). `stack init` keeps the file's salt.
      const otherState = mkdtempSync(join(tmpdir(), "edge-identity-b-"));
      cleanups.push(() => rmSync(otherState, { recursive: true, force: true }));
      const runB = (args: string[]) => runPulumi(args, { cwd: dir, stateDir: otherState });
      ok(await runB(["stack", "init", "--secrets-provider", "passphrase"]));
      if (viaFile)
        rmSync(settings, { force: true }); // init wrote one; B uses the same --config-file
      else expect(saltOf(settings)).toBe(salt);
      const upB = await runB(["up", "--yes", "--skip-preview", ...withConfig]);
      ok(upB);
      expect(upB.output).not.toMatch(/earlier create|took over/);
      const b = (await stateOf({ name: "test", workspace: { workDir: dir } }, otherState)).resources.map(
        (r) => r.id.split("/").pop()!,
      );
      expect(b).toHaveLength(4);
      expect(a.filter((id) => b.includes(id))).toEqual([]);
      expect(await onService()).toEqual([...a, ...b].sort());

      // B's destroy deletes B's objects only; A still sees no drift.
      ok(await runB(["destroy", "--yes", "--skip-preview", ...withConfig]));
      expect(await onService()).toEqual([...a].sort());
      ok(await one.run(["preview", "--refresh", "--expect-no-changes", ...withConfig]));
      // With its config file: the packaged provider configures from the current configuration.
      ok(await one.run(["destroy", "--yes", "--skip-preview", ...withConfig]));
      expect(await onService()).toEqual([]);
    },
  );

  test("an object made longer ago than the recovery window is not taken back: the create fails, naming it", async () => {
    const s = await stack(face, `${face}-window`);
    ok(await s.run(["up", "--yes", "--skip-preview"]));
    const before = await onService();
    const { resources } = await stateOf({ name: "test", workspace: { workDir: s.ws.dir } }, s.ws.stateDir);
    const route = resources.find((r) => r.kind === "route")!;
    const [edgeId, routeId] = [route.outputs.edgeId as string, route.id.split("/").pop()!];
    // The state forgets the route, as a run killed after its create would; the route is 2 days old.
    ok(await s.run(["state", "delete", route.urn, "--yes"]));
    await s.ageOnService(routeId, 48);
    const refused = await s.run(["up", "--yes", "--skip-preview"]);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(
      new RegExp(
        `route ${routeId} was made 2 days ago .*recovery window.*pulumi import edge:index:HttpsEdgeRoute <name> ${edgeId}/${routeId}`,
      ),
    );
    expect(await onService()).toEqual(before); // nothing taken, nothing made, nothing deleted
    // Within the window (a lost answer, a killed run) the same route is taken back, as before.
    await s.ageOnService(routeId, 0);
    const recovered = await s.run(["up", "--yes", "--skip-preview"]);
    ok(recovered);
    expect(recovered.output).toMatch(
      new RegExp(`route ${routeId} was made for this resource by an earlier create`),
    );
    expect(await s.ids()).toEqual(before);
    await destroyed(s);
  });

  test("destroy then up makes new objects; the forced replace of an unchanged resource keeps it", async () => {
    const s = await stack(face, `${face}-again`);
    ok(await s.run(["up", "--yes", "--skip-preview"]));
    const first = await s.ids();
    ok(await s.run(["destroy", "--yes", "--skip-preview"]));
    ok(await s.run(["up", "--yes", "--skip-preview"]));
    const second = await s.ids();
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    expect(await onService()).toEqual(second);

    // `pulumi up --replace` of the route: its create request is unchanged, so the exactly-once
    // create answers with the route itself; the old one's delete is skipped, and said so.
    const { resources } = await stateOf({ name: "test", workspace: { workDir: s.ws.dir } }, s.ws.stateDir);
    const route = resources.find((r) => r.kind === "route")!;
    const replaced = await s.run(["up", "--yes", "--skip-preview", "--replace", route.urn]);
    ok(replaced);
    expect(replaced.output).toMatch(/kept route edghtsrt_\w+: it is also the replacement of this resource/);
    expect(await s.ids()).toEqual(second);
    expect(await onService()).toEqual(second);
    ok(await s.run(["preview", "--expect-no-changes"]));

    // A replace the program asks for (an edge's description: edges have no update) is a new edge,
    // and its route moves with it (a new route on the new edge).
    await s.setSpec({ ...SPEC, edges: [{ name: "web", args: { description: "web v2" } }] });
    ok(await s.run(["up", "--yes", "--skip-preview"]));
    const third = await s.ids();
    expect(third).toHaveLength(4);
    expect(third.filter((id) => id.startsWith("edghts")).some((id) => second.includes(id))).toBe(false);
    expect(await onService()).toEqual(third);
    await destroyed(s);
  });

  test("the program changed between a failed run and its recovery", async () => {
    let lose: RegExp | undefined;
    const proxy = await faultProxy({
      target: server.url,
      seed: 1,
      rate: 0,
      // The create commits on the service, its answer is lost (every attempt of the failed run).
      intercept: ({ method, path }) => (method === "POST" && lose?.test(path) ? "reset-after" : undefined),
    });
    const s = await stack(face, `${face}-changed`, { proxy });
    const base = { ...SPEC, routes: [] };
    await s.setSpec(base);
    ok(await s.run(["up", "--yes", "--skip-preview"]));

    // A route: made by a failed run with description v1, recovered by a run that says v2.
    lose = /\/routes$/;
    await s.setSpec(SPEC);
    expect((await s.run(["up", "--yes", "--skip-preview"])).code).not.toBe(0);
    lose = undefined;
    const madeByFailedRun = await onService();
    await s.setSpec({
      ...SPEC,
      routes: [{ ...SPEC.routes[0]!, args: { ...SPEC.routes[0]!.args, description: "v2" } }],
    });
    const recovered = await s.run(["up", "--yes", "--skip-preview"]);
    ok(recovered);
    expect(recovered.output).toMatch(
      /took over route edghtsrt_\w+ \(made for this resource by an earlier run with other inputs\)/,
    );
    expect(await onService()).toEqual(madeByFailedRun); // found again: nothing new was made
    expect(await s.ids()).toEqual(madeByFailedRun);
    const web = (await server.client.listHttpsEdges()).https_edges[0]!;
    expect(web.routes.map((r) => r.description)).toEqual(["v2"]);
    ok(await s.run(["preview", "--expect-no-changes"]));

    // An edge: made by a failed run as x1, recovered by a run that says x2. Edges cannot be
    // updated: a new edge is made, and the failed run's stays on the service, unknown to the state.
    lose = /^\/edges\/https$/;
    const extra = (description: string) => ({
      ...SPEC,
      edges: [...SPEC.edges, { name: "extra", args: { description } }],
    });
    await s.setSpec(extra("x1"));
    expect((await s.run(["up", "--yes", "--skip-preview"])).code).not.toBe(0);
    lose = undefined;
    const orphan = (await server.client.listHttpsEdges()).https_edges.find((e) => e.description === "x1")!;
    await s.setSpec(extra("x2"));
    ok(await s.run(["up", "--yes", "--skip-preview"]));
    const inState = await s.ids();
    expect(inState).not.toContain(orphan.id);
    expect(await onService()).toEqual([...inState, orphan.id].sort());
    await server.client.deleteHttpsEdge(orphan.id);
    await destroyed(s);
  });
});
