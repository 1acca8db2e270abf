/**
 * Every validation rule of docs/decisions.md#validation, each with the exact JSON path in
 * `details.field`, and every rejected request proven to change nothing; the boundary values that
 * must be accepted; and PATCH semantics — over real HTTP and in-process.
 */
import { storeFingerprint } from "../support/fingerprint";
import { ERROR_CODES, UINT32_MAX, WEBHOOK_PROVIDERS } from "../../sdk/contract";
import {
  expectApiError,
  expectRejected,
  fillIds,
  FIXTURES,
  type Fixture,
  IDP_METADATA,
  raw,
  REJECTED,
  type Rejection,
  uniqueMatch,
} from "./helpers";

const E = ERROR_CODES;
const V = E.validation.code;
const U = E.unknownField.code;

const oidcOk = { issuer: "https://id.example.com", client_id: "c", client_secret: "s" };

/** [name, extra create-body fields, field path, error code]. */
const INVALID: Array<[string, Record<string, unknown>, string, string]> = [
  // top level
  ["unknown top-level field", { descripton: "typo" }, "descripton", U],
  ["match_type missing", { match_type: undefined }, "match_type", V],
  ["match_type not allowed", { match_type: "regex" }, "match_type", V],
  ["match missing", { match: undefined }, "match", V],
  ["match empty", { match: "" }, "match", V],
  ["match not a string", { match: 5 }, "match", V],
  ["description 256 ASCII bytes", { description: "a".repeat(256) }, "description", V],
  ["description 128 chars of 2 bytes = 256 bytes", { description: "é".repeat(128) }, "description", V],
  ["description 64 emoji = 256 bytes", { description: "😀".repeat(64) }, "description", V],
  ["description not a string", { description: 5 }, "description", V],
  ["metadata 4097 bytes", { metadata: "m".repeat(4097) }, "metadata", V],
  ["metadata 1366 chars of 3 bytes = 4098 bytes", { metadata: "€".repeat(1366) }, "metadata", V],
  ["module not an object", { compression: 5 }, "compression", V],
  ["module a list", { backend: [] }, "backend", V],
  ["enabled not a boolean", { compression: { enabled: "yes" } }, "compression.enabled", V],
  // unknown nested fields
  ["unknown field in a module", { circuit_breaker: { num_bucket: 5 } }, "circuit_breaker.num_bucket", U],
  ["unknown field next to a valid backend", { backend: { backend_id: "b", weight: 1 } }, "backend.weight", U],
  [
    "unknown field in an oauth provider",
    { oauth: { provider: { google: { tenant: "x" } } } },
    "oauth.provider.google.tenant",
    U,
  ],
  ["unknown field in oidc", { oidc: { ...oidcOk, audience: "x" } }, "oidc.audience", U],
  // backend / ip_restriction
  ["backend_id missing", { backend: {} }, "backend.backend_id", V],
  ["backend_id empty", { backend: { backend_id: "" } }, "backend.backend_id", V],
  ["backend_id outside the id charset", { backend: { backend_id: "bkd-1" } }, "backend.backend_id", V],
  ["ip_policy_ids empty", { ip_restriction: { ip_policy_ids: [] } }, "ip_restriction.ip_policy_ids", V],
  ["ip_policy_ids missing", { ip_restriction: {} }, "ip_restriction.ip_policy_ids", V],
  [
    "ip_policy_ids bad id",
    { ip_restriction: { ip_policy_ids: ["ok", "n/o"] } },
    "ip_restriction.ip_policy_ids[1]",
    V,
  ],
  // circuit breaker: uint32, num_buckets, error_threshold_percentage
  [
    "uint32 above max",
    { circuit_breaker: { tripped_duration: UINT32_MAX + 1 } },
    "circuit_breaker.tripped_duration",
    V,
  ],
  ["uint32 negative", { circuit_breaker: { rolling_window: -1 } }, "circuit_breaker.rolling_window", V],
  [
    "uint32 fractional",
    { circuit_breaker: { volume_threshold: 1.5 } },
    "circuit_breaker.volume_threshold",
    V,
  ],
  [
    "uint32 as a string",
    { circuit_breaker: { volume_threshold: "5" } },
    "circuit_breaker.volume_threshold",
    V,
  ],
  [
    "session uint32 above max",
    { oauth: { provider: { google: {} }, maximum_duration: 2 ** 32 } },
    "oauth.maximum_duration",
    V,
  ],
  [
    "auth_check_interval negative",
    { oauth: { provider: { google: {} }, auth_check_interval: -5 } },
    "oauth.auth_check_interval",
    V,
  ],
  [
    "oidc inactivity_timeout fractional",
    { oidc: { ...oidcOk, inactivity_timeout: 0.5 } },
    "oidc.inactivity_timeout",
    V,
  ],
  ["num_buckets 129", { circuit_breaker: { num_buckets: 129 } }, "circuit_breaker.num_buckets", V],
  ["num_buckets 0", { circuit_breaker: { num_buckets: 0 } }, "circuit_breaker.num_buckets", V],
  ["num_buckets fractional", { circuit_breaker: { num_buckets: 2.5 } }, "circuit_breaker.num_buckets", V],
  [
    "error_threshold_percentage as a percent",
    { circuit_breaker: { error_threshold_percentage: 50 } },
    "circuit_breaker.error_threshold_percentage",
    V,
  ],
  [
    "error_threshold_percentage above 1",
    { circuit_breaker: { error_threshold_percentage: 1.0001 } },
    "circuit_breaker.error_threshold_percentage",
    V,
  ],
  [
    "error_threshold_percentage negative",
    { circuit_breaker: { error_threshold_percentage: -0.1 } },
    "circuit_breaker.error_threshold_percentage",
    V,
  ],
  // webhook verification
  ["webhook provider missing", { webhook_verification: { secret: "s" } }, "webhook_verification.provider", V],
  [
    "webhook provider unknown",
    { webhook_verification: { provider: "myhooks", secret: "s" } },
    "webhook_verification.provider",
    V,
  ],
  [
    "webhook secret required for stripe",
    { webhook_verification: { provider: "stripe" } },
    "webhook_verification.secret",
    V,
  ],
  [
    "webhook secret empty for GitHub",
    { webhook_verification: { provider: "GitHub", secret: "" } },
    "webhook_verification.secret",
    V,
  ],
  [
    "webhook secret forbidden for sns",
    { webhook_verification: { provider: "sns", secret: "s" } },
    "webhook_verification.secret",
    V,
  ],
  [
    "webhook secret forbidden for SNS (any case)",
    { webhook_verification: { provider: "SNS", secret: "s" } },
    "webhook_verification.secret",
    V,
  ],
  // oauth
  ["oauth provider missing", { oauth: {} }, "oauth.provider", V],
  ["oauth no provider object", { oauth: { provider: {} } }, "oauth.provider", V],
  ["oauth only null providers", { oauth: { provider: { github: null } } }, "oauth.provider", V],
  ["oauth two providers", { oauth: { provider: { github: {}, google: {} } } }, "oauth.provider", V],
  ["oauth unknown provider key", { oauth: { provider: { githib: {} } } }, "oauth.provider.githib", V],
  [
    "oauth client_id without secret",
    { oauth: { provider: { github: { client_id: "id" } } } },
    "oauth.provider.github.client_secret",
    V,
  ],
  [
    "oauth client_secret without id",
    { oauth: { provider: { microsoft: { client_secret: "s" } } } },
    "oauth.provider.microsoft.client_id",
    V,
  ],
  [
    "oauth scopes with the managed app",
    { oauth: { provider: { google: { scopes: ["email"] } } } },
    "oauth.provider.google.scopes",
    V,
  ],
  [
    "oauth uppercase email",
    { oauth: { provider: { github: { email_addresses: ["a@x.com", "B@x.com"] } } } },
    "oauth.provider.github.email_addresses[1]",
    V,
  ],
  [
    "oauth uppercase email domain",
    { oauth: { provider: { gitlab: { email_domains: ["Example.com"] } } } },
    "oauth.provider.gitlab.email_domains[0]",
    V,
  ],
  [
    "oauth teams only on github",
    { oauth: { provider: { google: { teams: ["a/b"] } } } },
    "oauth.provider.google.teams",
    U,
  ],
  [
    "oauth organizations only on github",
    { oauth: { provider: { gitlab: { organizations: ["acme"] } } } },
    "oauth.provider.gitlab.organizations",
    U,
  ],
  [
    "oauth github team not org/team",
    { oauth: { provider: { github: { teams: ["devs"] } } } },
    "oauth.provider.github.teams[0]",
    V,
  ],
  // oidc
  ["oidc issuer http", { oidc: { ...oidcOk, issuer: "http://id.example.com" } }, "oidc.issuer", V],
  ["oidc issuer not a URL", { oidc: { ...oidcOk, issuer: "id.example.com" } }, "oidc.issuer", V],
  ["oidc issuer missing", { oidc: { client_id: "c", client_secret: "s" } }, "oidc.issuer", V],
  [
    "oidc client_id missing",
    { oidc: { issuer: "https://id.example.com", client_secret: "s" } },
    "oidc.client_id",
    V,
  ],
  ["oidc client_secret empty", { oidc: { ...oidcOk, client_secret: "" } }, "oidc.client_secret", V],
  // saml
  ["saml idp_metadata missing", { saml: {} }, "saml.idp_metadata", V],
  ["saml idp_metadata not XML", { saml: { idp_metadata: "EntityDescriptor" } }, "saml.idp_metadata", V],
  [
    "saml idp_metadata without EntityDescriptor",
    { saml: { idp_metadata: "<EntitiesList/>" } },
    "saml.idp_metadata",
    V,
  ],
  [
    "saml nameid_format unknown",
    {
      saml: {
        idp_metadata: IDP_METADATA,
        nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:kerberos",
      },
    },
    "saml.nameid_format",
    V,
  ],
  [
    "saml read-only field",
    { saml: { idp_metadata: IDP_METADATA, entity_id: "https://x" } },
    "saml.entity_id",
    U,
  ],
  // auth modules
  ["oauth and oidc together", { oauth: { provider: { google: {} } }, oidc: oidcOk }, "oauth", V],
  ["oidc and saml together", { oidc: oidcOk, saml: { idp_metadata: IDP_METADATA } }, "oidc", V],
  // traffic policy, headers, user agent filter
  ["traffic_policy value empty", { traffic_policy: { value: "" } }, "traffic_policy.value", V],
  ["traffic_policy value missing", { traffic_policy: {} }, "traffic_policy.value", V],
  [
    "header keys equal but for case",
    { request_headers: { add: { "X-Foo": "1", "x-foo": "2" } } },
    'request_headers.add["x-foo"]',
    V,
  ],
  [
    "header value not a string",
    { response_headers: { add: { "X-Foo": 1 } } },
    'response_headers.add["X-Foo"]',
    V,
  ],
  [
    "header name invalid",
    { response_headers: { add: { "bad header": "1" } } },
    'response_headers.add["bad header"]',
    V,
  ],
  [
    "header named __proto__ (would be dropped silently)",
    { request_headers: { add: JSON.parse('{"X-A":"1","__proto__":"x"}') } },
    "request_headers.add.__proto__",
    V,
  ],
  ["__proto__ as a top-level key", JSON.parse('{"__proto__":{"description":"x"}}'), "__proto__", V],
  ["header remove not a list", { request_headers: { remove: "X-Foo" } }, "request_headers.remove", V],
  ["user agent allow not a list", { user_agent_filter: { allow: "curl" } }, "user_agent_filter.allow", V],
];

/** [name, extra create-body fields, check on the created route]. */
const VALID: Array<[string, Record<string, unknown>, (route: any) => void]> = [
  [
    "description of exactly 255 bytes (127 × é + a)",
    { description: `${"é".repeat(127)}a` },
    (r) => expect(r.description).toBe(`${"é".repeat(127)}a`),
  ],
  ["description 255 ASCII", { description: "d".repeat(255) }, (r) => expect(r.description.length).toBe(255)],
  [
    "metadata of exactly 4096 bytes (1365 × € + a)",
    { metadata: `${"€".repeat(1365)}a` },
    (r) => expect(new TextEncoder().encode(r.metadata).length).toBe(4096),
  ],
  [
    "uint32 bounds 0 and 4294967295",
    { circuit_breaker: { tripped_duration: 0, rolling_window: UINT32_MAX, volume_threshold: UINT32_MAX } },
    (r) =>
      expect(r.circuit_breaker).toMatchObject({
        tripped_duration: 0,
        rolling_window: 4294967295,
        volume_threshold: 4294967295,
      }),
  ],
  [
    "num_buckets 1",
    { circuit_breaker: { num_buckets: 1 } },
    (r) => expect(r.circuit_breaker.num_buckets).toBe(1),
  ],
  [
    "num_buckets 128",
    { circuit_breaker: { num_buckets: 128 } },
    (r) => expect(r.circuit_breaker.num_buckets).toBe(128),
  ],
  [
    "error_threshold_percentage 0",
    { circuit_breaker: { error_threshold_percentage: 0 } },
    (r) => expect(r.circuit_breaker.error_threshold_percentage).toBe(0),
  ],
  [
    "error_threshold_percentage 1",
    { circuit_breaker: { error_threshold_percentage: 1 } },
    (r) => expect(r.circuit_breaker.error_threshold_percentage).toBe(1),
  ],
  [
    "error_threshold_percentage 0.25",
    { circuit_breaker: { error_threshold_percentage: 0.25 } },
    (r) => expect(r.circuit_breaker.error_threshold_percentage).toBe(0.25),
  ],
  [
    "oauth own app with scopes",
    { oauth: { provider: { google: { client_id: "i", client_secret: "s", scopes: ["email"] } } } },
    (r) =>
      expect(r.oauth.provider.google).toEqual({
        client_id: "i",
        client_secret: "s",
        scopes: ["email"],
        email_addresses: [],
        email_domains: [],
      }),
  ],
  [
    "oauth lowercase emails",
    { oauth: { provider: { amazon: { email_addresses: ["a@x.com"], email_domains: ["x.com"] } } } },
    (r) => expect(r.oauth.provider.amazon.email_addresses).toEqual(["a@x.com"]),
  ],
  [
    "oauth null slots next to one provider",
    { oauth: { provider: { github: null, twitch: {} } } },
    (r) => {
      expect(r.oauth.provider.twitch).not.toBeNull();
      expect(r.oauth.provider.github).toBeNull();
    },
  ],
  [
    "saml metadata with a namespace prefix",
    { saml: { idp_metadata: '<md:EntityDescriptor xmlns:md="x"/>' } },
    (r) => expect(r.saml.idp_metadata).toBe('<md:EntityDescriptor xmlns:md="x"/>'),
  ],
  [
    "webhook provider in upper case, returned lower",
    { webhook_verification: { provider: "SLACK", secret: "s" } },
    (r) => expect(r.webhook_verification.provider).toBe("slack"),
  ],
  [
    "description and metadata with multi-byte text kept verbatim",
    { description: "日本語 ✓ 😀", metadata: '{"ü":"ß"}' },
    (r) => {
      expect(r.description).toBe("日本語 ✓ 😀");
      expect(r.metadata).toBe('{"ü":"ß"}');
    },
  ],
];

describe.each(FIXTURES)("validation and PATCH %s", (_name, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge()).id;
  });
  afterAll(async () => {
    await fx.close();
  });

  describe("create rejects, naming the exact field, storing nothing", () => {
    it.each(INVALID)("%s", async (_n, extra, field, code) => {
      const body = { match_type: "exact_path", match: uniqueMatch("v"), ...extra };
      await expectRejected(fx, {
        method: "POST",
        path: `/edges/https/${edgeId}/routes`,
        body,
        status: 400,
        code,
        field,
      });
      // The typed client surfaces the same field.
      await expectApiError(fx.client.createRoute(edgeId, body as never), 400, code, field);
    });
  });

  describe("PATCH rejects the same bodies, naming the same field, changing nothing", () => {
    let routeId: string;
    beforeAll(async () => {
      routeId = (
        await fx.client.createRoute(edgeId, {
          match_type: "exact_path",
          match: uniqueMatch("patch-target"),
          description: "before",
          circuit_breaker: { num_buckets: 3 },
        })
      ).id;
    });
    const patchable = INVALID.filter(
      ([, extra]) => !("match_type" in extra && extra.match_type === undefined),
    )
      .filter(([, extra]) => !("match" in extra && extra.match === undefined))
      // docs/decisions.md#patch: `match: ""` means "unchanged" (tested below), not a bad value.
      .filter(([, extra]) => !("match" in extra && extra.match === ""));
    it.each(patchable)("%s", async (_n, extra, field, code) => {
      await expectRejected(fx, {
        method: "PATCH",
        path: `/edges/https/${edgeId}/routes/${routeId}`,
        body: { description: "would change", ...extra },
        status: 400,
        code,
        field,
      });
    });
    it("the route is untouched", async () => {
      const route = await fx.client.getRoute(edgeId, routeId);
      expect(route.description).toBe("before");
      expect(route.circuit_breaker!.num_buckets).toBe(3);
    });
  });

  describe("boundary values are accepted", () => {
    it.each(VALID)("%s", async (_n, extra, check) => {
      const res = await raw(fx.transport, "POST", `/edges/https/${edgeId}/routes`, {
        body: { match_type: "path_prefix", match: uniqueMatch("ok"), ...extra },
      });
      if (res.status !== 201) throw new Error(`expected 201, got ${res.status}: ${res.text}`);
      check(res.json);
      const got = await raw(fx.transport, "GET", `/edges/https/${edgeId}/routes/${res.json.id}`);
      check(got.json);
    });

    it("every supported webhook provider is accepted (sns without a secret, the others with one)", async () => {
      const route = await fx.client.createRoute(edgeId, {
        match_type: "exact_path",
        match: uniqueMatch("wh"),
      });
      expect(WEBHOOK_PROVIDERS.length).toBe(69);
      for (const provider of WEBHOOK_PROVIDERS) {
        const body = provider === "sns" ? { provider } : { provider: provider.toUpperCase(), secret: "s" };
        const put = await raw(
          fx.transport,
          "PUT",
          `/edges/https/${edgeId}/routes/${route.id}/webhook_verification`,
          {
            body,
          },
        );
        expect([provider, put.status, put.json.provider]).toEqual([provider, 200, provider]);
      }
    });
  });

  it("a bad header name is reported as such, at the key's path", async () => {
    const res = await expectRejected(fx, {
      method: "POST",
      path: `/edges/https/${edgeId}/routes`,
      body: { match_type: "exact_path", match: "/h", request_headers: { add: { "Bad Header": "1" } } },
      status: 400,
      code: V,
      field: 'request_headers.add["Bad Header"]',
    });
    expect(res.json.msg).toBe('request_headers.add["Bad Header"]: is not a valid HTTP header name');
  });

  describe("several problems at once", () => {
    it("lists every problem, one message each; field is the first", async () => {
      const res = await expectRejected(fx, {
        method: "POST",
        path: `/edges/https/${edgeId}/routes`,
        body: {
          match_type: "exact_path",
          match: "",
          description: 5,
          circuit_breaker: { num_buckets: 500 },
        },
        status: 400,
        code: V,
        field: "match",
      });
      expect(res.json.details.problems.map((p: any) => p.field)).toEqual([
        "match",
        "description",
        "circuit_breaker.num_buckets",
      ]);
      for (const p of res.json.details.problems) expect(typeof p.msg).toBe("string");
      const err = await expectApiError(
        fx.client.createRoute(edgeId, { match_type: "exact_path", match: "", description: 5 } as never),
        400,
        V,
        "match",
      );
      expect(err.problems.map((p) => p.field)).toEqual(["match", "description"]);
    });
  });

  describe("PATCH semantics", () => {
    const full = {
      description: "desc",
      metadata: "meta",
      backend: { backend_id: "bkd_1" },
      circuit_breaker: {
        tripped_duration: 10,
        rolling_window: 20,
        num_buckets: 5,
        error_threshold_percentage: 0.5,
      },
      request_headers: { add: { "X-A": "1", "X-B": "2" }, remove: ["X-C"] },
      oauth: {
        provider: { github: { client_id: "i", client_secret: "s", organizations: ["acme"] } },
        cookie_prefix: "c.",
        auth_check_interval: 60,
      },
    };
    const create = () =>
      fx.client.createRoute(edgeId, { match_type: "path_prefix", match: uniqueMatch("ps"), ...full });
    const patch = (id: string, body: unknown) =>
      raw(fx.transport, "PATCH", `/edges/https/${edgeId}/routes/${id}`, { body });

    it("an empty PATCH or null modules change nothing", async () => {
      const route = await create();
      const before = await storeFingerprint(fx.store);
      const empty = await patch(route.id, {});
      expect(empty.status).toBe(200);
      expect(empty.json).toEqual(route);
      const nulls = await patch(route.id, {
        backend: null,
        circuit_breaker: null,
        request_headers: null,
        oauth: null,
        compression: null,
      });
      expect(nulls.status).toBe(200);
      expect(nulls.json).toEqual(route);
      expect(await storeFingerprint(fx.store)).toBe(before);
    });

    it("a present module replaces the whole module: inner fields not sent are gone or back to defaults", async () => {
      const route = await create();
      const res = await patch(route.id, {
        circuit_breaker: { rolling_window: 7 },
        request_headers: { remove: ["X-Only"] },
        oauth: { provider: { google: {} } },
      });
      expect(res.status).toBe(200);
      expect(res.json.circuit_breaker).toMatchObject({
        enabled: true,
        tripped_duration: 0,
        rolling_window: 7,
        num_buckets: 0,
        volume_threshold: 0,
        error_threshold_percentage: 0,
      });
      expect(res.json.request_headers).toMatchObject({ enabled: true, add: {}, remove: ["X-Only"] });
      expect(res.json.oauth.provider.github).toBeNull();
      expect(res.json.oauth.provider.google).toMatchObject({
        client_id: "",
        client_secret: "",
        scopes: [],
        email_addresses: [],
        email_domains: [],
      });
      expect(res.json.oauth.cookie_prefix).toBe("edge.");
      expect(res.json.oauth.auth_check_interval).toBe(0);
      // Absent modules and fields are untouched.
      expect(res.json.backend).toEqual(route.backend);
      expect(res.json.description).toBe("desc");
      expect(res.json.metadata).toBe("meta");
      expect(res.json.match).toBe(route.match);
      expect(await fx.client.getRoute(edgeId, route.id)).toEqual(res.json);
    });

    it("enabled: false can be set and is dropped again by a replacement that omits it", async () => {
      const route = await create();
      const off = await patch(route.id, { backend: { backend_id: "bkd_2", enabled: false } });
      expect(off.json.backend).toEqual({
        enabled: false,
        backend: { id: "bkd_2", uri: `${fx.baseUrl}/backends/bkd_2` },
      });
      const on = await patch(route.id, { backend: { backend_id: "bkd_2" } });
      expect(on.json.backend.enabled).toBe(true);
    });

    it('description "" and metadata "" clear; absent keeps; other fields patch', async () => {
      const route = await create();
      const cleared = await patch(route.id, { description: "" });
      expect(cleared.json.description).toBe("");
      expect(cleared.json.metadata).toBe("meta");
      const both = await patch(route.id, { metadata: "" });
      expect(both.json.description).toBe("");
      expect(both.json.metadata).toBe("");
      const moved = await patch(route.id, {
        match_type: "exact_path",
        match: "/moved/here",
        description: "new",
      });
      expect(moved.json).toMatchObject({
        match_type: "exact_path",
        match: "/moved/here",
        description: "new",
      });
      expect(moved.json.id).toBe(route.id);
      expect(moved.json.created_at).toBe(route.created_at);
      expect(moved.json.backend).toEqual(route.backend);
      expect(await fx.client.getRoute(edgeId, route.id)).toEqual(moved.json);
    });

    it("a module absent before is added by PATCH; a module cannot be deleted by PATCH", async () => {
      const route = await create();
      const res = await patch(route.id, { traffic_policy: { value: "p" }, backend: null });
      expect(res.json.traffic_policy).toMatchObject({ enabled: true, value: "p" });
      expect(res.json.backend).toEqual(route.backend);
      // The separate delete-module operation does delete it.
      await fx.client.deleteRouteModule(edgeId, route.id, "backend");
      expect((await fx.client.getRoute(edgeId, route.id)).backend).toBeNull();
    });

    describe("PATCH to unknown route / edge → 404, nothing stored", () => {
      let ids: { edge: string; route: string };
      beforeAll(async () => {
        ids = { edge: edgeId, route: (await create()).id };
      });
      it.each<Rejection>([
        {
          case: "an unknown route",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/edghtsrt_nope",
          body: { description: "x" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a route through an unknown edge",
          method: "PATCH",
          path: "/edges/https/edghts_nope/routes/{route}",
          body: { description: "x" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });
  });

  describe("compatibility with the real API's published clients (docs/decisions.md)", () => {
    let routeId: string;
    let tlsId: string;
    const routePath = () => `/edges/https/${edgeId}/routes/${routeId}`;
    beforeAll(async () => {
      const route = await fx.client.createRoute(edgeId, {
        match_type: "path_prefix",
        match: uniqueMatch("compat"),
        description: "compat",
        backend: { backend_id: "bkd_compat" },
      });
      routeId = route.id;
      tlsId = (await fx.client.createTlsEdge()).id;
    });

    it("route create: edge_id equal to the path is ignored", async () => {
      const res = await raw(fx.transport, "POST", `/edges/https/${edgeId}/routes`, {
        body: { edge_id: edgeId, match_type: "exact_path", match: uniqueMatch("echo") },
      });
      expect(res.status).toBe(201);
      expect(res.json.edge_id).toBe(edgeId);
    });

    // [name, method, path, body, field at fault, error code]
    const mismatches: Array<[string, string, () => string, () => unknown, string, string]> = [
      [
        "create: edge_id of another edge",
        "POST",
        () => `/edges/https/${edgeId}/routes`,
        () => ({ edge_id: "edghts_other", match_type: "exact_path", match: uniqueMatch("x") }),
        "edge_id",
        V,
      ],
      [
        "create: id is not a create field",
        "POST",
        () => `/edges/https/${edgeId}/routes`,
        () => ({ id: routeId, match_type: "exact_path", match: uniqueMatch("x") }),
        "id",
        U,
      ],
      [
        "create: edge_id not a string",
        "POST",
        () => `/edges/https/${edgeId}/routes`,
        () => ({ edge_id: 7, match_type: "exact_path", match: uniqueMatch("x") }),
        "edge_id",
        V,
      ],
      [
        "update: edge_id of another edge",
        "PATCH",
        routePath,
        () => ({ edge_id: "edghts_other", description: "no" }),
        "edge_id",
        V,
      ],
      [
        "update: id of another route",
        "PATCH",
        routePath,
        () => ({ edge_id: edgeId, id: "edghtsrt_other", description: "no" }),
        "id",
        V,
      ],
      [
        "wrapped module: id of another route",
        "PUT",
        () => `${routePath()}/backend`,
        () => ({ edge_id: edgeId, id: "edghtsrt_other", module: { backend_id: "b" } }),
        "id",
        V,
      ],
      [
        "wrapped module: edge_id of another edge",
        "PUT",
        () => `${routePath()}/compression`,
        () => ({ edge_id: "edghts_other", module: {} }),
        "edge_id",
        V,
      ],
      [
        "wrapped module: bad inner field, named with its path",
        "PUT",
        () => `${routePath()}/circuit_breaker`,
        () => ({ module: { num_buckets: 500 } }),
        "module.num_buckets",
        V,
      ],
      [
        "wrapped module: unknown key beside module",
        "PUT",
        () => `${routePath()}/compression`,
        () => ({ module: {}, route_id: "x" }),
        "route_id",
        U,
      ],
      [
        "bare module: unknown field is still refused",
        "PUT",
        () => `${routePath()}/compression`,
        () => ({ enabeld: true }),
        "enabeld",
        U,
      ],
      [
        "bare module: bad field is named as before",
        "PUT",
        () => `${routePath()}/backend`,
        () => ({ backend_id: "" }),
        "backend_id",
        V,
      ],
      [
        "TLS wrapped: id of another edge",
        "PUT",
        () => `/edges/tls/${tlsId}/ip_restriction`,
        () => ({ id: "edgtls_other", module: { ip_policy_ids: ["ipp_1"] } }),
        "id",
        V,
      ],
      [
        "TLS wrapped: edge_id is not a field of it",
        "PUT",
        () => `/edges/tls/${tlsId}/ip_restriction`,
        () => ({ edge_id: tlsId, module: { ip_policy_ids: ["ipp_1"] } }),
        "edge_id",
        U,
      ],
      [
        "update: match_type still checked when not empty",
        "PATCH",
        routePath,
        () => ({ match_type: "regex" }),
        "match_type",
        V,
      ],
    ];
    it.each(mismatches)(
      "%s → 400 naming the field, nothing changed",
      async (_n, method, path, body, field, code) => {
        const res = await expectRejected(fx, {
          method,
          path: path(),
          body: body(),
          status: 400,
          code,
          field,
        });
        expect(res.json.msg).toContain(field);
      },
    );

    it("update: edge_id and id equal to the path are ignored", async () => {
      const res = await raw(fx.transport, "PATCH", routePath(), {
        body: { edge_id: edgeId, id: routeId, description: "echoed" },
      });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ id: routeId, edge_id: edgeId, description: "echoed" });
    });

    it('update: match_type "" and match "" (the Python client\'s "not given") leave both unchanged', async () => {
      const before = await fx.client.getRoute(edgeId, routeId);
      const res = await raw(fx.transport, "PATCH", routePath(), {
        body: { match_type: "", match: "", description: "py", metadata: "" },
      });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        match_type: before.match_type,
        match: before.match,
        description: "py",
      });
      expect(res.json.backend).toEqual(before.backend);
    });

    // [module, wrapped body, expected response fields]
    const wrapped: Array<[string, (route: string) => Record<string, unknown>, Record<string, unknown>]> = [
      ["backend", (id) => ({ edge_id: edgeId, id, module: { backend_id: "bkd_w" } }), { enabled: true }],
      ["compression", () => ({ module: { enabled: false } }), { enabled: false }],
      ["circuit_breaker", (id) => ({ id, module: { num_buckets: 9 } }), { num_buckets: 9 }],
      ["traffic_policy", (id) => ({ edge_id: edgeId, id, module: { value: "p" } }), { value: "p" }],
      ["user_agent_filter", () => ({ module: { deny: ["bot"] } }), { deny: ["bot"] }],
    ];
    it.each(wrapped)("PUT %s in the wrapped form = the bare form", async (name, body, expected) => {
      const res = await raw(fx.transport, "PUT", `${routePath()}/${name}`, { body: body(routeId) });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject(expected);
      const bare = await raw(fx.transport, "PUT", `${routePath()}/${name}`, {
        body: body(routeId).module,
      });
      expect(bare.json).toEqual(res.json);
    });

    it("PUT the TLS ip_restriction in the wrapped form", async () => {
      const res = await raw(fx.transport, "PUT", `/edges/tls/${tlsId}/ip_restriction`, {
        body: { id: tlsId, module: { ip_policy_ids: ["ipp_w"] } },
      });
      expect(res.status).toBe(200);
      expect(res.json.ip_policies.map((r: { id: string }) => r.id)).toEqual(["ipp_w"]);
    });

    // Modules whose fields are all optional take a PUT with no body at all as {}.
    const emptyOk = [
      "compression",
      "websocket_tcp_converter",
      "circuit_breaker",
      "request_headers",
      "response_headers",
      "user_agent_filter",
    ];
    it.each(emptyOk)("PUT %s with no body (no bytes, no content type) = {}", async (name) => {
      const res = await raw(fx.transport, "PUT", `${routePath()}/${name}`);
      expect(res.status).toBe(200);
      const braces = await raw(fx.transport, "PUT", `${routePath()}/${name}`, { body: {} });
      expect(res.json).toEqual(braces.json);
    });
    const emptyNotOk: Array<[string, () => string]> = [
      ["backend (backend_id is required)", () => `${routePath()}/backend`],
      ["oauth (provider is required)", () => `${routePath()}/oauth`],
      ["TLS ip_restriction (ip_policy_ids is required)", () => `/edges/tls/${tlsId}/ip_restriction`],
      ["a route create", () => `/edges/https/${edgeId}/routes`],
    ];
    it.each(emptyNotOk)("no body on %s is still 415", async (_n, path) => {
      const method = path().endsWith("/routes") ? "POST" : "PUT";
      await expectRejected(fx, {
        method,
        path: path(),
        status: 415,
        code: E.unsupportedMediaType.code,
        field: null,
      });
    });
    it("bytes without a content type are still 415, even where no body means {}", async () => {
      await expectRejected(fx, {
        method: "PUT",
        path: `${routePath()}/compression`,
        body: "{}",
        contentType: null,
        status: 415,
        code: E.unsupportedMediaType.code,
        field: null,
      });
    });

    // [name, method, path with query, parameter named]
    const queries: Array<[string, string, () => string, string]> = [
      [
        "beforeId (camelCase) on the routes list",
        "GET",
        () => `/edges/https/${edgeId}/routes?beforeId=${routeId}`,
        "beforeId",
      ],
      ["a typo on the HTTPS edges list", "GET", () => "/edges/https?limt=5", "limt"],
      [
        "any parameter on the TLS edges list but limit and before_id",
        "GET",
        () => "/edges/tls?limit=5&page=2",
        "page",
      ],
      ["a parameter on a GET that takes none", "GET", () => `${routePath()}?expand=modules`, "expand"],
      ["a parameter on a module GET", "GET", () => `${routePath()}/backend?x=1`, "x"],
      ["a parameter on a DELETE", "DELETE", () => `${routePath()}?force=true`, "force"],
      ["limit given twice", "GET", () => "/edges/https?limit=1&limit=2", "limit"],
      ["limit out of range (as before)", "GET", () => "/edges/https?limit=101", "limit"],
    ];
    it.each(queries)("query: %s → 400 naming the parameter", async (_n, method, path, param) => {
      const code = param === "limit" ? V : U;
      const res = await expectRejected(fx, { method, path: path(), status: 400, code, field: param });
      expect(res.json.msg).toContain(param);
    });
    it("query parameters on a write are refused before anything is written", async () => {
      const patch = { method: "PATCH", path: `${routePath()}?dry_run=1`, body: { description: "q" } };
      await expectRejected(fx, { ...patch, status: 400, code: U, field: "dry_run" });
      await expectRejected(fx, {
        method: "POST",
        path: "/edges/https?x=1",
        body: {},
        status: 400,
        code: U,
        field: "x",
      });
    });
    it("the list parameters still work", async () => {
      const res = await raw(fx.transport, "GET", `/edges/https/${edgeId}/routes?limit=1`);
      expect(res.status).toBe(200);
      expect(res.json.routes).toHaveLength(1);
    });
  });
});
