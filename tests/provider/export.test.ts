/**
 * Inputs as a person writes them (the contract's defaults left out: what an import stores), and
 * `pulumi-edge export`'s pure parts: names, filters, edges.yaml (loaded back with the declarative
 * loader) and the import file, against the real service in memory.
 */
import { ROUTE_MODULE_NAMES } from "../../sdk/contract";
import { parseEdgeConfig, SecretRef } from "../../provider/declarative/load";
import { exportFleet, filterFleet } from "../../commands/export/fleet";
import {
  byAge,
  camelName,
  edgeBaseName,
  routeBaseName,
  slug,
  uniqueNames,
} from "../../commands/export/names";
import { readFleet } from "../../commands/export/read";
import { check } from "../../provider/model";
import { MODULE_PROPERTY, routeInputsOf } from "../../provider/model/route";
import { writtenInputs } from "../../provider/model/written";
import { EDGE_ID, MODULE_MINIMAL, MODULE_SAMPLES, service } from "./support";

/** Canonical inputs of a route (every default filled), as check answers them to the engine. */
const route = (props: Record<string, unknown>) => {
  const checked = check("httpsEdgeRoute", {
    edgeId: EDGE_ID,
    matchType: "path_prefix",
    match: "/a",
    ...props,
  });
  expect(checked.failures).toEqual([]);
  return routeInputsOf(checked.inputs);
};
/** What check makes of written inputs: the same configuration as `route` made. */
const rechecked = (inputs: unknown) => routeInputsOf(check("httpsEdgeRoute", inputs).inputs);

describe("written inputs: the contract's defaults left out", () => {
  test.each(ROUTE_MODULE_NAMES)("%s: the smallest module reads as written, and means the same", (name) => {
    const property = MODULE_PROPERTY[name];
    const canonical = route({ [property]: MODULE_MINIMAL[name] });
    const written = writtenInputs("httpsEdgeRoute", canonical);
    expect(written).toEqual({
      edgeId: EDGE_ID,
      matchType: "path_prefix",
      match: "/a",
      [property]: MODULE_MINIMAL[name],
    });
    expect(rechecked(written)).toEqual(canonical);
  });

  test.each(ROUTE_MODULE_NAMES)("%s: a full module keeps every value that is not a default", (name) => {
    const property = MODULE_PROPERTY[name];
    const canonical = route({ [property]: MODULE_SAMPLES[name], description: "d" });
    const written = writtenInputs("httpsEdgeRoute", canonical);
    expect(rechecked(written)).toEqual(canonical);
    expect(written).toMatchObject({ description: "d" });
    expect(written).not.toHaveProperty("metadata");
  });

  test("the defaults spelled out are left out: enabled true, zeros, empty strings and lists, unset OAuth slots", () => {
    const canonical = route({
      circuitBreaker: { enabled: true, trippedDuration: 30, rollingWindow: 0, numBuckets: 10 },
      oauth: { provider: { github: { organizations: ["acme"], scopes: [] } }, cookiePrefix: "edge." },
      compression: { enabled: false },
    });
    expect(writtenInputs("httpsEdgeRoute", canonical)).toEqual({
      edgeId: EDGE_ID,
      matchType: "path_prefix",
      match: "/a",
      circuitBreaker: { trippedDuration: 30, numBuckets: 10 },
      oauth: { provider: { github: { organizations: ["acme"] } } },
      compression: { enabled: false }, // not the default: kept
    });
  });

  test("edges and TLS IP restrictions too; header names are kept as written", () => {
    expect(writtenInputs("httpsEdge", { description: "", metadata: "", hostports: [] })).toEqual({});
    expect(
      writtenInputs("tlsEdge", { description: "db", metadata: "", hostports: ["db.example.com:5432"] }),
    ).toEqual({ description: "db", hostports: ["db.example.com:5432"] });
    expect(
      writtenInputs("tlsEdgeIpRestriction", { edgeId: "edgtls_1", enabled: true, ipPolicyIds: ["ipp_a"] }),
    ).toEqual({ edgeId: "edgtls_1", ipPolicyIds: ["ipp_a"] });
    const headers = route({ requestHeaders: { add: { x_custom_header: "1", "X-Foo": "2" } } });
    expect(writtenInputs("httpsEdgeRoute", headers)).toMatchObject({
      requestHeaders: { add: { x_custom_header: "1", "X-Foo": "2" } },
    });
  });
});

describe("names", () => {
  test("slugs are lowercase ASCII words, at most 40 characters", () => {
    expect(slug("Public web edge")).toBe("public-web-edge");
    expect(slug("  Café / API (v2)!")).toBe("cafe-api-v2");
    expect(slug("/hooks/stripe")).toBe("hooks-stripe");
    expect(slug("/")).toBe("");
    expect(slug("a".repeat(50))).toHaveLength(40);
    expect(slug("word ".repeat(20)).length).toBeLessThanOrEqual(40);
  });

  test("an edge is named by its description, a name in its metadata, its host, else its id", () => {
    const e = { id: "edghts_x", description: "", metadata: "", hostports: [] as string[] };
    expect(edgeBaseName({ ...e, description: "Shop" })).toBe("shop");
    expect(edgeBaseName({ ...e, metadata: '{"name":"Checkout EU","team":"pay"}' })).toBe("checkout-eu");
    expect(edgeBaseName({ ...e, metadata: "not json", hostports: ["db.example.com:5432"] })).toBe(
      "db-example-com",
    );
    expect(edgeBaseName(e)).toBe("edghts_x");
    const r = { id: "edghtsrt_y", description: "", metadata: "", match: "/" };
    expect(routeBaseName(r)).toBe("root");
    expect(routeBaseName({ ...r, match: "/api/v1" })).toBe("api-v1");
    expect(routeBaseName({ ...r, description: "Login callback", match: "/cb" })).toBe("login-callback");
  });

  test("clashes: the oldest keeps the plain name, newer ones get the end of their id, whatever the listing order", () => {
    const items = [
      { id: "edghts_cccccc", created_at: "2026-01-03T00:00:00Z", description: "web" },
      { id: "edghts_aaaaaa", created_at: "2026-01-01T00:00:00Z", description: "web" },
      { id: "edghts_bbbbbb", created_at: "2026-01-02T00:00:00Z", description: "api" },
    ];
    const named = (list: typeof items) =>
      Object.fromEntries([...uniqueNames(byAge(list), (i) => i.description)].map(([i, n]) => [i.id, n]));
    expect(named(items)).toEqual({ edghts_aaaaaa: "web", edghts_bbbbbb: "api", edghts_cccccc: "web-cccccc" });
    expect(named([...items].reverse())).toEqual(named(items));
  });

  test("identifiers for code and config keys", () => {
    expect(camelName(["web", "stripe-hooks", "webhook", "secret"])).toBe("webStripeHooksWebhookSecret");
    expect(camelName(["web.api"])).toBe("webApi");
    expect(camelName(["2fa", "x"])).toBe("e2faX");
  });
});

describe("export of a fleet from the service", () => {
  const client = service.client;
  const made: Record<string, string> = {};

  beforeAll(async () => {
    const web = await client.createHttpsEdge({
      description: "Public web",
      hostports: ["www.example.com:443"],
    });
    await client.createRoute(web.id, {
      match_type: "path_prefix",
      match: "/",
      backend: { backend_id: "bkd_site" },
    });
    const hooks = await client.createRoute(web.id, {
      match_type: "exact_path",
      match: "/hooks/stripe",
      description: "Stripe hooks",
      webhook_verification: { provider: "stripe", secret: "whsec_do_not_leak" },
    });
    await client.createRoute(web.id, {
      match_type: "path_prefix",
      match: "/login",
      oauth: {
        provider: { github: { client_id: "gh", client_secret: "gh_do_not_leak", organizations: ["acme"] } },
      },
      circuit_breaker: { tripped_duration: 30, num_buckets: 10 },
    });
    // A second edge with the same description: named by the end of its id, being the newer. Its
    // created_at must be later, not just its call: in the same millisecond the two tie, and the
    // tie goes to the smaller (random) id, so the plain name went to either (a flake on a fast run).
    for (let i = 0; i < 1000 && new Date().toISOString() <= web.created_at; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const web2 = await client.createHttpsEdge({ description: "Public web" });
    expect(web2.created_at > web.created_at).toBe(true);
    const tls = await client.createTlsEdge({ hostports: ["db.example.com:5432"], metadata: '{"name":"db"}' });
    await client.putTlsIpRestriction(tls.id, { ip_policy_ids: ["ipp_a", "ipp_b"] });
    Object.assign(made, { web: web.id, hooks: hooks.id, web2: web2.id, tls: tls.id });
  });

  test("everything: edges.yaml loads back as written, secrets referenced not written, import ids in the packaged form", async () => {
    const fleet = await readFleet(client);
    const out = exportFleet(fleet, { version: "0.1.0", header: ["exported for a test"] });
    expect(out.counts).toEqual({ httpsEdges: 2, routes: 3, tlsEdges: 1, ipRestrictions: 1 });
    const web2 = `public-web-${made.web2!.slice(-6)}`;
    expect(out.document).toEqual({
      httpsEdges: {
        "public-web": {
          description: "Public web",
          hostports: ["www.example.com:443"],
          routes: {
            root: { matchType: "path_prefix", match: "/", backend: { backendId: "bkd_site" } },
            "stripe-hooks": {
              matchType: "exact_path",
              match: "/hooks/stripe",
              description: "Stripe hooks",
              webhookVerification: {
                provider: "stripe",
                secret: new SecretRef("publicWebStripeHooksWebhookSecret"),
              },
            },
            login: {
              matchType: "path_prefix",
              match: "/login",
              circuitBreaker: { trippedDuration: 30, numBuckets: 10 },
              oauth: {
                provider: {
                  github: {
                    clientId: "gh",
                    clientSecret: new SecretRef("publicWebLoginOauthGithubClientSecret"),
                    organizations: ["acme"],
                  },
                },
              },
            },
          },
        },
        [web2]: { description: "Public web" },
      },
      tlsEdges: {
        db: {
          metadata: '{"name":"db"}',
          hostports: ["db.example.com:5432"],
          ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b"] },
        },
      },
    });
    expect(out.yaml).toMatch(/^# exported for a test\n/);
    expect(out.yaml).toContain("secret: !secret publicWebStripeHooksWebhookSecret");
    expect(out.yaml).not.toMatch(/do_not_leak/);
    // In the routes' order, oldest first; the two with secrets may share a millisecond, whose tie
    // goes to the smaller (random) id: the order between them is not what this checks.
    expect([...out.secrets].sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      {
        key: "publicWebLoginOauthGithubClientSecret",
        where: "httpsEdges.public-web.routes.login.oauth.provider.github.clientSecret",
        value: "gh_do_not_leak",
      },
      {
        key: "publicWebStripeHooksWebhookSecret",
        where: "httpsEdges.public-web.routes.stripe-hooks.webhookVerification.secret",
        value: "whsec_do_not_leak",
      },
    ]);

    const loaded = await parseEdgeConfig(out.yaml);
    expect({ httpsEdges: loaded.httpsEdges, tlsEdges: loaded.tlsEdges }).toEqual({
      httpsEdges: { ...out.document.httpsEdges, [web2]: { description: "Public web", routes: {} } },
      tlsEdges: out.document.tlsEdges,
    });

    const ids = Object.fromEntries(out.imports.map((i) => [i.logicalName, [i.type, i.name, i.id]]));
    expect(ids["public-web"]).toEqual(["edge:index:HttpsEdge", "publicWeb", made.web]);
    expect(ids["public-web.stripe-hooks"]).toEqual([
      "edge:index:HttpsEdgeRoute",
      "publicWebStripeHooks",
      `${made.web}/${made.hooks}`,
    ]);
    expect(ids["db"]).toEqual(["edge:index:TlsEdge", "db", made.tls]);
    expect(ids["db.ipRestriction"]).toEqual(["edge:index:TlsEdgeIpRestriction", "dbIpRestriction", made.tls]);
    expect(out.imports).toHaveLength(7);
    expect(new Set(out.imports.map((i) => i.name)).size).toBe(7);
    expect(out.imports.every((i) => i.version === "0.1.0")).toBe(true);
  });

  test("by id (HTTPS or TLS), and by description; an unknown id is named", async () => {
    const some = await readFleet(client, [made.tls!, made.web2!]);
    expect([some.https.map((e) => e.id), some.tls.map((e) => e.id)]).toEqual([[made.web2], [made.tls]]);
    const onlyWeb = filterFleet(await readFleet(client), { descriptionMatch: /^Public/ });
    expect(onlyWeb.https.map((e) => e.id).sort()).toEqual([made.web, made.web2].sort());
    expect(onlyWeb.tls).toEqual([]);
    expect(filterFleet(await readFleet(client), { metadataMatch: /"db"/ }).tls).toHaveLength(1);
    await expect(readFleet(client, ["edghts_nope"])).rejects.toThrow(
      'there is no HTTPS or TLS edge with the id "edghts_nope" on the service',
    );
  });
});
