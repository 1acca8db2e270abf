/**
 * Which stack is this? The identity of creates (provider/identity) through the real engine, both
 * faces, against one service: one row of the README's table per test.
 *
 * | case | must |
 * |---|---|
 * | `main: src/`, two checkouts, relative `backend.url`, one settings file | B makes its own objects; B's destroy leaves A's |
 * | two `pulumi login`s under two `PULUMI_CREDENTIALS_PATH` | the same |
 * | two backends (PULUMI_BACKEND_URL) sharing the settings file, or `--config-file` | the same |
 * | lost create, retry under another host name, same backend | recovered, nothing twice |
 * | lost create, retry with the backend spelled differently | recovered |
 * | the repository's main job: `npm run up`, a lost create, `pulumi up` from the root | recovered |
 * | `stack rm --force` then `stack init` of the same name | new objects, the orphans left; never "answer was lost" |
 * | an object found by a derived identity, older than the recovery window | refused, naming `pulumi import` |
 *
 * A "first update killed in fast mode" is made here as the kill leaves it, without the kill: a
 * fast-mode `up`, then a state emptied of its resources (`stack export`/`stack import`). The kills
 * themselves are tests/reliability/exactly-once's.
 */
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join, relative } from "node:path";
import Database from "libsql";
import { type RecordingServer, recordingServer } from "../engine/support/harness";
import { WORK_ROOT } from "../support/workspace";
import { PLUGIN_DIR } from "../packaged/support/plugin";
import { engine, ensureBuilt, faultProxy, killChildren, ROOT, runPulumi, stateOf } from "./support";

jest.setTimeout(420_000);

type Face = "dynamic" | "packaged";
const SPEC = {
  edges: ["web"],
  routes: [
    { name: "api", edge: "web", args: { matchType: "path_prefix", match: "/api", description: "v1" } },
  ],
  tlsEdges: ["tcp"],
  tls: [{ name: "allow", edge: "tcp", args: { ipPolicyIds: ["ipp_1"] } }],
};
const FAST = { PULUMI_SKIP_CHECKPOINTS: "true" };
const FIXTURES: Record<Face, string> = {
  dynamic: join(__dirname, "fixtures", "program"),
  packaged: join(__dirname, "..", "packaged", "fixtures", "packaged-spec-program"),
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
  rmSync(serviceDir, { recursive: true, force: true });
});

/** After each test, pass or fail: its proxies closed, its checkouts removed, the service emptied. */
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
  for (const e of (await server.client.listHttpsEdges()).https_edges)
    await server.client.deleteHttpsEdge(e.id);
  for (const e of (await server.client.listTlsEdges()).tls_edges) await server.client.deleteTlsEdge(e.id);
});

type Result = { code: number | null; output: string };

interface Checkout {
  /** The project's root: where `pulumi` runs, where Pulumi.yaml and the settings file are. */
  root: string;
  /** Its file backend. */
  stateDir: string;
  /** `pulumi <args>` in the root, with the checkout's environment and `env` over it. */
  run(
    args: string[],
    opts?: { env?: Record<string, string>; hostname?: string; stackName?: string },
  ): Promise<Result>;
  /** The ids the stack's state holds (a route's last segment). */
  ids(): Promise<string[]>;
  setSpec(spec: unknown): Promise<void>;
}

interface CheckoutOptions {
  /** The program in `src/`, Pulumi.yaml saying `main: src/`. */
  main?: boolean;
  /** Pulumi.yaml's `backend.url` (the CLI then runs without PULUMI_BACKEND_URL). */
  backendUrl?: string;
  /** The environment of every command (over the engine's). */
  env?: Record<string, string>;
  /** The service URL the stack's config names (default: the service). */
  baseUrl?: string;
  /** A settings file to start from (a committed `Pulumi.test.yaml`): `stack init` keeps its salt. */
  settingsFrom?: Checkout;
}

/** A project checkout of a face's program with a stack `test`, its config set. */
async function checkout(face: Face, label: string, opts: CheckoutOptions = {}): Promise<Checkout> {
  mkdirSync(WORK_ROOT, { recursive: true });
  const base = mkdtempSync(join(WORK_ROOT, `identity-${label}-`));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const root = join(base, "project");
  const program = opts.main ? join(root, "src") : root;
  cpSync(FIXTURES[face], program, { recursive: true });
  let project = readFileSync(join(program, "Pulumi.yaml"), "utf8").replace(
    /^(\s*path:\s*).*$/m,
    `$1${PLUGIN_DIR}`,
  );
  if (opts.main) {
    rmSync(join(program, "Pulumi.yaml"));
    project += "main: src/\n";
  }
  if (opts.backendUrl) project += `backend:\n  url: ${opts.backendUrl}\n`;
  writeFileSync(join(root, "Pulumi.yaml"), project);
  if (opts.settingsFrom)
    cpSync(join(opts.settingsFrom.root, "Pulumi.test.yaml"), join(root, "Pulumi.test.yaml"));

  // The backend the CLI resolves: the project's (relative to the root, where pulumi runs), else ours.
  const stateDir = opts.backendUrl?.startsWith("file://./")
    ? join(root, opts.backendUrl.slice("file://./".length))
    : join(base, "state");
  mkdirSync(stateDir, { recursive: true });
  const env = { ...(opts.backendUrl ? { PULUMI_BACKEND_URL: "" } : {}), ...opts.env };
  const run = (
    args: string[],
    o: { env?: Record<string, string>; hostname?: string; stackName?: string } = {},
  ) =>
    runPulumi(args, {
      cwd: root,
      stateDir,
      env: { ...env, ...o.env },
      hostname: o.hostname,
      stackName: o.stackName,
    });
  const must = async (args: string[]) => void ok(await run(args));
  await must(["stack", "init", "--secrets-provider", "passphrase"]);
  await must(["config", "set", "edge:baseUrl", opts.baseUrl ?? server.url]);
  await must(["config", "set", "edge:requestDeadlineMs", "2000"]);
  await must(["config", "set", "spec", JSON.stringify(SPEC)]);
  return {
    root,
    stateDir,
    run,
    async ids() {
      const { resources } = await stateOf({ name: "test", workspace: { workDir: root } }, stateDir);
      return resources.map((r) => r.id.split("/").pop()!).sort();
    },
    setSpec: async (spec) => void (await must(["config", "set", "spec", JSON.stringify(spec)])),
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

function ok(r: Result): Result {
  if (r.code !== 0) throw new Error(`pulumi exited with ${r.code}:\n${r.output}`);
  return r;
}

const up = ["up", "--yes", "--skip-preview"];
const destroy = ["destroy", "--yes", "--skip-preview"];
const PROVEN = /was made for this resource by an earlier create whose answer was lost/;
const DERIVED =
  /was made for this resource by an earlier create that this stack's state does not record, found by the identity derived/;
const TAKEN = /earlier create|took over/;

/**
 * The state as a first update killed in fast mode leaves it: no resources (what the engine had
 * not written), the objects on the service.
 */
async function forgetEverything(c: Checkout, env: Record<string, string> = {}) {
  const file = join(c.stateDir, "..", "export.json");
  ok(await c.run(["stack", "export", "--file", file], { env }));
  const exported = JSON.parse(readFileSync(file, "utf8"));
  exported.deployment.resources = [];
  writeFileSync(file, JSON.stringify(exported));
  ok(await c.run(["stack", "import", "--file", file], { env }));
}

/** Sets the creation time of a route on the service to `hours` ago (no API changes it). */
function ageOnService(routeId: string, hours: number) {
  const db = new Database(join(serviceDir, "edge.db"));
  try {
    const at = new Date(Date.now() - hours * 3_600_000).toISOString();
    expect(db.prepare("UPDATE routes SET created_at = ? WHERE id = ?").run(at, routeId).changes).toBe(1);
  } finally {
    db.close();
  }
}

/** A proxy in front of the service that loses the answers of creates whose path `lose` matches. */
async function losingProxy() {
  const state = { lose: undefined as RegExp | undefined };
  const proxy = await faultProxy({
    target: server.url,
    seed: 1,
    rate: 0,
    // The create commits on the service, its answer is lost (every attempt of the failed run).
    intercept: ({ method, path }) =>
      method === "POST" && state.lose?.test(path) ? "reset-after" : undefined,
  });
  cleanups.push(() => proxy.close());
  return { url: proxy.url, state };
}

/** Runs `up` with the route's create answer lost: the run fails, the route exists on the service. */
async function loseRouteCreate(c: Checkout, lose: { lose: RegExp | undefined }) {
  lose.lose = /\/routes$/;
  expect((await c.run(up)).code).not.toBe(0);
  lose.lose = undefined;
}

describe.each<Face>(["dynamic", "packaged"])("%s face", (face) => {
  test("`main: src/`, two checkouts, a relative backend.url, one settings file: B makes its own objects", async () => {
    // Both first updates in fast mode: their creates carry the identity derived from the backend
    // each CLI resolves (./.pulumi-state of each checkout), which must differ.
    const opts = { main: true, backendUrl: "file://./.pulumi-state", env: FAST };
    const a = await checkout(face, `${face}-main-a`, opts);
    const b = await checkout(face, `${face}-main-b`, { ...opts, settingsFrom: a });
    expect(readFileSync(join(b.root, "Pulumi.test.yaml"), "utf8")).toMatch(/encryptionsalt/);
    ok(await a.run(up));
    const upB = ok(await b.run(up));
    expect(upB.output).not.toMatch(TAKEN);
    const [idsA, idsB] = [await a.ids(), await b.ids()];
    expect(idsA).toHaveLength(4);
    expect(idsB.filter((id) => idsA.includes(id))).toEqual([]);
    ok(await b.run(destroy));
    expect(await onService()).toEqual(idsA);
    ok(await a.run(["preview", "--refresh", "--expect-no-changes"]));
    ok(await a.run(destroy));
    expect(await onService()).toEqual([]);
  });

  test("two `pulumi login`s under two PULUMI_CREDENTIALS_PATH: B makes its own objects", async () => {
    const a = await checkout(face, `${face}-login`, { env: FAST });
    // One checkout, one settings file; each login is a credentials folder naming its backend.
    const login = async (name: string) => {
      const creds = join(a.root, "..", `creds-${name}`);
      const state = join(a.root, "..", `state-${name}`);
      mkdirSync(state);
      const env = { PULUMI_BACKEND_URL: "", PULUMI_CREDENTIALS_PATH: creds };
      ok(await a.run(["login", `file://${state}`], { env, stackName: "" }));
      return { env, state };
    };
    const [one, two] = [await login("one"), await login("two")];
    // A's stack moves to its login (the same settings file: the salt stays).
    ok(await a.run(["stack", "init", "--secrets-provider", "passphrase"], { env: one.env }));
    ok(await a.run(["stack", "init", "--secrets-provider", "passphrase"], { env: two.env }));
    ok(await a.run(up, { env: one.env }));
    const upB = ok(await a.run(up, { env: two.env }));
    expect(upB.output).not.toMatch(TAKEN);
    const idsOf = async (l: typeof one) =>
      (await stateOf({ name: "test", workspace: { workDir: a.root } }, l.state)).resources
        .map((r) => r.id.split("/").pop()!)
        .sort();
    const [idsA, idsB] = [await idsOf(one), await idsOf(two)];
    expect(idsA).toHaveLength(4);
    expect(idsB).toHaveLength(4);
    expect(idsB.filter((id) => idsA.includes(id))).toEqual([]);
    ok(await a.run(destroy, { env: two.env }));
    expect(await onService()).toEqual(idsA);
    ok(await a.run(destroy, { env: one.env }));
  });

  test.each(["the committed settings file", "--config-file"])(
    "two backends sharing %s: B takes none of A's objects, in either mode",
    async (how) => {
      const viaFile = how === "--config-file";
      const a = await checkout(face, `${face}-backend-${viaFile ? "cfg" : "settings"}`);
      const settings = join(a.root, "Pulumi.test.yaml");
      const configFile = join(a.root, "edge-stack.yaml");
      const withConfig = viaFile ? ["--config-file", configFile] : [];
      if (viaFile) renameSync(settings, configFile); // the provider then finds no salt at all
      for (const env of [{}, FAST]) {
        ok(await a.run([...up, ...withConfig], { env }));
        const idsA = await a.ids();
        expect(idsA).toHaveLength(4);
        // Stack B: the same checkout, project, stack name and settings, on another backend.
        const otherState = mkdtempSync(join(tmpdir(), "edge-identity-b-"));
        cleanups.push(() => rmSync(otherState, { recursive: true, force: true }));
        const runB = (args: string[]) => runPulumi(args, { cwd: a.root, stateDir: otherState, env });
        ok(await runB(["stack", "init", "--secrets-provider", "passphrase"]));
        if (viaFile) rmSync(settings, { force: true }); // init wrote one; B uses --config-file
        const upB = ok(await runB([...up, ...withConfig]));
        expect(upB.output).not.toMatch(TAKEN);
        const idsB = (
          await stateOf({ name: "test", workspace: { workDir: a.root } }, otherState)
        ).resources.map((r) => r.id.split("/").pop()!);
        expect(idsB).toHaveLength(4);
        expect(idsB.filter((id) => idsA.includes(id))).toEqual([]);
        ok(await runB([...destroy, ...withConfig]));
        expect(await onService()).toEqual(idsA);
        ok(await a.run(["preview", "--refresh", "--expect-no-changes", ...withConfig]));
        ok(await a.run([...destroy, ...withConfig], { env }));
        expect(await onService()).toEqual([]);
      }
    },
  );

  test("a lost create, retried under another host name on the same backend: recovered, nothing twice", async () => {
    const proxy = await losingProxy();
    const c = await checkout(face, `${face}-host`, { baseUrl: proxy.url });
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up, { hostname: "ci-run-1" }));
    await c.setSpec(SPEC);
    await loseRouteCreate(c, proxy.state);
    const made = await onService();
    const retry = ok(await c.run(up, { hostname: "ci-run-2" }));
    expect(retry.output).toMatch(PROVEN);
    expect(await onService()).toEqual(made);
    expect(await c.ids()).toEqual(made);
    ok(await c.run(destroy, { hostname: "ci-run-3" }));
    expect(await onService()).toEqual([]);
  });

  test("a lost create, retried with the backend spelled differently: recovered", async () => {
    const c = await checkout(face, `${face}-spelling`);
    const link = join(c.root, "..", "state-link");
    symlinkSync(c.stateDir, link);
    // `~` is the account's home: a link there to the state.
    const home = mkdtempSync(join(userInfo().homedir, ".edge-identity-"));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    symlinkSync(c.stateDir, join(home, "state"));
    const spellings = [
      `file://${c.stateDir}/`,
      `file://${link}`,
      `file://./${relative(c.root, c.stateDir)}`,
      `file://~/${relative(userInfo().homedir, join(home, "state"))}`,
    ];
    const retries = spellings.map((url) => ({ PULUMI_BACKEND_URL: url }));

    // Anchored (the state holds the stack's anchor): a route forgotten by the state, as a lost
    // answer leaves it, found again under every spelling.
    ok(await c.run(up));
    const all = await onService();
    const route = (
      await stateOf({ name: "test", workspace: { workDir: c.root } }, c.stateDir)
    ).resources.find((r) => r.kind === "route")!;
    for (const env of retries) {
      ok(await c.run(["state", "delete", route.urn, "--yes"], { env }));
      expect(ok(await c.run(up, { env })).output).toMatch(PROVEN);
      expect(await onService()).toEqual(all);
    }
    ok(await c.run(destroy));

    // Derived (a first update killed in fast mode: no anchor yet): the same identity is derived
    // from every spelling, so the retry finds every object (and re-keys them to its anchor: each
    // spelling starts from a fast first update of its own).
    for (const env of retries) {
      ok(await c.run(up, { env: FAST }));
      const fast = await onService();
      await forgetEverything(c, env);
      const retry = ok(await c.run(up, { env }));
      expect(retry.output).toMatch(DERIVED);
      expect(await onService()).toEqual(fast);
      expect(await c.ids()).toEqual(fast);
      ok(await c.run(destroy));
    }
    expect(await onService()).toEqual([]);
  });

  test("`stack rm --force`, then `stack init` of the same name: new objects, the orphans left alone", async () => {
    const c = await checkout(face, `${face}-rm`);
    ok(await c.run(up));
    const orphans = await onService();
    ok(await c.run(["stack", "rm", "--force", "--preserve-config", "--yes"]));
    ok(await c.run(["stack", "init", "--secrets-provider", "passphrase"]));
    const again = ok(await c.run(up));
    expect(again.output).not.toMatch(TAKEN);
    const ids = await c.ids();
    expect(ids).toHaveLength(4);
    expect(ids.filter((id) => orphans.includes(id))).toEqual([]);
    ok(await c.run(destroy));
    expect(await onService()).toEqual(orphans);
    for (const id of new Set(orphans.filter((i) => /^edg(hts|tls)_/.test(i)))) {
      await (id.startsWith("edghts_") ? server.client.deleteHttpsEdge(id) : server.client.deleteTlsEdge(id));
    }

    // The old stack's first update ran in fast mode: its objects carry the derived identity, which
    // the new stack's first update derives too (same machine, backend, settings): taken, within
    // the recovery window, and said how (never "answer was lost").
    ok(await c.run(up, { env: FAST }));
    const fastOrphans = await onService();
    ok(await c.run(["stack", "rm", "--force", "--preserve-config", "--yes"]));
    ok(await c.run(["stack", "init", "--secrets-provider", "passphrase"]));
    const taken = ok(await c.run(up));
    expect(taken.output).toMatch(DERIVED);
    expect(taken.output).not.toMatch(/answer was lost/);
    expect(await c.ids()).toEqual(fastOrphans);
    ok(await c.run(destroy));
  });

  test("found by a derived identity and older than the recovery window: refused, naming `pulumi import`", async () => {
    const c = await checkout(face, `${face}-window`);
    // Found by the anchored identity (proof), a route is taken back however old.
    ok(await c.run(up));
    const before = await onService();
    const routeOf = async () =>
      (await stateOf({ name: "test", workspace: { workDir: c.root } }, c.stateDir)).resources.find(
        (r) => r.kind === "route",
      )!;
    let route = await routeOf();
    ok(await c.run(["state", "delete", route.urn, "--yes"]));
    ageOnService(route.id.split("/").pop()!, 24 * 30);
    expect(ok(await c.run(up)).output).toMatch(PROVEN);
    expect(await c.ids()).toEqual(before);
    ok(await c.run(destroy));

    // Found by the derived identity (a first update killed in fast mode), a route made longer ago
    // than the window is not taken: the create fails, naming it and how to take it on purpose.
    ok(await c.run(up, { env: FAST }));
    const fast = await onService();
    route = await routeOf();
    const [edgeId, routeId] = [route.outputs.edgeId as string, route.id.split("/").pop()!];
    await forgetEverything(c);
    ageOnService(routeId, 48);
    const refused = await c.run(up);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(
      new RegExp(
        `route ${routeId} was made 2 days ago .*recovery window.*pulumi import edge:index:HttpsEdgeRoute <name> ${edgeId}/${routeId}`,
      ),
    );
    expect(await onService()).toEqual(fast); // nothing made, nothing deleted
    expect(await c.ids()).not.toContain(routeId);
  });

  test("destroy then up makes new objects; the forced replace of an unchanged resource keeps it", async () => {
    const c = await checkout(face, `${face}-again`);
    ok(await c.run(up));
    const first = await c.ids();
    ok(await c.run(destroy));
    ok(await c.run(up));
    const second = await c.ids();
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    expect(await onService()).toEqual(second);

    // `pulumi up --replace` of the route: its create request is unchanged, so the exactly-once
    // create answers with the route itself; the old one's delete is skipped, and said so.
    const { resources } = await stateOf({ name: "test", workspace: { workDir: c.root } }, c.stateDir);
    const route = resources.find((r) => r.kind === "route")!;
    const replaced = ok(await c.run([...up, "--replace", route.urn]));
    expect(replaced.output).toMatch(/kept route edghtsrt_\w+: it is also the replacement of this resource/);
    expect(await c.ids()).toEqual(second);
    expect(await onService()).toEqual(second);
    ok(await c.run(["preview", "--expect-no-changes"]));

    // A replace the program asks for (an edge's description: edges have no update) is a new edge,
    // and its route moves with it (a new route on the new edge).
    await c.setSpec({ ...SPEC, edges: [{ name: "web", args: { description: "web v2" } }] });
    ok(await c.run(up));
    const third = await c.ids();
    expect(third).toHaveLength(4);
    expect(third.filter((id) => id.startsWith("edghts")).some((id) => second.includes(id))).toBe(false);
    expect(await onService()).toEqual(third);
    ok(await c.run(destroy));
  });

  test("the program changed between a failed run and its recovery", async () => {
    const proxy = await losingProxy();
    const c = await checkout(face, `${face}-changed`, { baseUrl: proxy.url });
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up));

    // A route: made by a failed run with description v1, recovered by a run that says v2.
    await c.setSpec(SPEC);
    await loseRouteCreate(c, proxy.state);
    const madeByFailedRun = await onService();
    await c.setSpec({
      ...SPEC,
      routes: [{ ...SPEC.routes[0]!, args: { ...SPEC.routes[0]!.args, description: "v2" } }],
    });
    const recovered = ok(await c.run(up));
    expect(recovered.output).toMatch(
      /took over route edghtsrt_\w+ \(made for this resource by an earlier run with other inputs, found by this stack's own identity\)/,
    );
    expect(await onService()).toEqual(madeByFailedRun); // found again: nothing new was made
    expect(await c.ids()).toEqual(madeByFailedRun);
    const web = (await server.client.listHttpsEdges()).https_edges[0]!;
    expect(web.routes.map((r) => r.description)).toEqual(["v2"]);
    ok(await c.run(["preview", "--expect-no-changes"]));

    // An edge: made by a failed run as x1, recovered by a run that says x2. Edges cannot be
    // updated: a new edge is made, and the failed run's stays on the service, unknown to the state.
    proxy.state.lose = /^\/edges\/https$/;
    const extra = (description: string) => ({
      ...SPEC,
      edges: [...SPEC.edges, { name: "extra", args: { description } }],
    });
    await c.setSpec(extra("x1"));
    expect((await c.run(up)).code).not.toBe(0);
    proxy.state.lose = undefined;
    const orphan = (await server.client.listHttpsEdges()).https_edges.find((e) => e.description === "x1")!;
    await c.setSpec(extra("x2"));
    ok(await c.run(up));
    const inState = await c.ids();
    expect(inState).not.toContain(orphan.id);
    expect(await onService()).toEqual([...inState, orphan.id].sort());
    await server.client.deleteHttpsEdge(orphan.id);
    ok(await c.run(destroy));
  });
});

describe("the repository's main job", () => {
  test("`npm run up`, a lost create, then `pulumi up` from the project's root: recovered", async () => {
    // A copy of the root project (Pulumi.yaml with `main: examples/main-stack/` and a relative
    // backend.url), so that the developer's own stack is untouched; the embedded service.
    mkdirSync(WORK_ROOT, { recursive: true });
    const root = mkdtempSync(join(WORK_ROOT, "identity-main-job-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    cpSync(join(ROOT, "Pulumi.yaml"), join(root, "Pulumi.yaml"));
    cpSync(join(ROOT, "examples", "main-stack"), join(root, "examples", "main-stack"), {
      recursive: true,
      filter: (src) => !/[/\\](\.edge-service|node_modules)$/.test(src),
    });
    const stateDir = join(root, ".pulumi-state");
    mkdirSync(stateDir);
    // `npm run up` is scripts/stack.mjs: the Automation API, PULUMI_BACKEND_URL set to the state.
    const npmRunUp = async (env: Record<string, string> = {}) => {
      const stack = await engine.directoryStack({ workDir: root, stackName: "dev", stateDir, env });
      await stack.up({ color: "never" });
    };
    // A plain `pulumi up` in the root: the project's backend.url, relative to where it runs.
    const plain = (args: string[], env: Record<string, string> = {}) =>
      runPulumi(args, { cwd: root, stateDir, stackName: "dev", env: { PULUMI_BACKEND_URL: "", ...env } });
    const resources = async () =>
      (await stateOf({ name: "dev", workspace: { workDir: root } }, stateDir)).resources;

    await npmRunUp();
    const all = (await resources()).map((r) => r.id).sort();
    const route = (await resources()).find((r) => r.kind === "route")!;
    ok(await plain(["state", "delete", route.urn, "--yes"]));
    expect(ok(await plain(up)).output).toMatch(PROVEN);
    expect((await resources()).map((r) => r.id).sort()).toEqual(all);
    ok(await plain(destroy));

    // The same with the first update in fast mode, killed (no anchor yet): the identity the
    // Automation API's run derived is derived again by the plain CLI in the root.
    await npmRunUp(FAST);
    const fast = (await resources()).map((r) => r.id).sort();
    const file = join(root, "export.json");
    ok(await plain(["stack", "export", "--file", file]));
    const exported = JSON.parse(readFileSync(file, "utf8"));
    exported.deployment.resources = [];
    writeFileSync(file, JSON.stringify(exported));
    ok(await plain(["stack", "import", "--file", file]));
    expect(ok(await plain(up)).output).toMatch(DERIVED);
    expect((await resources()).map((r) => r.id).sort()).toEqual(fast);
    ok(await plain(destroy));
  });
});
