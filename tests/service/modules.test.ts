/**
 * The 13 route modules: per-module sub-resources (PUT / GET / DELETE, 404 when not configured),
 * response shapes with defaults, header-map key case, SAML computed fields and certificate,
 * and the one-auth-module rule through module PUT — over real HTTP and in-process.
 */
import * as crypto from "node:crypto";
import {
  DEFAULT_NAMEID_FORMAT,
  ERROR_CODES,
  NAMEID_FORMATS,
  OAUTH_PROVIDER_KEYS,
  ROUTE_MODULE_NAMES,
  type RouteModuleName,
} from "../../sdk/contract";
import {
  COMPATIBLE_MODULES,
  expectApiError,
  expectRejected,
  FIXTURES,
  type Fixture,
  IDP_METADATA,
  moduleSample,
  raw,
  SESSION_DEFAULTS,
  uniqueMatch,
} from "./helpers";

const E = ERROR_CODES;

describe.each(FIXTURES)("route modules %s", (_name, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge()).id;
  });
  afterAll(async () => {
    await fx.close();
  });

  const newRoute = (extra: Record<string, unknown> = {}) =>
    fx.client.createRoute(edgeId, { match_type: "path_prefix", match: uniqueMatch("mod"), ...extra });

  it("there are exactly the 13 modules of the contract", () => {
    expect(ROUTE_MODULE_NAMES).toEqual([
      "backend",
      "ip_restriction",
      "circuit_breaker",
      "compression",
      "request_headers",
      "response_headers",
      "webhook_verification",
      "oauth",
      "saml",
      "oidc",
      "websocket_tcp_converter",
      "user_agent_filter",
      "traffic_policy",
    ]);
  });

  describe.each(ROUTE_MODULE_NAMES.map((m) => [m]))("sub-resource %s", (module: RouteModuleName) => {
    it("GET and DELETE → 404 while not configured; PUT → 200; GET → 200; DELETE → 204; then 404 again", async () => {
      const route = await newRoute();
      const path = `/edges/https/${edgeId}/routes/${route.id}/${module}`;
      const sample = moduleSample(module, fx.baseUrl, route.id);

      await expectRejected(fx, "GET", path, {}, 404, E.notFound.code, null);
      await expectRejected(fx, "DELETE", path, {}, 404, E.notFound.code, null);

      const put = await raw(fx.transport, "PUT", path, { body: sample.request });
      expect(put.status).toBe(200);
      expect(put.json).toEqual(sample.response);

      const get = await raw(fx.transport, "GET", path);
      expect(get.status).toBe(200);
      expect(get.json).toEqual(put.json);

      const full = await fx.client.getRoute(edgeId, route.id);
      expect(full[module]).toEqual(put.json);
      for (const other of ROUTE_MODULE_NAMES) if (other !== module) expect(full[other]).toBeNull();

      // The typed client reads the same module.
      expect(await fx.client.getRouteModule(edgeId, route.id, module)).toEqual(put.json);

      const del = await raw(fx.transport, "DELETE", path);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");
      await expectRejected(fx, "GET", path, {}, 404, E.notFound.code, null);
      await expectRejected(fx, "DELETE", path, {}, 404, E.notFound.code, null);
      expect((await fx.client.getRoute(edgeId, route.id))[module]).toBeNull();
    });

    it("PUT replaces the module whole and rejects unknown fields without storing", async () => {
      const route = await newRoute();
      const path = `/edges/https/${edgeId}/routes/${route.id}/${module}`;
      const sample = moduleSample(module, fx.baseUrl, route.id);
      await fx.client.putRouteModule(edgeId, route.id, module, sample.request as never);
      await expectRejected(
        fx,
        "PUT",
        path,
        { body: { ...sample.request, surprise: 1 } },
        400,
        E.unknownField.code,
        "surprise",
      );
      const disabled = await raw(fx.transport, "PUT", path, { body: { ...sample.request, enabled: false } });
      expect(disabled.status).toBe(200);
      expect(disabled.json).toEqual({ ...sample.response, enabled: false });
      // Omitting enabled again brings back the default (true): the PUT is a whole replacement.
      const again = await raw(fx.transport, "PUT", path, { body: { ...sample.request, enabled: undefined } });
      expect(again.json.enabled).toBe(true);
      await expectRejected(
        fx,
        "PUT",
        path,
        { body: { ...sample.request, enabled: 1 } },
        400,
        E.validation.code,
        "enabled",
      );
      // Module PUT on a route that does not exist.
      await expectRejected(
        fx,
        "PUT",
        `/edges/https/${edgeId}/routes/edghtsrt_missing/${module}`,
        { body: sample.request },
        404,
        E.notFound.code,
        null,
      );
    });
  });

  it("module PUT validation names the field relative to the module body", async () => {
    const route = await newRoute();
    const base = `/edges/https/${edgeId}/routes/${route.id}`;
    await expectRejected(
      fx,
      "PUT",
      `${base}/circuit_breaker`,
      { body: { num_buckets: 129 } },
      400,
      E.validation.code,
      "num_buckets",
    );
    await expectRejected(
      fx,
      "PUT",
      `${base}/oauth`,
      { body: { provider: { github: { client_id: "id" } } } },
      400,
      E.validation.code,
      "provider.github.client_secret",
    );
    await expectRejected(
      fx,
      "PUT",
      `${base}/webhook_verification`,
      { body: { provider: "stripe" } },
      400,
      E.validation.code,
      "secret",
    );
    await expectRejected(
      fx,
      "PUT",
      `${base}/traffic_policy`,
      { body: { value: "" } },
      400,
      E.validation.code,
      "value",
    );
    await expectRejected(fx, "PUT", `${base}/backend`, { body: {} }, 400, E.validation.code, "backend_id");
  });

  it("a route with every compatible module at once returns each in full", async () => {
    const body: Record<string, unknown> = {};
    for (const m of COMPATIBLE_MODULES) body[m] = moduleSample(m, fx.baseUrl, "x").request;
    const route = await newRoute(body);
    for (const m of COMPATIBLE_MODULES)
      expect(route[m]).toEqual(moduleSample(m, fx.baseUrl, route.id).response);
    expect(route.oauth).toBeNull();
    expect(route.oidc).toBeNull();
    expect(await fx.client.getRoute(edgeId, route.id)).toEqual(route);
  });

  describe("defaults and zero values", () => {
    it("circuit breaker: all zero values, enabled true", async () => {
      const route = await newRoute({ circuit_breaker: {} });
      expect(route.circuit_breaker).toEqual({
        enabled: true,
        tripped_duration: 0,
        rolling_window: 0,
        num_buckets: 0,
        volume_threshold: 0,
        error_threshold_percentage: 0,
      });
    });

    it("headers, user agent filter, compression, websocket converter", async () => {
      const route = await newRoute({
        request_headers: {},
        response_headers: { enabled: false },
        user_agent_filter: {},
        compression: {},
        websocket_tcp_converter: {},
      });
      expect(route.request_headers).toEqual({ enabled: true, add: {}, remove: [] });
      expect(route.response_headers).toEqual({ enabled: false, add: {}, remove: [] });
      expect(route.user_agent_filter).toEqual({ enabled: true, allow: [], deny: [] });
      expect(route.compression).toEqual({ enabled: true });
      expect(route.websocket_tcp_converter).toEqual({ enabled: true });
    });

    it("oauth on every provider slot: zero values and cookie_prefix edge.", async () => {
      for (const key of OAUTH_PROVIDER_KEYS) {
        const route = await newRoute({ oauth: { provider: { [key]: {} } } });
        const slots: Record<string, unknown> = {};
        for (const k of OAUTH_PROVIDER_KEYS) slots[k] = null;
        slots[key] = {
          client_id: "",
          client_secret: "",
          scopes: [],
          email_addresses: [],
          email_domains: [],
          ...(key === "github" ? { teams: [], organizations: [] } : {}),
        };
        expect(route.oauth).toEqual({
          enabled: true,
          provider: slots,
          ...SESSION_DEFAULTS,
          auth_check_interval: 0,
        });
      }
    });

    it("oauth with own app: secrets echoed, scopes kept, session fields as sent", async () => {
      const route = await newRoute({
        oauth: {
          enabled: false,
          provider: {
            github: {
              client_id: "gh_id",
              client_secret: "gh_secret",
              scopes: ["read:org", "user:email"],
              email_addresses: ["a@example.com"],
              email_domains: ["example.com"],
              teams: ["acme/devs"],
              organizations: ["acme"],
            },
          },
          options_passthrough: true,
          cookie_prefix: "my.",
          inactivity_timeout: 4294967295,
          maximum_duration: 86400,
          auth_check_interval: 300,
        },
      });
      expect(route.oauth).toEqual({
        enabled: false,
        provider: {
          github: {
            client_id: "gh_id",
            client_secret: "gh_secret",
            scopes: ["read:org", "user:email"],
            email_addresses: ["a@example.com"],
            email_domains: ["example.com"],
            teams: ["acme/devs"],
            organizations: ["acme"],
          },
          facebook: null,
          microsoft: null,
          google: null,
          linkedin: null,
          gitlab: null,
          twitch: null,
          amazon: null,
        },
        options_passthrough: true,
        cookie_prefix: "my.",
        inactivity_timeout: 4294967295,
        maximum_duration: 86400,
        auth_check_interval: 300,
      });
    });

    it("oidc defaults and scopes", async () => {
      const route = await newRoute({
        oidc: { issuer: "https://id.example.com/", client_id: "c", client_secret: "s", scopes: ["openid"] },
      });
      expect(route.oidc).toEqual({
        enabled: true,
        ...SESSION_DEFAULTS,
        issuer: "https://id.example.com/",
        client_id: "c",
        client_secret: "s",
        scopes: ["openid"],
      });
    });

    it("saml: nameid_format defaults to persistent; every supported format is accepted", async () => {
      const route = await newRoute({ saml: { idp_metadata: IDP_METADATA } });
      expect(route.saml!.nameid_format).toBe(DEFAULT_NAMEID_FORMAT);
      expect(DEFAULT_NAMEID_FORMAT).toBe("urn:oasis:names:tc:SAML:2.0:nameid-format:persistent");
      expect(route.saml!.cookie_prefix).toBe("edge.");
      for (const format of NAMEID_FORMATS) {
        const r = await newRoute({ saml: { idp_metadata: IDP_METADATA, nameid_format: format } });
        expect(r.saml!.nameid_format).toBe(format);
      }
    });

    it("webhook verification: provider matched case-insensitively and returned lowercase; sns without secret", async () => {
      const route = await newRoute({ webhook_verification: { provider: "StRiPe", secret: "s1" } });
      expect(route.webhook_verification).toEqual({ enabled: true, provider: "stripe", secret: "s1" });
      const sns = await newRoute({ webhook_verification: { provider: "SNS" } });
      expect(sns.webhook_verification).toEqual({ enabled: true, provider: "sns", secret: "" });
      const put = await fx.client.putRouteModule(edgeId, route.id, "webhook_verification", {
        provider: "MICROSOFT_TEAMS",
        secret: "s2",
      });
      expect(put).toEqual({ enabled: true, provider: "microsoft_teams", secret: "s2" });
    });
  });

  describe("header maps keep the key case exactly", () => {
    it("on create, PATCH and module PUT, through both header modules", async () => {
      const add = { "X-Foo": "1", "x-lower": "2", "X-UPPER-CASE": "3", "Content-MD5": "4" };
      const route = await newRoute({ request_headers: { add, remove: ["X-Remove-Me", "cookie"] } });
      expect(route.request_headers).toEqual({ enabled: true, add, remove: ["X-Remove-Me", "cookie"] });
      expect(Object.keys(route.request_headers!.add)).toEqual(Object.keys(add));

      const patched = await fx.client.updateRoute(edgeId, route.id, {
        response_headers: { add: { "X-Foo": "a" } },
      });
      expect(Object.keys(patched.response_headers!.add)).toEqual(["X-Foo"]);

      const put = await raw(
        fx.transport,
        "PUT",
        `/edges/https/${edgeId}/routes/${route.id}/response_headers`,
        {
          body: { add: { "Strict-Transport-Security": "max-age=1" } },
        },
      );
      expect(put.json.add).toEqual({ "Strict-Transport-Security": "max-age=1" });
      const got = await raw(fx.transport, "GET", `/edges/https/${edgeId}/routes/${route.id}`);
      expect(got.json.request_headers.add).toEqual(add);
      expect(got.json.response_headers.add).toEqual({ "Strict-Transport-Security": "max-age=1" });
      expect(got.text).toContain('"X-UPPER-CASE":"3"');
    });

    it("two keys differing only by case → 400 naming the second key; nothing stored", async () => {
      const route = await newRoute();
      await expectRejected(
        fx,
        "PUT",
        `/edges/https/${edgeId}/routes/${route.id}/request_headers`,
        { body: { add: { "X-Foo": "1", "x-foo": "2" } } },
        400,
        E.validation.code,
        'add["x-foo"]',
      );
      await expectRejected(
        fx,
        "PATCH",
        `/edges/https/${edgeId}/routes/${route.id}`,
        { body: { response_headers: { add: { "X-Bar": "1", "X-BAR": "2" } } } },
        400,
        E.validation.code,
        'response_headers.add["X-BAR"]',
      );
      expect((await fx.client.getRoute(edgeId, route.id)).request_headers).toBeNull();
    });
  });

  describe("SAML computed fields", () => {
    it("urls per route, a real certificate, stable across reads, replacement and re-configuration", async () => {
      const route = await newRoute({ saml: { idp_metadata: IDP_METADATA, force_authn: true } });
      const saml = route.saml!;
      const base = `${fx.baseUrl}/saml/${route.id}`;
      expect(saml.entity_id).toBe(`${base}/metadata`);
      expect(saml.metadata_url).toBe(`${base}/metadata`);
      expect(saml.assertion_consumer_service_url).toBe(`${base}/acs`);
      expect(saml.single_logout_url).toBe(`${base}/slo`);
      expect(saml.force_authn).toBe(true);

      const cert = new crypto.X509Certificate(saml.request_signing_certificate_pem);
      expect(cert.verify(cert.publicKey)).toBe(true); // self-signed
      expect(cert.subject).toBe(cert.issuer);
      expect(new Date(cert.validTo).getTime()).toBeGreaterThan(Date.now());
      expect(new Date(cert.validFrom).getTime()).toBeLessThanOrEqual(Date.now());

      const pem = saml.request_signing_certificate_pem;
      expect((await fx.client.getRoute(edgeId, route.id)).saml!.request_signing_certificate_pem).toBe(pem);
      expect((await fx.client.getRouteModule(edgeId, route.id, "saml")).request_signing_certificate_pem).toBe(
        pem,
      );
      const list = await fx.client.listRoutes(edgeId);
      expect(list.routes.find((r) => r.id === route.id)!.saml!.request_signing_certificate_pem).toBe(pem);
      const edge = await fx.client.getHttpsEdge(edgeId);
      expect(edge.routes.find((r) => r.id === route.id)!.saml!.request_signing_certificate_pem).toBe(pem);

      // Replacing the module keeps the route's key pair; so does deleting and configuring it again.
      const replaced = await fx.client.updateRoute(edgeId, route.id, {
        saml: { idp_metadata: IDP_METADATA, allow_idp_initiated: true },
      });
      expect(replaced.saml!.force_authn).toBe(false);
      expect(replaced.saml!.allow_idp_initiated).toBe(true);
      expect(replaced.saml!.request_signing_certificate_pem).toBe(pem);
      await fx.client.deleteRouteModule(edgeId, route.id, "saml");
      const again = await fx.client.putRouteModule(edgeId, route.id, "saml", { idp_metadata: IDP_METADATA });
      expect(again.request_signing_certificate_pem).toBe(pem);

      // Another route has its own certificate and urls.
      const other = await newRoute({ saml: { idp_metadata: IDP_METADATA } });
      expect(other.saml!.request_signing_certificate_pem).not.toBe(pem);
      expect(new crypto.X509Certificate(other.saml!.request_signing_certificate_pem).serialNumber).not.toBe(
        cert.serialNumber,
      );
      expect(other.saml!.entity_id).toBe(`${fx.baseUrl}/saml/${other.id}/metadata`);
    });

    it("read-only SAML fields are refused in requests", async () => {
      const route = await newRoute();
      for (const field of [
        "entity_id",
        "metadata_url",
        "assertion_consumer_service_url",
        "single_logout_url",
        "request_signing_certificate_pem",
      ]) {
        await expectRejected(
          fx,
          "PUT",
          `/edges/https/${edgeId}/routes/${route.id}/saml`,
          { body: { idp_metadata: IDP_METADATA, [field]: "x" } },
          400,
          E.unknownField.code,
          field,
        );
      }
    });
  });

  describe("at most one of oauth, oidc, saml", () => {
    const auth = {
      oauth: { provider: { google: {} } },
      oidc: { issuer: "https://id.example.com", client_id: "c", client_secret: "s" },
      saml: { idp_metadata: IDP_METADATA },
    } as const;

    it.each([
      ["oauth", "oidc"],
      ["oauth", "saml"],
      ["oidc", "saml"],
      ["oidc", "oauth"],
      ["saml", "oauth"],
      ["saml", "oidc"],
    ] as const)("route with %s: module PUT of %s → 400 naming it, nothing stored", async (have, put) => {
      const route = await newRoute({ [have]: auth[have] });
      await expectRejected(
        fx,
        "PUT",
        `/edges/https/${edgeId}/routes/${route.id}/${put}`,
        { body: auth[put] },
        400,
        E.validation.code,
        put,
      );
      await expectRejected(
        fx,
        "PATCH",
        `/edges/https/${edgeId}/routes/${route.id}`,
        { body: { [put]: auth[put] } },
        400,
        E.validation.code,
        put,
      );
      // null for the present one does not delete it, so the PATCH is still refused.
      await expectRejected(
        fx,
        "PATCH",
        `/edges/https/${edgeId}/routes/${route.id}`,
        { body: { [have]: null, [put]: auth[put] } },
        400,
        E.validation.code,
        put,
      );
      const after = await fx.client.getRoute(edgeId, route.id);
      expect(after[put]).toBeNull();
      expect(after[have]).not.toBeNull();

      // After deleting the present one, the other is accepted; replacing the same one is fine too.
      await fx.client.deleteRouteModule(edgeId, route.id, have);
      const ok = await fx.client.putRouteModule(edgeId, route.id, put, auth[put] as never);
      expect(ok.enabled).toBe(true);
      const same = await fx.client.updateRoute(edgeId, route.id, { [put]: auth[put] });
      expect(same[put]).not.toBeNull();
    });

    it("two auth modules in one create → 400, nothing stored", async () => {
      for (const [a, b] of [
        ["oauth", "oidc"],
        ["oauth", "saml"],
        ["oidc", "saml"],
      ] as const) {
        await expectRejected(
          fx,
          "POST",
          `/edges/https/${edgeId}/routes`,
          { body: { match_type: "exact_path", match: uniqueMatch("auth"), [a]: auth[a], [b]: auth[b] } },
          400,
          E.validation.code,
          a,
        );
      }
      const all = await expectApiError(
        fx.client.createRoute(edgeId, {
          match_type: "exact_path",
          match: uniqueMatch("auth"),
          oauth: auth.oauth,
          oidc: auth.oidc,
          saml: auth.saml,
        }),
        400,
        E.validation.code,
        "oauth",
      );
      expect(all.msg).toMatch(/only one of oauth, oidc and saml/);
    });
  });
});
