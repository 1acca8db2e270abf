/**
 * No stack holds what it did not make: the boundary cases issue 51 found, through the real engine
 * (the generated search of the same invariants is ./invariants.test.ts; `pulumi-edge drift` over
 * Pulumi.json projects is tests/engine/fleet-projects.test.ts).
 *
 * | case | must |
 * |---|---|
 * | a `Pulumi.json` project whose backend is the login, copied to another backend | the copy's place is known: a new anchor, said once; its new route is its own |
 * | `pulumi up --target <new route>` in that copy | refused before anything is made (dynamic: the anchor is not in the run), naming the --target to add; never the original's route |
 * | a hostport spelled `Shop.Example.com:0443` | taken as `shop.example.com:443`; no change to preview after |
 * | a hostport moved from one edge to a new one in one update | converges in that update |
 * | a lost route create, its route moved out of band, its old match taken by another key, then an input changed | fails naming both routes, takes neither; the advice (delete the other) converges |
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  checkout,
  cleanups,
  destroy,
  type Face,
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
import { runPulumi, stateOf } from "./support";

jest.setTimeout(420_000);

useIdentityBench();

describe.each<Face>(["dynamic", "packaged"])("%s face", (face) => {
  test("a Pulumi.json project on its login's backend, copied: a --target create refused, then its own route", async () => {
    const a = await checkout(face, `${face}-json`, { json: true, login: true });
    ok(await a.run(up));
    const before = await onService();

    // The copy: exported, then imported into a stack of the same name on the backend of another login.
    const copyState = mkdtempSync(join(tmpdir(), "edge-boundary-copy-"));
    const copyCreds = mkdtempSync(join(tmpdir(), "edge-boundary-creds-"));
    cleanups.push(() => rmSync(copyState, { recursive: true, force: true }));
    cleanups.push(() => rmSync(copyCreds, { recursive: true, force: true }));
    const file = join(a.stateDir, "..", "copy.json");
    ok(await a.run(["stack", "export", "--file", file]));
    const env = { PULUMI_BACKEND_URL: "", PULUMI_CREDENTIALS_PATH: copyCreds };
    const runCopy = (args: string[], stackName?: string) =>
      runPulumi(args, { cwd: a.root, stateDir: copyState, env, stackName });
    ok(await runCopy(["login", `file://${copyState}`], ""));
    ok(await runCopy(["stack", "init", "--secrets-provider", "passphrase"]));
    ok(await runCopy(["stack", "import", "--file", file]));

    // The original adds a route and makes it; the copy (same program, same settings) then too.
    await a.setSpec({
      ...SPEC,
      edges: [...SPEC.edges, "extra"],
      routes: [
        ...SPEC.routes,
        { name: "v2", edge: "extra", args: { matchType: "exact_path", match: "/v2" } },
      ],
    });
    ok(await a.run(up));
    const withOriginals = await onService();
    const originals = withOriginals.filter((id) => !before.includes(id));
    expect(originals).toHaveLength(2);

    const copyIds = async () =>
      (await stateOf({ name: "test", workspace: { workDir: a.root } }, copyState)).resources.map((r) =>
        r.id.split("/").pop()!,
      );
    // Its new edge and route, alone (not the StackAnchor): a targeted run in the copy.
    const targets = (await stateOf({ name: "test", workspace: { workDir: a.root } }, a.stateDir)).resources
      .filter((r) => originals.some((id) => r.id.endsWith(id)))
      .flatMap((r) => ["--target", r.urn]);
    const targeted = await runCopy([...up, ...targets]);
    expect(targeted.output).not.toMatch(TAKEN);
    expect((await copyIds()).filter((id) => originals.includes(id))).toEqual([]);
    if (face === "dynamic") {
      // The StackAnchor is not part of the run: the create judges its anchor and refuses.
      expect(targeted.code).not.toBe(0);
      expect(targeted.output).toMatch(
        /Nothing was created\. Run `pulumi up` once without --target, or with the stack's anchor among the targets: --target 'urn:pulumi:test::[\w-]+::pulumi-nodejs:dynamic\/edge:StackAnchor::pulumi-edge'/,
      );
      expect(await onService()).toEqual(withOriginals);
    }

    // A plain run: the copy takes an anchor of its own, said once, and makes its own route.
    const copied = ok(await runCopy(up));
    // Said once, in the run that renewed the anchor (the packaged face renews it even in a
    // targeted run: the provider resource is configured in every run).
    const diagnostics = (out: string) => out.slice(out.indexOf("Diagnostics:"));
    const said = diagnostics(targeted.output) + diagnostics(copied.output);
    expect(said.match(new RegExp(NEW_ANCHOR.source, "g")) ?? []).toHaveLength(1);
    expect(copied.output).not.toMatch(TAKEN);
    const copyOwn = (await copyIds()).filter((id) => !before.includes(id));
    expect(copyOwn).toHaveLength(2);
    expect(copyOwn.filter((id) => originals.includes(id))).toEqual([]);
    ok(await runCopy(["preview", "--refresh", "--expect-no-changes"]));
    // The original is untouched.
    ok(await a.run(["preview", "--refresh", "--expect-no-changes"]));
    ok(await runCopy(destroy));
    ok(await a.run(["refresh", "--yes", "--skip-preview"]));
    ok(await a.run(destroy));
    expect(await onService()).toEqual([]);
  });

  test("a hostport in any spelling is one; moved to a new edge, it converges in one update", async () => {
    const c = await checkout(face, `${face}-hostports`);
    const spec = (edges: unknown[]) => ({ ...SPEC, edges, routes: [], tls: [], tlsEdges: [] });
    await c.setSpec(spec([{ name: "one", args: { hostports: ["Shop.Example.com:0443"] } }]));
    ok(await c.run(up));
    const held = (await server.client.listHttpsEdges()).https_edges.map((e) => e.hostports);
    expect(held).toEqual([["shop.example.com:443"]]);
    ok(await c.run(["preview", "--refresh", "--expect-no-changes"]));
    // `one` gives the hostport up for another, and a new edge, declared after it, takes it.
    await c.setSpec(
      spec([
        { name: "one", args: { hostports: ["api.example.com:443"] } },
        { name: "two", args: { hostports: ["SHOP.example.com:443"] } },
      ]),
    );
    const moved = ok(await c.run(up));
    expect(moved.output).not.toMatch(/already serves/);
    const after = (await server.client.listHttpsEdges()).https_edges.map((e) => e.hostports).sort();
    expect(after).toEqual([["api.example.com:443"], ["shop.example.com:443"]]);
    ok(await c.run(["preview", "--refresh", "--expect-no-changes"]));
    // Back, with the taker declared first: its create meets the giver before the giver is diffed.
    await c.setSpec(
      spec([
        { name: "two", args: { hostports: ["api.example.com:443"] } },
        { name: "one", args: { hostports: ["shop.example.com:443"] } },
      ]),
    );
    ok(await c.run(up));
    ok(await c.run(["preview", "--refresh", "--expect-no-changes"]));
    ok(await c.run(destroy));
    expect(await onService()).toEqual([]);
  });
});

// The route's lifecycle is the brain's, one for both faces (and ./invariants plays it on both):
// through the engine on the packaged face.
test("a retry after a lost route create, the route moved and its old match taken by another key: neither taken", async () => {
  const proxy = await losingProxy();
  const c = await checkout("packaged", "retry-moved", { baseUrl: proxy.url });
  await c.setSpec({ ...SPEC, routes: [] });
  ok(await c.run(up));
  await c.setSpec(SPEC);
  await loseRouteCreate(c, proxy.state);
  const edge = (await server.client.listHttpsEdges()).https_edges[0]!;
  const made = edge.routes[0]!;
  expect(made.match).toBe("/api");
  // Out of band: the route made is moved; another key makes a route at its old match.
  await server.client.updateRoute(edge.id, made.id, { match: "/moved" });
  const theirs = await server.client.createRoute(edge.id, { match_type: "path_prefix", match: "/api" });
  // The program changes another input of the route (its key is then reused with another body).
  await c.setSpec({
    ...SPEC,
    routes: [{ ...SPEC.routes[0]!, args: { ...SPEC.routes[0]!.args, description: "v2" } }],
  });
  const refused = await c.run(up);
  expect(refused.code).not.toBe(0);
  expect(refused.output).toContain(`route ${made.id} was made by an earlier create for this resource`);
  expect(refused.output).toContain(`(${theirs.id})`);
  expect(refused.output).not.toMatch(/took over route/); // neither: the one it made could not be brought back
  expect((await c.ids()).filter((id) => id === theirs.id || id === made.id)).toEqual([]);
  expect(await server.client.getRoute(edge.id, theirs.id)).toMatchObject({ match: "/api", description: "" });
  // The advice: delete the other route (or change its match), and run `pulumi up` again.
  await server.client.deleteRoute(edge.id, theirs.id);
  const again = ok(await c.run(up));
  expect(again.output).toContain(`took over route ${made.id} (made by an earlier create for this resource`);
  expect(await server.client.getRoute(edge.id, made.id)).toMatchObject({ match: "/api", description: "v2" });
  expect(await c.ids()).toContain(made.id);
  ok(await c.run(["preview", "--refresh", "--expect-no-changes"]));
  ok(await c.run(destroy));
});
