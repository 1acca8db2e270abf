/**
 * Switching authentication modules must never expose an enabled backend without
 * authentication, not even between two calls; adoption takes over existing routes in place.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { AUTH_MODULES, type Route } from "../../sdk/contract";
import {
  quiet,
  type RecordingServer,
  recordingServer,
  serverFault,
  setSpec,
  specStack,
  stateExport,
  workspace,
} from "./support/harness";

const OAUTH_SECRET = "gh-oauth-secret-3b7e1d-never-in-state";
const OIDC_SECRET = "oidc-secret-9a2c44-never-in-state";

let ws: ReturnType<typeof workspace>;
let server: RecordingServer;
let stack: Stack;

const base = { matchType: "path_prefix", match: "/private", backend: { backendId: "bkd_private" } };
const oauth = {
  provider: {
    github: {
      clientId: "gh-client",
      clientSecret: "secret:oauthSecret",
      teams: ["acme/ops"],
      organizations: ["acme"],
    },
  },
};
const oidc = {
  issuer: "https://login.example.com",
  clientId: "oidc-client",
  clientSecret: "secret:oidcSecret",
};
const saml = {
  idpMetadata:
    '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp"/>',
};
const spec = (route: Record<string, unknown>) => ({
  edges: ["e"],
  routes: [{ name: "private", edge: "e", args: route }],
});

/** Every state the route passed through, as seen by the service after each mutation. */
let states: Route[] = [];
let routeRef: { edgeId: string; id: string } | undefined;

beforeAll(async () => {
  ws = workspace("spec-program", "auth");
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-auth-")));
  server.afterMutation.push(async () => {
    if (!routeRef) return;
    try {
      states.push(await server.service.getRoute(routeRef.edgeId, routeRef.id, { baseUrl: server.url }));
    } catch {
      // route deleted: nothing is exposed
    }
  });
  stack = await specStack(ws, server.url);
  await stack.setConfig("oauthSecret", { value: OAUTH_SECRET, secret: true });
  await stack.setConfig("oidcSecret", { value: OIDC_SECRET, secret: true });
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

const exposed = (r: Route) => r.backend?.enabled === true && AUTH_MODULES.every((m) => r[m] === null);

async function switchTo(route: Record<string, unknown>, expectedAuth: string) {
  states = [];
  server.reset();
  await setSpec(stack, spec(route));
  await stack.up(quiet);
  expect(states.length).toBeGreaterThan(0);
  expect(states.filter(exposed)).toEqual([]);
  const final = states[states.length - 1]!;
  expect(AUTH_MODULES.filter((m) => final[m] !== null)).toEqual([expectedAuth]);
  expect(final.backend).toMatchObject({ enabled: true, backend: { id: "bkd_private" } });
  await stack.preview({ ...quiet, expectNoChanges: true });
}

test("oauth (github teams and organizations) is created with the route", async () => {
  await setSpec(stack, spec({ ...base, oauth }));
  await stack.up(quiet);
  const out = (await stack.outputs()).routes!.value.private as { id: string; edgeId: string };
  routeRef = { edgeId: out.edgeId, id: out.id };
  const route = await server.client.getRoute(out.edgeId, out.id);
  expect(route.oauth?.provider.github).toMatchObject({
    teams: ["acme/ops"],
    organizations: ["acme"],
    client_secret: OAUTH_SECRET,
  });
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("oauth → oidc fails closed: the backend is disabled before oauth goes, re-enabled with oidc atomically", async () => {
  await switchTo({ ...base, oidc }, "oidc");
  expect(
    server
      .mutations()
      .map((m) => `${m.method} ${m.path.split("/").slice(-1)[0]} ${Object.keys(m.body ?? {}).join(",")}`),
  ).toEqual([`PATCH ${routeRef!.id} backend`, "DELETE oauth ", `PATCH ${routeRef!.id} oidc,backend`]);
  expect(server.mutations()[0]!.body).toEqual({ backend: { backend_id: "bkd_private", enabled: false } });
});

test("oidc → saml, then saml → oauth also never expose the backend", async () => {
  await switchTo({ ...base, saml }, "saml");
  await switchTo({ ...base, oauth }, "oauth");
});

test("a switch that stops half-way says which step failed, what state it left, what to do; `up` again finishes", async () => {
  // The route is on oauth. The service fails the deletion of oauth (step 2 of the switch) once.
  let failed = 0;
  server.faults.push((r) =>
    r.method === "DELETE" && r.path.endsWith("/oauth") && failed++ === 0
      ? serverFault("disk full")
      : undefined,
  );
  states = [];
  await setSpec(stack, spec({ ...base, oidc }));
  let message = "";
  try {
    await stack.up(quiet);
  } catch (e) {
    message = String(e);
  }
  expect(message).toMatch(
    /route edghtsrt_\w+: step 2 of 3 failed \(DELETE module oauth: remove oauth before setting oidc/,
  );
  expect(message).toMatch(/failed with 500 ERR_EDGE_500: disk full/);
  expect(message).toMatch(
    /The route is left with its backend disabled on purpose \(fail closed\) and oauth still configured\. Next: the backend was left disabled on purpose; run `pulumi up` again to finish the switch\./,
  );
  // Closed, as it says: backend disabled, oauth still there, never exposed on the way.
  const left = await server.client.getRoute(routeRef!.edgeId, routeRef!.id);
  expect(left.backend?.enabled).toBe(false);
  expect(left.oauth).not.toBeNull();
  expect(states.filter(exposed)).toEqual([]);

  // The fault is gone: `pulumi up` again picks up from there and finishes the switch.
  await switchTo({ ...base, oidc }, "oidc");
});

test("secrets of oauth and oidc never reach the state in plaintext", async () => {
  const exported = await stateExport(stack, ws.stateDir);
  expect(exported).not.toContain(OAUTH_SECRET);
  expect(exported).not.toContain(OIDC_SECRET);
});

test("a route created out of band is adopted in place with adopt: true", async () => {
  const edgeId = routeRef!.edgeId;
  const existing = await server.client.createRoute(edgeId, {
    match_type: "exact_path",
    match: "/legacy",
    compression: {},
    backend: { backend_id: "bkd_old" },
  });
  const legacy = { matchType: "exact_path", match: "/legacy", backend: { backendId: "bkd_new" } };
  const routes = [
    { name: "private", edge: "e", args: { ...base, oauth } },
    { name: "legacy", edge: "e", args: legacy },
  ];
  await setSpec(stack, { edges: ["e"], routes });
  await expect(stack.up(quiet)).rejects.toThrow(
    /already has a route with matchType "exact_path" and match "\/legacy".*adopt: true/s,
  );

  routes[1]!.args = { ...legacy, adopt: true } as typeof legacy;
  await setSpec(stack, { edges: ["e"], routes });
  server.reset();
  await stack.up(quiet);
  const out = (await stack.outputs()).routes!.value.legacy as { id: string };
  expect(out.id).toBe(existing.id); // adopted, not recreated
  const route = await server.client.getRoute(edgeId, existing.id);
  expect(route.backend?.backend.id).toBe("bkd_new");
  expect(route.compression).toBeNull(); // not in the program: removed by its own delete
  expect(server.mutations().map((m) => m.method)).toEqual(["POST", "PATCH", "DELETE"]);
  await stack.preview({ ...quiet, expectNoChanges: true });
});

test("destroy leaves nothing on the server", async () => {
  await stack.destroy(quiet);
  expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
});
