/**
 * The provider's model: camelCase ⇄ snake_case (header names verbatim), canonical comparison and
 * minimal bodies, unknown values, and route response → outputs → inputs.
 */
import fc from "fast-check";
import {
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
  circuitBreakerResponseSchema,
  OAUTH_PROVIDER_KEYS,
  samlComputedSchema,
  moduleRequestOf,
  type Route,
} from "../../sdk/contract";
import { deepEqual, minimize } from "../../provider/model/canonical";
import { camelPath, fromWire, nonCamelKeys, toCamel, toSnake, toWire } from "../../provider/model/case";
import {
  MODULE_PROPERTY,
  ROUTE_OUTPUT_ONLY,
  SAML_OUTPUT_ONLY,
  decodeRoute,
  routeConfigOfResponse,
  routeOutputsOf,
} from "../../provider/model/route";
import type { RouteOutputs } from "../../provider/model/types";
import { containsUnknown, pathHitsUnknown, UNKNOWN } from "../../provider/model/unknown";
import {
  BASE_URL,
  IDP_METADATA,
  type Inputs,
  MODULE_MINIMAL,
  MODULE_SAMPLES,
  allModulesWith,
  desired,
  currentOf,
  stored,
} from "./support";
import { prng } from "../support/prng";
import { MODULE_BODY } from "../support/request-bodies";

describe("case conversion", () => {
  test.each([
    ["backendId", "backend_id"],
    ["ipPolicyIds", "ip_policy_ids"],
    ["errorThresholdPercentage", "error_threshold_percentage"],
    ["websocketTcpConverter", "websocket_tcp_converter"],
    ["nameidFormat", "nameid_format"],
    ["requestSigningCertificatePem", "request_signing_certificate_pem"],
    ["enabled", "enabled"],
  ])("%s ⇄ %s", (camel, snake) => {
    expect(toSnake(camel)).toBe(snake);
    expect(toCamel(snake)).toBe(camel);
  });

  test("every wire field name of every module survives snake → camel → snake", () => {
    const names = new Set<string>();
    const collect = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(collect);
      else if (v && typeof v === "object")
        for (const [k, x] of Object.entries(v)) {
          names.add(k);
          collect(x);
        }
    };
    for (const m of ROUTE_MODULE_NAMES) {
      names.add(m);
      collect(ROUTE_MODULES[m].request.parse(toWire(MODULE_SAMPLES[m], [m])));
    }
    for (const k of Object.keys(samlComputedSchema.shape)) names.add(k);
    for (const name of names)
      if (!/[A-Z-]/.test(name)) expect([name, toSnake(toCamel(name))]).toEqual([name, name]);
  });

  const camelRoute = {
    matchType: "exact_path",
    backend: { enabled: true, backendId: "bkd_1" },
    requestHeaders: {
      enabled: true,
      add: { "X-Foo": "1", x_custom_header: "2", camelCase: "3" },
      remove: ["X_Y"],
    },
    responseHeaders: { add: { Snake_Case: "v" }, remove: [] },
    oauth: { provider: { github: { emailDomains: ["a.com"], clientId: "" } }, authCheckInterval: 5 },
    ipRestriction: { ipPolicyIds: ["a_b", "c"] },
  };
  const wireRoute = {
    match_type: "exact_path",
    backend: { enabled: true, backend_id: "bkd_1" },
    request_headers: {
      enabled: true,
      add: { "X-Foo": "1", x_custom_header: "2", camelCase: "3" },
      remove: ["X_Y"],
    },
    response_headers: { add: { Snake_Case: "v" }, remove: [] },
    oauth: { provider: { github: { email_domains: ["a.com"], client_id: "" } }, auth_check_interval: 5 },
    ip_restriction: { ip_policy_ids: ["a_b", "c"] },
  };

  test("toWire: snake_case keys, header names and values verbatim", () => {
    expect(toWire(camelRoute)).toEqual(wireRoute);
  });

  test("fromWire: camelCase keys, header names and values verbatim", () => {
    expect(fromWire(wireRoute)).toEqual(camelRoute);
  });

  test("round trip both ways", () => {
    expect(fromWire(toWire(camelRoute))).toEqual(camelRoute);
    expect(toWire(fromWire(wireRoute))).toEqual(wireRoute);
  });

  test("`at` places a module value inside a route so its header map is recognised", () => {
    const module = { add: { "X-Foo": "1", x_custom_header: "2" }, remove: ["X-Bar"] };
    expect(toWire(module, ["requestHeaders"])).toEqual(module);
    expect(toWire(module, ["request_headers"])).toEqual(module);
    expect(toWire(module, ["responseHeaders"])).toEqual(module);
    expect(fromWire(module, ["request_headers"])).toEqual(module);
    expect(fromWire(module, ["response_headers"])).toEqual(module);
    // Outside a header map, the same keys are property names and are converted.
    expect(fromWire(module, ["traffic_policy"]).add).toEqual({ "X-Foo": "1", xCustomHeader: "2" });
  });

  test("toWire and fromWire do not modify their argument", () => {
    const before = structuredClone(camelRoute);
    toWire(camelRoute);
    fromWire(camelRoute);
    expect(camelRoute).toEqual(before);
  });

  test("nonCamelKeys finds snake_case keys with their paths, but not header names or __ keys", () => {
    expect(
      nonCamelKeys({
        backend: { backend_id: "b" },
        requestHeaders: { add: { x_custom_header: "1" } },
        response_headers: { add: { x_y: "1" } },
        __provider: "p",
        list: [{ ok: 1 }, { not_ok: 2 }],
        circuitBreaker: { numBuckets: 1 },
      }),
    ).toEqual(["backend.backend_id", "response_headers", "list.1.not_ok"]);
    expect(nonCamelKeys(null)).toEqual([]);
    expect(nonCamelKeys("a_b")).toEqual([]);
  });

  test("camelPath: property names converted, header names and indexes kept", () => {
    expect(camelPath(["circuit_breaker", "num_buckets"])).toEqual(["circuitBreaker", "numBuckets"]);
    expect(camelPath(["request_headers", "add", "x_custom_header"])).toEqual([
      "requestHeaders",
      "add",
      "x_custom_header",
    ]);
    expect(camelPath(["response_headers", "add", "X_Y"])).toEqual(["responseHeaders", "add", "X_Y"]);
    expect(camelPath(["ip_restriction", "ip_policy_ids", 2])).toEqual(["ipRestriction", "ipPolicyIds", 2]);
    expect(camelPath(["oauth", "provider", "github", "client_secret"])).toEqual([
      "oauth",
      "provider",
      "github",
      "clientSecret",
    ]);
    expect(camelPath([])).toEqual([]);
  });
});

describe("canonical comparison", () => {
  test("deepEqual: key order ignored, array order not; an undefined key is an absent one", () => {
    expect(deepEqual({ b: 1, a: { d: [2, 1], c: null } }, { a: { c: null, d: [2, 1] }, b: 1 })).toBe(true);
    expect(deepEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual([1, [2]], [1, [2]])).toBe(true);
    expect(deepEqual([1], { 0: 1 })).toBe(false);
    expect(deepEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toBe(true);
    expect(deepEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(deepEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(deepEqual(undefined, null)).toBe(true);
    expect(deepEqual("", null)).toBe(false);
    expect(deepEqual(0, false)).toBe(false);
  });
});

// ---------------------------------------------------------------- minimize

/** Random valid Pulumi-side values of a module; each field is left out, set to its default, or set. */
function generated(name: RouteModuleName, r: () => number): Inputs {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const maybe = (v: unknown, def: unknown) => pick([undefined, def, v]);
  const obj = (fields: Record<string, unknown>): Inputs =>
    Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  const enabled = maybe(false, true);
  const session = {
    optionsPassthrough: maybe(true, false),
    cookiePrefix: maybe("x.", "edge."),
    inactivityTimeout: maybe(Math.floor(r() * 1000), 0),
    maximumDuration: maybe(4294967295, 0),
  };
  switch (name) {
    case "backend":
      return obj({ enabled, backendId: pick(["b", "bkd_1", "Z9_"]) });
    case "ip_restriction":
      return obj({ enabled, ipPolicyIds: pick([["a"], ["a", "b"], ["z", "a", "m"]]) });
    case "circuit_breaker":
      return obj({
        enabled,
        trippedDuration: maybe(Math.floor(r() * 100), 0),
        rollingWindow: maybe(Math.floor(r() * 100), 0),
        numBuckets: pick([undefined, 1, 64, 128]),
        volumeThreshold: maybe(Math.floor(r() * 100), 0),
        errorThresholdPercentage: maybe(pick([0.25, 1, 0.999]), 0),
      });
    case "compression":
    case "websocket_tcp_converter":
      return obj({ enabled });
    case "request_headers":
    case "response_headers":
      return obj({
        enabled,
        add: maybe(pick([{ "X-A": "1" }, { x_b: "", "X-C": "3" }, { enabled: "true" }]), {}),
        remove: maybe(pick([["X-A"], ["x_b", "Server"]]), []),
      });
    case "webhook_verification":
      return pick([
        obj({ enabled, provider: "sns", secret: maybe(undefined, "") }),
        obj({ enabled, provider: pick(["stripe", "GitHub", "slack"]), secret: "s3cret" }),
      ]);
    case "oauth": {
      const slot = pick(OAUTH_PROVIDER_KEYS);
      const own = r() < 0.5;
      const provider = obj({
        clientId: own ? "cid" : maybe(undefined, ""),
        clientSecret: own ? "sec" : maybe(undefined, ""),
        scopes: own ? maybe(["s"], []) : undefined,
        emailAddresses: maybe(["a@b.c"], []),
        emailDomains: maybe(["b.c"], []),
        ...(slot === "github" ? { teams: maybe(["o/t"], []), organizations: maybe(["o"], []) } : {}),
      });
      return obj({ enabled, ...session, provider: { [slot]: provider }, authCheckInterval: maybe(60, 0) });
    }
    case "saml":
      return obj({
        enabled,
        ...session,
        idpMetadata: IDP_METADATA,
        forceAuthn: maybe(true, false),
        allowIdpInitiated: maybe(true, false),
        authorizedGroups: maybe(["g1", "g2"], []),
        nameidFormat: maybe(
          "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
          "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
        ),
      });
    case "oidc":
      return obj({
        enabled,
        ...session,
        issuer: "https://idp.example.com/realm",
        clientId: "c",
        clientSecret: "s",
        scopes: maybe(["openid"], []),
      });
    case "user_agent_filter":
      return obj({ enabled, allow: maybe(["a"], []), deny: maybe(["b", "c"], []) });
    case "traffic_policy":
      return obj({ enabled, value: pick(["p", "on_http_request: []"]) });
  }
}

/** Canonical wire values of a module: minimal, full, and many generated ones. */
function canonicalSamples(name: RouteModuleName): unknown[] {
  const schema = ROUTE_MODULES[name].request;
  const r = prng(0x5eed + name.length);
  const inputs = [MODULE_MINIMAL[name], MODULE_SAMPLES[name]];
  for (let i = 0; i < 60; i++) inputs.push(generated(name, r));
  // And bodies read off the schema, so a field added to the contract is in the samples too.
  const fromSchema = fc.sample(MODULE_BODY[name], { numRuns: 60, seed: 0x5eed + name.length });
  return [...inputs.map((v) => schema.parse(toWire(v, [name]))), ...fromSchema.map((v) => schema.parse(v))];
}

/** The minimal valid wire value of each module (required fields only). */
const MODULE_MINIMAL_WIRE: Record<RouteModuleName, Record<string, unknown>> = Object.fromEntries(
  ROUTE_MODULE_NAMES.map((m) => [m, toWire(MODULE_MINIMAL[m], [m])]),
) as Record<RouteModuleName, Record<string, unknown>>;

describe("minimize", () => {
  describe.each(ROUTE_MODULE_NAMES.map((m) => [m]))("%s", (name) => {
    const schema = ROUTE_MODULES[name].request;
    const samples = canonicalSamples(name);

    test("request.parse(minimize(request, canonical)) equals canonical", () => {
      for (const canonical of samples) {
        const minimal = minimize(schema, canonical);
        expect([minimal, schema.parse(minimal)]).toEqual([minimal, canonical]);
      }
    });

    test("is idempotent and keeps no top-level field equal to its default", () => {
      for (const canonical of samples) {
        const minimal = minimize(schema, canonical) as Record<string, unknown>;
        expect(minimize(schema, minimal)).toEqual(minimal);
        const defaults = schema.parse(MODULE_MINIMAL_WIRE[name]) as Record<string, unknown>;
        for (const [k, v] of Object.entries(minimal)) {
          const required = Object.hasOwn(MODULE_MINIMAL_WIRE[name], k);
          if (!required) expect([k, deepEqual(v, defaults[k])]).toEqual([k, false]);
        }
      }
    });
  });

  test("all-default modules minimize to their required fields only", () => {
    for (const name of ROUTE_MODULE_NAMES) {
      const canonical = ROUTE_MODULES[name].request.parse(MODULE_MINIMAL_WIRE[name]);
      expect([name, minimize(ROUTE_MODULES[name].request, canonical)]).toEqual([
        name,
        MODULE_MINIMAL_WIRE[name],
      ]);
    }
  });

  test("samples cover every OAuth provider slot", () => {
    const slots = new Set(
      canonicalSamples("oauth").map(
        (c) =>
          Object.entries((c as { provider: Record<string, unknown> }).provider).find(
            ([, v]) => v !== null,
          )![0],
      ),
    );
    expect([...slots].sort()).toEqual([...OAUTH_PROVIDER_KEYS].sort());
  });

  test("an unset num_buckets (0 in responses) reads back as absent, so the body is a valid request", () => {
    const response = circuitBreakerResponseSchema.parse({
      enabled: true,
      tripped_duration: 5,
      rolling_window: 0,
      num_buckets: 0,
      volume_threshold: 0,
      error_threshold_percentage: 0,
    });
    const request = moduleRequestOf("circuit_breaker", response);
    expect(request).not.toHaveProperty("num_buckets");
    const body = minimize(ROUTE_MODULES.circuit_breaker.request, request);
    expect(body).toEqual({ tripped_duration: 5 });
    expect(ROUTE_MODULES.circuit_breaker.request.parse(body)).toEqual(request);
    // A set value reads back as itself.
    expect(moduleRequestOf("circuit_breaker", { ...response, num_buckets: 7 }).num_buckets).toBe(7);
  });

  test("header maps are data: a header named like a field is kept", () => {
    const canonical = ROUTE_MODULES.request_headers.request.parse({ add: { enabled: "true", remove: "" } });
    expect(minimize(ROUTE_MODULES.request_headers.request, canonical)).toEqual({
      add: { enabled: "true", remove: "" },
    });
  });

  test("non-objects pass through", () => {
    expect(minimize(ROUTE_MODULES.backend.request, null)).toBeNull();
    expect(minimize(ROUTE_MODULES.backend.request, "x")).toBe("x");
    expect(minimize(ROUTE_MODULES.ip_restriction.request, [1])).toEqual([1]);
  });
});

// ---------------------------------------------------------------- unknown

describe("unknown values", () => {
  test("the engine's sentinel", () => {
    expect(UNKNOWN).toBe("04da6b54-80e4-46f7-96ec-b56ff0331ba9");
  });

  test("containsUnknown looks everywhere", () => {
    expect(containsUnknown(UNKNOWN)).toBe(true);
    expect(containsUnknown({ a: [1, { b: UNKNOWN }] })).toBe(true);
    expect(containsUnknown({ [UNKNOWN]: 1 })).toBe(false);
    expect(containsUnknown({ a: [1, "x", null] })).toBe(false);
    expect(containsUnknown(null)).toBe(false);
  });

  test("pathHitsUnknown: through, at, or under an unknown", () => {
    const root = { a: UNKNOWN, b: { c: [1, UNKNOWN] }, d: { e: 1 } };
    expect(pathHitsUnknown(root, ["a"])).toBe(true);
    expect(pathHitsUnknown(root, ["a", "x", "y"])).toBe(true);
    expect(pathHitsUnknown(root, ["b"])).toBe(true);
    expect(pathHitsUnknown(root, ["b", "c", 1])).toBe(true);
    expect(pathHitsUnknown(root, ["b", "c", 0])).toBe(false);
    expect(pathHitsUnknown(root, ["d", "e"])).toBe(false);
    expect(pathHitsUnknown(root, ["missing", "x"])).toBe(false);
  });
});

// ---------------------------------------------------------------- route outputs and inputs

describe("route outputs, and the brain's value of stored state", () => {
  let response: Route;
  let outputs: RouteOutputs;
  beforeAll(async () => {
    response = await stored(
      desired({
        description: "d",
        metadata: "m",
        backend: { backendId: "bkd_1", enabled: false },
        ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] },
        requestHeaders: { add: { "X-Foo": "1", x_custom_header: "2" } },
        saml: { idpMetadata: IDP_METADATA },
      }),
    );
    outputs = routeOutputsOf(response);
  });

  test("MODULE_PROPERTY names every module in camelCase", () => {
    expect(MODULE_PROPERTY).toEqual({
      backend: "backend",
      ip_restriction: "ipRestriction",
      circuit_breaker: "circuitBreaker",
      compression: "compression",
      request_headers: "requestHeaders",
      response_headers: "responseHeaders",
      webhook_verification: "webhookVerification",
      oauth: "oauth",
      saml: "saml",
      oidc: "oidc",
      websocket_tcp_converter: "websocketTcpConverter",
      user_agent_filter: "userAgentFilter",
      traffic_policy: "trafficPolicy",
    });
  });

  test("route fields, backend Ref → backendId, ip_policies → ipPolicyIds, headers verbatim, unconfigured modules absent", () => {
    const saml = `${BASE_URL}/saml/${response.id}`;
    expect(outputs).toEqual({
      edgeId: response.edge_id,
      routeId: response.id,
      matchType: "path_prefix",
      match: "/app",
      description: "d",
      metadata: "m",
      uri: `${BASE_URL}/edges/https/${response.edge_id}/routes/${response.id}`,
      createdAt: response.created_at,
      backend: { enabled: false, backendId: "bkd_1" },
      ipRestriction: { enabled: true, ipPolicyIds: ["ipp_b", "ipp_a"] },
      requestHeaders: { enabled: true, add: { "X-Foo": "1", x_custom_header: "2" }, remove: [] },
      saml: {
        enabled: true,
        optionsPassthrough: false,
        cookiePrefix: "edge.",
        inactivityTimeout: 0,
        maximumDuration: 0,
        idpMetadata: IDP_METADATA,
        forceAuthn: false,
        allowIdpInitiated: false,
        authorizedGroups: [],
        nameidFormat: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
        entityId: `${saml}/metadata`,
        metadataUrl: `${saml}/metadata`,
        assertionConsumerServiceUrl: `${saml}/acs`,
        singleLogoutUrl: `${saml}/slo`,
        requestSigningCertificatePem: response.saml!.request_signing_certificate_pem,
      },
    });
    expect(response.saml!.request_signing_certificate_pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  test("output-only names", () => {
    expect([...ROUTE_OUTPUT_ONLY]).toEqual(["uri", "createdAt", "routeId"]);
    expect([...SAML_OUTPUT_ONLY].sort()).toEqual(
      [
        "assertionConsumerServiceUrl",
        "entityId",
        "metadataUrl",
        "requestSigningCertificatePem",
        "singleLogoutUrl",
      ].sort(),
    );
  });

  test("stored state decoded: SAML computed fields, uri, createdAt, routeId and face keys stripped", () => {
    const config = decodeRoute({ ...outputs, __provider: "blob", __inputs: {} });
    expect(Object.keys(config).sort()).toEqual(
      [
        "edge_id",
        "match_type",
        "match",
        "description",
        "metadata",
        "backend",
        "ip_restriction",
        "request_headers",
        "saml",
      ].sort(),
    );
    expect(config.saml).toEqual({
      enabled: true,
      options_passthrough: false,
      cookie_prefix: "edge.",
      inactivity_timeout: 0,
      maximum_duration: 0,
      idp_metadata: IDP_METADATA,
      force_authn: false,
      allow_idp_initiated: false,
      authorized_groups: [],
      nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
    });
    // The outputs themselves keep the computed fields.
    expect((outputs.saml as Record<string, unknown>).entityId).toBe(
      `${BASE_URL}/saml/${response.id}/metadata`,
    );
    // What `read` reports as inputs: the same, straight from the response.
    expect(routeConfigOfResponse(response)).toEqual(config);
  });

  test.each(["oauth", "oidc", "saml"] as const)(
    "the state of a created route decodes to the checked inputs that created it (every module, %s)",
    async (auth) => {
      const want = desired({ description: "x", ...allModulesWith(auth) });
      expect(currentOf(await stored(want))).toEqual(want);
    },
  );

  test("a route without modules", async () => {
    const want = desired({});
    expect(currentOf(await stored(want))).toEqual(want);
  });
});
