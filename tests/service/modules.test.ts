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
  expectedModule,
  expectRejected,
  fillIds,
  FIXTURES,
  type Fixture,
  IDP_METADATA,
  moduleSample,
  raw,
  REJECTED,
  type Rejection,
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

      for (const method of ["GET", "DELETE"]) {
        await expectRejected(fx, { method, path, status: 404, code: E.notFound.code, field: null });
      }

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
      for (const method of ["GET", "DELETE"]) {
        await expectRejected(fx, { method, path, status: 404, code: E.notFound.code, field: null });
      }
      expect((await fx.client.getRoute(edgeId, route.id))[module]).toBeNull();
    });

    it("PUT replaces the module whole", async () => {
      const route = await newRoute();
      const path = `/edges/https/${edgeId}/routes/${route.id}/${module}`;
      const sample = moduleSample(module, fx.baseUrl, route.id);
      await fx.client.putRouteModule(edgeId, route.id, module, sample.request as never);
      const disabled = await raw(fx.transport, "PUT", path, { body: { ...sample.request, enabled: false } });
      expect(disabled.status).toBe(200);
      expect(disabled.json).toEqual({ ...sample.response, enabled: false });
      // Omitting enabled again brings back the default (true): the PUT is a whole replacement.
      const again = await raw(fx.transport, "PUT", path, { body: { ...sample.request, enabled: undefined } });
      expect(again.json.enabled).toBe(true);
    });

    describe("PUT rejects unknown fields and bad values without storing", () => {
      let ids: { edge: string; route: string };
      beforeAll(async () => {
        ids = { edge: edgeId, route: (await newRoute()).id };
        const { request } = moduleSample(module, fx.baseUrl, ids.route);
        await fx.client.putRouteModule(edgeId, ids.route, module, request as never);
      });
      // A sample's request depends on neither the base url nor the route.
      const { request } = moduleSample(module, "", "");
      it.each<Rejection>([
        {
          case: "an unknown field",
          method: "PUT",
          path: `/edges/https/{edge}/routes/{route}/${module}`,
          body: { ...request, surprise: 1 },
          status: 400,
          code: E.unknownField.code,
          field: "surprise",
        },
        {
          case: "enabled not a boolean",
          method: "PUT",
          path: `/edges/https/{edge}/routes/{route}/${module}`,
          body: { ...request, enabled: 1 },
          status: 400,
          code: E.validation.code,
          field: "enabled",
        },
        {
          case: "a route that does not exist",
          method: "PUT",
          path: `/edges/https/{edge}/routes/edghtsrt_missing/${module}`,
          body: request,
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });
  });

  describe("module PUT validation names the field relative to the module body", () => {
    let ids: { edge: string; route: string };
    beforeAll(async () => {
      ids = { edge: edgeId, route: (await newRoute()).id };
    });
    it.each<Rejection>([
      {
        case: "num_buckets 129",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/circuit_breaker",
        body: { num_buckets: 129 },
        status: 400,
        code: E.validation.code,
        field: "num_buckets",
      },
      {
        case: "an oauth client_id without its secret",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/oauth",
        body: { provider: { github: { client_id: "id" } } },
        status: 400,
        code: E.validation.code,
        field: "provider.github.client_secret",
      },
      {
        case: "stripe without a secret",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/webhook_verification",
        body: { provider: "stripe" },
        status: 400,
        code: E.validation.code,
        field: "secret",
      },
      {
        case: "an empty traffic policy",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/traffic_policy",
        body: { value: "" },
        status: 400,
        code: E.validation.code,
        field: "value",
      },
      {
        case: "backend_id missing",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/backend",
        body: {},
        status: 400,
        code: E.validation.code,
        field: "backend_id",
      },
    ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
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
    // The literal answers are pinned in module-golden.test.ts; here, through a route create.
    const expected = (m: RouteModuleName, request: unknown, routeId: string) =>
      expectedModule(m, request, fx.baseUrl, routeId);

    it("circuit breaker: all zero values, enabled true", async () => {
      const route = await newRoute({ circuit_breaker: {} });
      expect(route.circuit_breaker).toEqual(expected("circuit_breaker", {}, route.id));
      expect(route.circuit_breaker).toMatchObject({ enabled: true, num_buckets: 0, tripped_duration: 0 });
    });

    it("headers, user agent filter, compression, websocket converter", async () => {
      const modules = {
        request_headers: {},
        response_headers: { enabled: false },
        user_agent_filter: {},
        compression: {},
        websocket_tcp_converter: {},
      } as const;
      const route = await newRoute(modules);
      for (const [m, request] of Object.entries(modules) as Array<[RouteModuleName, unknown]>)
        expect(route[m]).toEqual(expected(m, request, route.id));
      expect(route.response_headers!.enabled).toBe(false);
      expect(route.compression!.enabled).toBe(true);
    });

    it("oauth on every provider slot: zero values and cookie_prefix edge.", async () => {
      for (const key of OAUTH_PROVIDER_KEYS) {
        const request = { provider: { [key]: {} } };
        const route = await newRoute({ oauth: request });
        expect(route.oauth).toEqual(expected("oauth", request, route.id));
        expect(route.oauth).toMatchObject({ enabled: true, ...SESSION_DEFAULTS, auth_check_interval: 0 });
        for (const k of OAUTH_PROVIDER_KEYS) expect(route.oauth!.provider[k] === null).toBe(k !== key);
      }
    });

    it("oauth with own app: secrets echoed, scopes kept, session fields as sent", async () => {
      const oauth = {
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
      };
      const route = await newRoute({ oauth });
      // Everything sent comes back as it was; the other slots are null.
      expect(route.oauth).toEqual(expected("oauth", oauth, route.id));
      expect(route.oauth).toMatchObject(oauth);
      expect(route.oauth!.provider.google).toBeNull();
    });

    it("oidc defaults and scopes", async () => {
      const oidc = {
        issuer: "https://id.example.com/",
        client_id: "c",
        client_secret: "s",
        scopes: ["openid"],
      };
      const route = await newRoute({ oidc });
      expect(route.oidc).toEqual(expected("oidc", oidc, route.id));
      expect(route.oidc).toMatchObject({ enabled: true, ...SESSION_DEFAULTS, ...oidc });
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
      expect(route.webhook_verification).toMatchObject({ enabled: true, provider: "stripe", secret: "s1" });
      const sns = await newRoute({ webhook_verification: { provider: "SNS" } });
      expect(sns.webhook_verification).toMatchObject({ enabled: true, provider: "sns", secret: "" });
      const teams = { provider: "MICROSOFT_TEAMS", secret: "s2" };
      const put = await fx.client.putRouteModule(edgeId, route.id, "webhook_verification", teams);
      expect(put).toEqual(expected("webhook_verification", teams, route.id));
      expect(put).toMatchObject({ enabled: true, provider: "microsoft_teams", secret: "s2" });
    });
  });

  describe("header maps keep the key case exactly", () => {
    it("on create, PATCH and module PUT, through both header modules", async () => {
      const add = { "X-Foo": "1", "x-lower": "2", "X-UPPER-CASE": "3", "Content-MD5": "4" };
      const route = await newRoute({ request_headers: { add, remove: ["X-Remove-Me", "cookie"] } });
      expect(route.request_headers).toMatchObject({ enabled: true, add, remove: ["X-Remove-Me", "cookie"] });
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

    describe("two keys differing only by case → 400 naming the second key; nothing stored", () => {
      let ids: { edge: string; route: string };
      beforeAll(async () => {
        ids = { edge: edgeId, route: (await newRoute()).id };
      });
      it.each<Rejection>([
        {
          case: "X-Foo and x-foo",
          method: "PUT",
          path: "/edges/https/{edge}/routes/{route}/request_headers",
          body: { add: { "X-Foo": "1", "x-foo": "2" } },
          status: 400,
          code: E.validation.code,
          field: 'add["x-foo"]',
        },
        {
          case: "X-Bar and X-BAR",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: { response_headers: { add: { "X-Bar": "1", "X-BAR": "2" } } },
          status: 400,
          code: E.validation.code,
          field: 'response_headers.add["X-BAR"]',
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
      it("the route still has no request headers", async () => {
        expect((await fx.client.getRoute(edgeId, ids.route)).request_headers).toBeNull();
      });
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

    describe("read-only SAML fields are refused in requests", () => {
      let ids: { edge: string; route: string };
      beforeAll(async () => {
        ids = { edge: edgeId, route: (await newRoute()).id };
      });
      it.each<Rejection>(
        [
          "entity_id",
          "metadata_url",
          "assertion_consumer_service_url",
          "single_logout_url",
          "request_signing_certificate_pem",
        ].map((field) => ({
          case: `read-only ${field}`,
          method: "PUT",
          path: "/edges/https/{edge}/routes/{route}/saml",
          body: { idp_metadata: IDP_METADATA, [field]: "x" },
          status: 400,
          code: E.unknownField.code,
          field,
        })),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });
  });

  describe("at most one of oauth, oidc, saml", () => {
    const auth = {
      oauth: { provider: { google: {} } },
      oidc: { issuer: "https://id.example.com", client_id: "c", client_secret: "s" },
      saml: { idp_metadata: IDP_METADATA },
    } as const;

    describe.each([
      ["oauth", "oidc"],
      ["oauth", "saml"],
      ["oidc", "saml"],
      ["oidc", "oauth"],
      ["saml", "oauth"],
      ["saml", "oidc"],
    ] as const)("route with %s: module PUT of %s → 400 naming it, nothing stored", (have, put) => {
      let ids: { edge: string; route: string };
      beforeAll(async () => {
        ids = { edge: edgeId, route: (await newRoute({ [have]: auth[have] })).id };
      });
      it.each<Rejection>([
        {
          case: `module PUT of ${put}`,
          method: "PUT",
          path: `/edges/https/{edge}/routes/{route}/${put}`,
          body: auth[put],
          status: 400,
          code: E.validation.code,
          field: put,
        },
        {
          case: `PATCH with ${put}`,
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: { [put]: auth[put] },
          status: 400,
          code: E.validation.code,
          field: put,
        },
        // null for the present one does not delete it, so the PATCH is still refused.
        {
          case: `PATCH with ${have}: null and ${put}`,
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: { [have]: null, [put]: auth[put] },
          status: 400,
          code: E.validation.code,
          field: put,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));

      it(`after deleting ${have}, ${put} is accepted; replacing the same one is fine too`, async () => {
        const after = await fx.client.getRoute(edgeId, ids.route);
        expect(after[put]).toBeNull();
        expect(after[have]).not.toBeNull();

        await fx.client.deleteRouteModule(edgeId, ids.route, have);
        const ok = await fx.client.putRouteModule(edgeId, ids.route, put, auth[put] as never);
        expect(ok.enabled).toBe(true);
        const same = await fx.client.updateRoute(edgeId, ids.route, { [put]: auth[put] });
        expect(same[put]).not.toBeNull();
      });
    });

    describe("two auth modules in one create → 400, nothing stored", () => {
      it.each<Rejection>(
        (
          [
            ["oauth", "oidc"],
            ["oauth", "saml"],
            ["oidc", "saml"],
          ] as const
        ).map(([a, b]) => ({
          case: `${a} and ${b}`,
          method: "POST",
          path: "/edges/https/{edge}/routes",
          body: { match_type: "exact_path", match: uniqueMatch("auth"), [a]: auth[a], [b]: auth[b] },
          status: 400,
          code: E.validation.code,
          field: a,
        })),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, { edge: edgeId })));
      it("all three: the client's error names oauth and says why", async () => {
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
});
