/**
 * Which stack is this? The identity of creates (provider/identity) through the real engine, both
 * faces, against one service: one row of the README's table per test.
 *
 * | case | must |
 * |---|---|
 * | `main: src/`, two checkouts, relative `backend.url`, one settings file | B makes its own objects; B's destroy leaves A's |
 * | two `pulumi login`s under two `PULUMI_CREDENTIALS_PATH` (dynamic face) | the same |
 * | two backends (PULUMI_BACKEND_URL) sharing the settings file, or `--config-file` (dynamic face) | the same |
 * | a copy of the state on another backend (`stack export`/`stack import`), both kept | the copy takes a new anchor, said once; it makes its own objects or fails clearly; the original untouched |
 * | lost create, retry under another host name, same backend | recovered, nothing twice |
 * | lost create, retry with the backend spelled differently | recovered |
 * | a first update in fast mode | refused before anything is made, naming the fix; later fast updates run |
 * | objects this resource's identity did not make (a create 0.2.0 lost) | each run fails, naming each object and `pulumi import`; nothing changes |
 * | `--target` on a stack's first update | the dynamic face's error names the anchor; with it targeted too, it works |
 * | an anchor edited in the state | replaced, with a warning; creates carry the new one |
 * | a lost create retried after its resource moved to another provider resource (packaged) | fails clearly, nothing twice |
 * | an inline Automation API program | its place found from the workspace; a lost create recovered |
 * | the repository's main job: `npm run up`, a lost create, `pulumi up` from the root | recovered |
 * | `stack rm --force` then `stack init` of the same name | new objects, the orphans left |
 */
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join, relative } from "node:path";
import { WORK_ROOT } from "../support/workspace";
import { engine, ROOT, runPulumi, stateOf } from "./support";
import {
  checkout,
  cleanups,
  destroy,
  editState,
  FAST,
  type Face,
  FOUND_AGAIN,
  loseRouteCreate,
  losingProxy,
  NEW_ANCHOR,
  ok,
  onService,
  server,
  SPEC,
  TAKEN,
  up,
  useIdentityBench,
} from "./identity-bench";

jest.setTimeout(420_000);

useIdentityBench();

describe.each<Face>(["dynamic", "packaged"])("%s face", (face) => {
  test("`main: src/`, two checkouts, a relative backend.url, one settings file: B makes its own objects", async () => {
    const opts = { main: true, backendUrl: "file://./.pulumi-state" };
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

  // Where the state lives is resolved once, in the brain, from the environment each face's
  // process gets alike: these two cases (logins, shared settings) run on the dynamic face alone.
  // The checkout-relative case above runs on both: each face's process has its own directory.
  if (face === "dynamic") {
    test("two `pulumi login`s under two PULUMI_CREDENTIALS_PATH: B makes its own objects", async () => {
      const a = await checkout(face, `${face}-login`);
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
      "two backends sharing %s: B takes none of A's objects",
      async (how) => {
        const viaFile = how === "--config-file";
        const a = await checkout(face, `${face}-backend-${viaFile ? "cfg" : "settings"}`);
        const settings = join(a.root, "Pulumi.test.yaml");
        const configFile = join(a.root, "edge-stack.yaml");
        const withConfig = viaFile ? ["--config-file", configFile] : [];
        if (viaFile) renameSync(settings, configFile);
        ok(await a.run([...up, ...withConfig]));
        const idsA = await a.ids();
        expect(idsA).toHaveLength(4);
        // Stack B: the same checkout, project, stack name and settings, on another backend.
        const otherState = mkdtempSync(join(tmpdir(), "edge-identity-b-"));
        cleanups.push(() => rmSync(otherState, { recursive: true, force: true }));
        const runB = (args: string[]) => runPulumi(args, { cwd: a.root, stateDir: otherState });
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
        ok(await a.run([...destroy, ...withConfig]));
        expect(await onService()).toEqual([]);
      },
    );
  }

  test("a copy of the state on another backend, both kept: the copy's new objects are its own", async () => {
    const a = await checkout(face, `${face}-copy`);
    ok(await a.run(up));
    const before = await onService();
    // The copy: `stack export`, then `stack init` + `stack import` on another backend (a migration
    // being tried out, a staging copy), in the same checkout (the same settings file).
    const copyState = mkdtempSync(join(tmpdir(), "edge-identity-copy-"));
    cleanups.push(() => rmSync(copyState, { recursive: true, force: true }));
    const file = join(a.stateDir, "..", "copy.json");
    ok(await a.run(["stack", "export", "--file", file]));
    const runCopy = (args: string[]) => runPulumi(args, { cwd: a.root, stateDir: copyState });
    ok(await runCopy(["stack", "init", "--secrets-provider", "passphrase"]));
    ok(await runCopy(["stack", "import", "--file", file]));

    // A resource is added to the program; the original makes it first.
    const extra = {
      ...SPEC,
      edges: [...SPEC.edges, "extra"],
      routes: [
        ...SPEC.routes,
        { name: "extra-api", edge: "extra", args: { matchType: "exact_path", match: "/x" } },
      ],
    };
    await a.setSpec(extra);
    ok(await a.run(up));
    const original = await a.ids();
    // The copy tells it is not the original, once, and makes its own objects.
    const copied = ok(await runCopy(up));
    expect(copied.output).toMatch(NEW_ANCHOR);
    expect(copied.output.match(NEW_ANCHOR)).toHaveLength(1);
    expect(copied.output).not.toMatch(TAKEN);
    const copyIds = (await stateOf({ name: "test", workspace: { workDir: a.root } }, copyState)).resources
      .map((r) => r.id.split("/").pop()!)
      .sort();
    const newInOriginal = original.filter((id) => !before.includes(id));
    const newInCopy = copyIds.filter((id) => !before.includes(id));
    expect(newInOriginal).toHaveLength(2);
    expect(newInCopy).toHaveLength(2);
    expect(newInCopy.filter((id) => newInOriginal.includes(id))).toEqual([]);
    // From then on the copy keeps its anchor: no change to preview, no word of it.
    const again = ok(await runCopy(["preview", "--refresh", "--expect-no-changes"]));
    expect(again.output).not.toMatch(NEW_ANCHOR);

    // A route added to an edge both states hold: the original makes it, the copy fails clearly
    // (the edge's routes are one edge's, whoever holds it), changing nothing.
    const shared = {
      ...extra,
      routes: [
        ...extra.routes,
        { name: "web-v2", edge: "web", args: { matchType: "exact_path", match: "/v2" } },
      ],
    };
    await a.setSpec(shared);
    ok(await a.run(up));
    const withShared = await onService();
    const refused = await runCopy(up);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(
      /already has a route with matchType "exact_path" and match "\/v2" \(edghtsrt_\w+\): this resource's identity did not make it.*pulumi import edge:index:HttpsEdgeRoute web-v2 edghts_\w+\/edghtsrt_\w+/s,
    );
    expect(await onService()).toEqual(withShared);
    // The original is untouched: it previews no change.
    ok(await a.run(["preview", "--refresh", "--expect-no-changes"]));
    expect((await a.ids()).sort()).toEqual(withShared.filter((id) => !newInCopy.includes(id)));
    // Each destroys what it holds; what both hold goes with the first.
    ok(await runCopy(destroy));
    ok(await a.run(["refresh", "--yes", "--skip-preview"]));
    ok(await a.run(destroy));
    expect(await onService()).toEqual([]);
  });

  test("a lost create, retried under another host name on the same backend: recovered, nothing twice", async () => {
    const proxy = await losingProxy();
    const c = await checkout(face, `${face}-host`, { baseUrl: proxy.url });
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up, { hostname: "ci-run-1" }));
    await c.setSpec(SPEC);
    await loseRouteCreate(c, proxy.state);
    const made = await onService();
    const retry = ok(await c.run(up, { hostname: "ci-run-2" }));
    expect(retry.output).toMatch(FOUND_AGAIN);
    expect(retry.output).not.toMatch(NEW_ANCHOR);
    expect(await onService()).toEqual(made);
    expect(await c.ids()).toEqual(made);
    ok(await c.run(destroy, { hostname: "ci-run-3" }));
    expect(await onService()).toEqual([]);
  });

  test("a lost create, retried with the backend spelled differently: recovered, the anchor kept", async () => {
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
    ok(await c.run(up));
    const all = await onService();
    const route = (
      await stateOf({ name: "test", workspace: { workDir: c.root } }, c.stateDir)
    ).resources.find((r) => r.kind === "route")!;
    // A route forgotten by the state, as a lost answer leaves it, found again under every spelling.
    for (const url of spellings) {
      const env = { PULUMI_BACKEND_URL: url };
      ok(await c.run(["state", "delete", route.urn, "--yes"], { env }));
      const retry = ok(await c.run(up, { env }));
      expect(retry.output).toMatch(FOUND_AGAIN);
      expect(retry.output).not.toMatch(NEW_ANCHOR);
      expect(await onService()).toEqual(all);
    }
    ok(await c.run(destroy));
  });

  test("a first update in fast mode is refused before anything is made; later ones run", async () => {
    const c = await checkout(face, `${face}-fast`);
    const refused = await c.run(up, { env: FAST });
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(
      /PULUMI_SKIP_CHECKPOINTS is set: the engine would save the anchor only at the end of the run.*Nothing was created\. Run this one update with checkpoints/s,
    );
    expect(await onService()).toEqual([]);
    // The fix the message names, then fast mode for the updates after it.
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up));
    await c.setSpec(SPEC);
    ok(await c.run(up, { env: FAST }));
    expect(await c.ids()).toEqual(await onService());
    expect(await c.ids()).toHaveLength(4);
    ok(await c.run(destroy, { env: FAST }));
    expect(await onService()).toEqual([]);
  });

  test("objects this resource's identity did not make: every run fails naming them; nothing changes", async () => {
    // As a create pulumi-edge 0.2.0 lost leaves them, made by a key that is not this stack's: a
    // route on the stack's edge, the TLS edge's IP restriction, an edge holding the hostport.
    const c = await checkout(face, `${face}-foreign`);
    await c.setSpec({ ...SPEC, routes: [], tls: [] });
    ok(await c.run(up));
    const { resources } = await stateOf({ name: "test", workspace: { workDir: c.root } }, c.stateDir);
    const web = resources.find((r) => r.kind === "httpsEdge")!.id;
    const tcp = resources.find((r) => r.kind === "tlsEdge")!.id;
    const lost = { identity: "pulumi-edge 0.2.0, another machine" };
    const route = await server.client.createRoute(web, { match_type: "path_prefix", match: "/api" }, lost);
    await server.client.putTlsIpRestriction(tcp, { ip_policy_ids: ["ipp_9"] }, { ...lost, keyedOn: {} });
    const other = await server.client.createHttpsEdge({ hostports: ["shop.example.com:443"] }, lost);
    const before = await onService();
    await c.setSpec({
      ...SPEC,
      edges: [...SPEC.edges, { name: "shop", args: { hostports: ["Shop.example.com:443"] } }],
    });
    for (let run = 1; run <= 3; run++) {
      // Every create tried (they are independent), so that each names its object.
      const refused = await c.run([...up, "--continue-on-error"]);
      expect(refused.code).not.toBe(0);
      for (const said of [
        `already has a route with matchType "path_prefix" and match "/api" (${route.id}): this resource's identity did not make it`,
        `pulumi import edge:index:HttpsEdgeRoute api ${web}/${route.id}`,
        `TLS edge ${tcp} already has an IP restriction module (policies: ipp_9)`,
        `pulumi import edge:index:TlsEdgeIpRestriction allow ${tcp}`,
        `HTTPS edge ${other.id} already serves shop.example.com:443`,
        `pulumi import edge:index:HttpsEdge shop ${other.id}`,
      ]) {
        expect(refused.output).toContain(said);
      }
      expect(await onService()).toEqual(before);
      expect(refused.output).not.toMatch(TAKEN);
    }
    await server.client.deleteHttpsEdge(other.id);
    await c.setSpec({ ...SPEC, routes: [], tls: [] });
    ok(await c.run(destroy));
  });

  test("`--target` on a stack's first update", async () => {
    const c = await checkout(face, `${face}-target`);
    const project = /^name:\s*(\S+)/m.exec(readFileSync(join(c.root, "Pulumi.yaml"), "utf8"))![1]!;
    const target = (type: string, name: string) => [
      "--target",
      `urn:pulumi:test::${project}::${type}::${name}`,
    ];
    const edgeType = face === "dynamic" ? "pulumi-nodejs:dynamic/edge:HttpsEdge" : "edge:index:HttpsEdge";
    const anchor = "pulumi-nodejs:dynamic/edge:StackAnchor";
    if (face === "dynamic") {
      // Every resource takes the stack's anchor: the engine's error names it; targeted too, it works.
      const first = await c.run([...up, ...target(edgeType, "web")]);
      expect(first.code).not.toBe(0);
      expect(first.output).toContain(`${anchor}::pulumi-edge`);
      expect(await onService()).toEqual([]);
      ok(await c.run([...up, ...target(edgeType, "web"), ...target(anchor, "pulumi-edge")]));
    } else {
      // The provider resource, which holds the anchor, comes with its resources by itself.
      ok(await c.run([...up, ...target(edgeType, "web")]));
    }
    expect(await c.ids()).toHaveLength(1);
    ok(await c.run(up));
    expect(await c.ids()).toHaveLength(4);
    ok(await c.run(destroy));
  });

  test("an anchor edited in the state is replaced, with a warning; creates carry the new one", async () => {
    const proxy = await losingProxy();
    const c = await checkout(face, `${face}-edited`, { baseUrl: proxy.url });
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up));
    await editState(c, (deployment) => {
      for (const r of deployment.resources) {
        if (String(r.type).endsWith(":StackAnchor")) r.outputs.anchor = "edited-by-hand";
        if (String(r.type) === "pulumi:providers:edge") r.inputs.__anchor = "edited-by-hand";
      }
    });
    await c.setSpec(SPEC);
    // The run that finds it says so, and its creates carry a new anchor, which the state keeps:
    // a create lost in that run is recovered by the next.
    await loseRouteCreate(c, proxy.state);
    const made = await onService();
    const retry = ok(await c.run(up));
    expect(retry.output).toMatch(FOUND_AGAIN);
    expect(await onService()).toEqual(made);
    ok(await c.run(["preview", "--refresh", "--expect-no-changes"]));
    ok(await c.run(destroy));
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
    // and its route moves with it; an edge keeping its hostport is replaced old-first.
    await c.setSpec({
      ...SPEC,
      edges: [{ name: "web", args: { description: "web v2", hostports: ["w.example.com:443"] } }],
    });
    ok(await c.run(up));
    await c.setSpec({
      ...SPEC,
      edges: [{ name: "web", args: { description: "web v3", hostports: ["w.example.com:443"] } }],
    });
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
      /took over route edghtsrt_\w+ \(made by an earlier create for this resource with other inputs, found by this stack's identity for it\)/,
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

describe("packaged face: a resource moved to another provider resource", () => {
  test("a create lost under one provider resource, retried under another: fails clearly, nothing twice", async () => {
    const proxy = await losingProxy();
    const c = await checkout("packaged", "provider-moved", { baseUrl: proxy.url });
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up));
    await c.setSpec(SPEC);
    await loseRouteCreate(c, proxy.state);
    const made = await onService();
    // The program now puts its resources on an explicit provider resource: a new anchor, whose
    // identity did not make the lost route; its match names it.
    await c.setSpec({ ...SPEC, provider: "explicit" });
    const retry = await c.run(up);
    expect(retry.code).not.toBe(0);
    expect(retry.output).toMatch(
      /already has a route with matchType "path_prefix" and match "\/api" \(edghtsrt_\w+\)/,
    );
    expect(retry.output).toContain("pulumi import edge:index:HttpsEdgeRoute api ");
    expect(await onService()).toEqual(made);
    await c.setSpec({ ...SPEC, routes: [] });
    ok(await c.run(up));
    for (const e of (await server.client.listHttpsEdges()).https_edges)
      for (const r of e.routes) await server.client.deleteRoute(e.id, r.id);
    ok(await c.run(destroy));
  });
});

describe("an inline Automation API program", () => {
  test("its place is found from the workspace, and a lost create is recovered", async () => {
    // The program runs in this process (whose directory holds another project); the CLI runs in
    // the workspace, where Pulumi.yaml names the backend relative to it.
    const proxy = await losingProxy();
    mkdirSync(WORK_ROOT, { recursive: true });
    const workDir = mkdtempSync(join(WORK_ROOT, "identity-inline-"));
    cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));
    mkdirSync(join(workDir, ".state"));
    writeFileSync(
      join(workDir, "Pulumi.yaml"),
      "name: identity-inline\nruntime: nodejs\nbackend:\n  url: file://./.state\n",
    );
    const { HttpsEdge, HttpsEdgeRoute } = await import("../../index");
    let withRoute = false;
    const program = async () => {
      const web = new HttpsEdge("web", { description: "inline" });
      if (withRoute) new HttpsEdgeRoute("api", { edgeId: web.id, matchType: "path_prefix", match: "/api" });
    };
    const stack = await engine.inlineStack({
      projectName: "identity-inline",
      program,
      workDir,
      stackName: "test",
      stateDir: join(workDir, ".state"),
      env: { PULUMI_BACKEND_URL: "" },
    });
    await stack.setConfig("edge:baseUrl", { value: proxy.url });
    await stack.setConfig("edge:requestDeadlineMs", { value: "2000" });
    await stack.up({ color: "never" });
    const exported = await stack.exportStack();
    const anchor = (exported.deployment.resources ?? []).find((r: { type: string }) =>
      r.type.endsWith(":StackAnchor"),
    );
    expect(anchor?.outputs?.place).toBe(`file://${realpathSync(join(workDir, ".state"))}`);

    withRoute = true;
    proxy.state.lose = /\/routes$/;
    await expect(stack.up({ color: "never" })).rejects.toThrow();
    proxy.state.lose = undefined;
    const made = await onService();
    const said: string[] = [];
    await stack.up({ color: "never", onOutput: (line) => void said.push(line) });
    expect(said.join("")).toMatch(FOUND_AGAIN);
    expect(said.join("")).not.toMatch(NEW_ANCHOR);
    expect(await onService()).toEqual(made);
    await stack.destroy({ color: "never" });
    expect(await onService()).toEqual([]);
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
    const stack = await engine.directoryStack({ workDir: root, stackName: "dev", stateDir });
    // A plain `pulumi up` in the root: the project's backend.url, relative to where it runs.
    const plain = (args: string[]) =>
      runPulumi(args, { cwd: root, stateDir, stackName: "dev", env: { PULUMI_BACKEND_URL: "" } });
    const resources = async () =>
      (await stateOf({ name: "dev", workspace: { workDir: root } }, stateDir)).resources;

    await stack.up({ color: "never" });
    const all = (await resources()).map((r) => r.id).sort();
    const route = (await resources()).find((r) => r.kind === "route")!;
    ok(await plain(["state", "delete", route.urn, "--yes"]));
    const retry = ok(await plain(up));
    expect(retry.output).toMatch(FOUND_AGAIN);
    // The Automation API's absolute URL and the CLI's relative one are one place: the anchor stays.
    expect(retry.output).not.toMatch(NEW_ANCHOR);
    expect((await resources()).map((r) => r.id).sort()).toEqual(all);
    ok(await plain(destroy));
  });
});
