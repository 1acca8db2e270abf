/**
 * The route planner (`planRoute`, `routeCreateRequest`, `moduleRequest`, `describePlan`), no engine.
 * "Current" routes are produced the way the faces produce them (create body → the bundled service,
 * in memory → response → outputs → decoded), "desired" ones through `check`; plans are carried
 * out by that same service, whose rules they must follow.
 */
import { AUTH_MODULES, ROUTE_MODULE_NAMES, type RouteModuleName } from "../../sdk/contract";
import { MODULE_PROPERTY } from "../../provider/model/route";
import { UNKNOWN } from "../../provider/model/unknown";
import type { Route } from "../../sdk/contract";
import { decodeRoute, moduleRequest, routeCreateRequest, routeInputsOf } from "../../provider/model/route";
import { planRoute } from "../../provider/plan/route";
import { describePlan, type RoutePlan, type RouteStep } from "../../provider/plan/types";
import {
  allModulesWith,
  createdFrom,
  currentOf,
  desired,
  EDGE_ID,
  type Inputs,
  IDP_METADATA,
  MODULE_MINIMAL,
  MODULE_SAMPLES,
  OTHER_EDGE_ID,
  service,
  stored,
} from "./support";

/** The plan of a route that is already as desired. */
const NO_CHANGE = { replaces: [], changed: [], changes: [], steps: [] };

/** A step without its human-readable reason. */
type Op = RouteStep extends infer S
  ? S extends RouteStep
    ? Omit<S, "why" | "leaves" | "next">
    : never
  : never;

/** The steps without their human-readable texts (reason, state left, next action), for exact comparison. */
function ops(plan: RoutePlan): Op[] {
  return plan.steps.map(({ why: _why, leaves: _leaves, next: _next, ...rest }) => rest as Op);
}

describe("planRoute: no change", () => {
  test.each(AUTH_MODULES.map((m) => [m]))(
    "a route with every module (auth: %s) read back as created",
    async (auth) => {
      const want = desired({ description: "d", metadata: '{"k":1}', ...allModulesWith(auth) });
      const plan = planRoute(await createdFrom(want), want);
      expect(plan).toEqual(NO_CHANGE);
      expect(describePlan(plan)).toEqual(["no change"]);
    },
  );

  test("minimal modules (every field defaulted) read back as created", async () => {
    const props: Inputs = {};
    for (const name of ROUTE_MODULE_NAMES) {
      if (name === "oidc" || name === "saml") continue;
      props[MODULE_PROPERTY[name]] = MODULE_MINIMAL[name];
    }
    const want = desired(props);
    expect(planRoute(await createdFrom(want), want)).toEqual(NO_CHANGE);
  });

  test("a route without modules", async () => {
    const want = desired({});
    expect(planRoute(await createdFrom(want), want)).toEqual(NO_CHANGE);
  });

  test("identical canonical inputs on both sides", async () => {
    const want = desired(allModulesWith("oidc"));
    expect(planRoute(want, structuredClone(want))).toEqual(NO_CHANGE);
  });

  test("ipRestriction.ipPolicyIds in another order is no change", async () => {
    const current = await createdFrom(
      desired({ ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b", "ipp_c"] } }),
    );
    const want = desired({ ipRestriction: { ipPolicyIds: ["ipp_c", "ipp_a", "ipp_b"] } });
    expect(planRoute(current, want)).toEqual(NO_CHANGE);
  });

  test("ipPolicyIds order alone is no change, but another id is", async () => {
    const current = await createdFrom(desired({ ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b"] } }));
    const want = desired({ ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_c"] } });
    const plan = planRoute(current, want);
    expect(plan.changed).toEqual(["ipRestriction"]);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { ip_restriction: { ip_policy_ids: ["ipp_b", "ipp_c"] } } },
    ]);
  });

  test("a module set to null on the desired side and absent on the current side is no change", async () => {
    const want = desired({ compression: null, backend: { backendId: "bkd_1" } });
    const current = await createdFrom(want);
    expect(planRoute(current, { ...want, compression: null, oauth: undefined } as never)).toEqual(NO_CHANGE);
  });
});

describe("planRoute: changes", () => {
  test("one inner field of one module → one patch with only that module, whole and minimal", async () => {
    const base = { ...allModulesWith("oauth"), circuitBreaker: { trippedDuration: 30, numBuckets: 10 } };
    const current = await createdFrom(desired(base));
    const want = desired({ ...base, circuitBreaker: { trippedDuration: 30, numBuckets: 20 } });
    const plan = planRoute(current, want);
    expect(plan.replaces).toEqual([]);
    expect(plan.changed).toEqual(["circuitBreaker"]);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { circuit_breaker: { tripped_duration: 30, num_buckets: 20 } } },
    ]);
  });

  test("a module re-enabled is sent whole (enabled omitted = true)", async () => {
    const current = await createdFrom(desired({ userAgentFilter: { enabled: false, allow: ["a"] } }));
    const plan = planRoute(current, desired({ userAgentFilter: { allow: ["a"] } }));
    expect(plan.changed).toEqual(["userAgentFilter"]);
    expect(ops(plan)).toEqual([{ op: "patch", body: { user_agent_filter: { allow: ["a"] } } }]);
  });

  test("a module disabled is sent with enabled: false and its other fields", async () => {
    const current = await createdFrom(desired({ trafficPolicy: { value: "p" } }));
    const plan = planRoute(current, desired({ trafficPolicy: { value: "p", enabled: false } }));
    expect(ops(plan)).toEqual([{ op: "patch", body: { traffic_policy: { enabled: false, value: "p" } } }]);
  });

  test("a module added → one patch with that module, minimal", async () => {
    const current = await createdFrom(desired({ backend: { backendId: "bkd_1" } }));
    const want = desired({ backend: { backendId: "bkd_1" }, oidc: MODULE_MINIMAL.oidc });
    const plan = planRoute(current, want);
    expect(plan.changed).toEqual(["oidc"]);
    expect(ops(plan)).toEqual([
      {
        op: "patch",
        body: { oidc: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" } },
      },
    ]);
  });

  test("header names stay verbatim in the patch body", async () => {
    const current = await createdFrom(desired({ requestHeaders: { add: { "X-Old": "0" } } }));
    const want = desired({
      requestHeaders: {
        add: { "X-Foo": "1", x_custom_header: "2", lowerCamelHeader: "3" },
        remove: ["X_Gone"],
      },
      responseHeaders: { add: { "Content-Security-Policy": "default-src 'self'", snake_case_name: "v" } },
    });
    const plan = planRoute(current, want);
    expect(plan.changed).toEqual(["requestHeaders", "responseHeaders"]);
    expect(ops(plan)).toEqual([
      {
        op: "patch",
        body: {
          request_headers: {
            add: { "X-Foo": "1", x_custom_header: "2", lowerCamelHeader: "3" },
            remove: ["X_Gone"],
          },
          response_headers: {
            add: { "Content-Security-Policy": "default-src 'self'", snake_case_name: "v" },
          },
        },
      },
    ]);
  });

  test("a module removed → one deleteModule step and no patch", async () => {
    const base = allModulesWith("saml");
    const current = await createdFrom(desired(base));
    const { compression: _gone, ...rest } = base;
    const plan = planRoute(current, desired(rest));
    expect(plan.changed).toEqual(["compression"]);
    expect(ops(plan)).toEqual([{ op: "deleteModule", module: "compression" }]);
  });

  test("a module removed by null is deleted too", async () => {
    const current = await createdFrom(desired({ compression: {}, trafficPolicy: { value: "p" } }));
    const plan = planRoute(current, desired({ compression: null, trafficPolicy: { value: "p" } }));
    expect(ops(plan)).toEqual([{ op: "deleteModule", module: "compression" }]);
  });

  test("changes and removals together → one patch first, then the deletes", async () => {
    const current = await createdFrom(
      desired({ compression: {}, userAgentFilter: { deny: ["x"] }, circuitBreaker: { numBuckets: 4 } }),
    );
    const plan = planRoute(current, desired({ circuitBreaker: { numBuckets: 5 } }));
    expect(plan.changed).toEqual(["circuitBreaker", "compression", "userAgentFilter"]);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { circuit_breaker: { num_buckets: 5 } } },
      { op: "deleteModule", module: "compression" },
      { op: "deleteModule", module: "user_agent_filter" },
    ]);
  });

  test("description, match and matchType go into the patch with their wire names", async () => {
    const current = await createdFrom(desired({ description: "old", backend: { backendId: "bkd_1" } }));
    const want = desired({
      description: "new",
      match: "example.com/v2",
      matchType: "exact_path",
      backend: { backendId: "bkd_1" },
    });
    const plan = planRoute(current, want);
    expect(plan.changed).toEqual(["matchType", "match", "description"]);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { match_type: "exact_path", match: "example.com/v2", description: "new" } },
    ]);
  });

  test("metadata change goes into the patch", async () => {
    const current = await createdFrom(desired({}));
    const plan = planRoute(current, desired({ metadata: '{"team":"a"}' }));
    expect(ops(plan)).toEqual([{ op: "patch", body: { metadata: '{"team":"a"}' } }]);
  });

  describe("description removed vs empty: no perpetual diff", () => {
    const cases: Array<[string, unknown, unknown, Op[]]> = [
      ["'' → undefined", "", undefined, []],
      ["undefined → ''", undefined, "", []],
      ["undefined → undefined", undefined, undefined, []],
      ["'' → ''", "", "", []],
      ["'text' → undefined (cleared)", "text", undefined, [{ op: "patch", body: { description: "" } }]],
      ["'text' → ''", "text", "", [{ op: "patch", body: { description: "" } }]],
      ["undefined → 'text'", undefined, "text", [{ op: "patch", body: { description: "text" } }]],
    ];
    // "undefined" is a description left out: of the program (check fills the default), or of
    // stored state written without one (its canonical form fills it the same way).
    const given = (description: unknown) => (description === undefined ? {} : { description });
    test.each(cases)("%s", async (_name, before, after, expected) => {
      const { description: _, ...state } = routeInputsOf(await createdFrom(desired({})));
      const current = decodeRoute({ ...state, ...given(before) });
      const want = desired(given(after));
      const plan = planRoute(current, want);
      expect(ops(plan)).toEqual(expected);
      expect(plan.changed).toEqual(expected.length > 0 ? ["description"] : []);
      // After applying the plan and reading back, there is nothing left to do.
      const states = await execute(await stored(current), plan);
      expect(planRoute(currentOf(states.at(-1) ?? (await stored(current))), want)).toEqual(NO_CHANGE);
    });
  });

  test("unknown values on the desired side count as changes", async () => {
    const base = { backend: { backendId: "bkd_1" }, trafficPolicy: { value: "p" }, compression: {} };
    const current = await createdFrom(desired(base));
    const want = {
      ...desired(base),
      backend: { enabled: true, backend_id: UNKNOWN },
      traffic_policy: UNKNOWN,
      description: UNKNOWN,
    } as never;
    const plan = planRoute(current, want);
    expect(plan.replaces).toEqual([]);
    expect(plan.changed).toEqual(["description", "backend", "trafficPolicy"]);
  });

  test("an unknown value equal in shape to the current one still counts as a change", async () => {
    const current = await createdFrom(desired({ ipRestriction: { ipPolicyIds: ["ipp_a"] } }));
    const want = { ...desired({ ipRestriction: { ipPolicyIds: ["ipp_a"] } }) };
    want.ip_restriction = { enabled: true, ip_policy_ids: [UNKNOWN] };
    expect(planRoute(current, want).changed).toEqual(["ipRestriction"]);
  });

  test("edgeId change → replace, no steps", async () => {
    const want = desired({ backend: { backendId: "bkd_1" } });
    const current = await createdFrom(want);
    const plan = planRoute(current, { ...want, edge_id: OTHER_EDGE_ID, description: "also changed" });
    expect(plan.replaces).toEqual(["edgeId"]);
    expect(plan.changed).toEqual(["edgeId", "description"]);
    expect(plan.steps).toEqual([]);
    expect(describePlan(plan)).toEqual(["replace (changed: edgeId)"]);
  });

  test("unknown edgeId → replace, no steps", async () => {
    const want = desired({});
    const plan = planRoute(await createdFrom(want), { ...want, edge_id: UNKNOWN });
    expect(plan).toEqual({
      replaces: ["edgeId"],
      changed: ["edgeId"],
      changes: [{ path: "edgeId", kind: "update", replace: true }],
      steps: [],
    });
  });

  test("same edgeId → no replace", async () => {
    const want = desired({ description: "x" });
    const current = await createdFrom(desired({}));
    expect(current.edge_id).toBe(EDGE_ID);
    expect(planRoute(current, want).replaces).toEqual([]);
  });

  test("describePlan numbers the calls", async () => {
    const current = await createdFrom(desired({ compression: {}, circuitBreaker: { numBuckets: 4 } }));
    const lines = describePlan(planRoute(current, desired({ circuitBreaker: { numBuckets: 5 } })));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^1\. PATCH circuit_breaker: /);
    expect(lines[1]).toMatch(/^2\. DELETE module compression: /);
  });
});

describe("the detailed diff: leaf by leaf, as Pulumi paths", () => {
  test("an inner field, a header added, a module added and one removed, a description", async () => {
    const current = await createdFrom(
      desired({
        circuitBreaker: { numBuckets: 10 },
        requestHeaders: { add: { "X-Old": "0" } },
        compression: {},
      }),
    );
    const want = desired({
      description: "new",
      circuitBreaker: { numBuckets: 12 },
      requestHeaders: { add: { "X-Old": "0", "X-Foo": "1" } },
      trafficPolicy: { value: "p" },
    });
    expect(planRoute(current, want).changes).toEqual([
      { path: "description", kind: "update", replace: false },
      { path: "circuitBreaker.numBuckets", kind: "update", replace: false },
      { path: "compression", kind: "delete", replace: false },
      { path: 'requestHeaders.add["X-Foo"]', kind: "add", replace: false },
      { path: "trafficPolicy", kind: "add", replace: false },
    ]);
  });

  test("a list that changes length is one update of the list; a reorder of policy ids is none", async () => {
    const current = await createdFrom(desired({ ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b"] } }));
    expect(
      planRoute(current, desired({ ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] } })).changes,
    ).toEqual([]);
    expect(
      planRoute(current, desired({ ipRestriction: { ipPolicyIds: ["ipp_a", "ipp_b", "ipp_c"] } })).changes,
    ).toEqual([{ path: "ipRestriction.ipPolicyIds", kind: "update", replace: false }]);
  });

  test("a moved route: edgeId replaces, and the other changes say so too", async () => {
    const want = desired({ description: "d" });
    const plan = planRoute(await createdFrom(want), { ...want, edge_id: OTHER_EDGE_ID, description: "e" });
    expect(plan.changes).toEqual([
      { path: "edgeId", kind: "update", replace: true },
      { path: "description", kind: "update", replace: false },
    ]);
  });
});

describe("moduleRequest and routeCreateRequest", () => {
  test("moduleRequest keeps header names verbatim and drops defaults", async () => {
    const value = desired({
      requestHeaders: { add: { "X-Foo": "1", x_custom_header: "2" } },
    }).request_headers!;
    expect(moduleRequest("request_headers", value)).toEqual({ add: { "X-Foo": "1", x_custom_header: "2" } });
    const response = desired({
      responseHeaders: { add: { X_Powered_By: "me" }, remove: ["Server"] },
    }).response_headers!;
    expect(moduleRequest("response_headers", response)).toEqual({
      add: { X_Powered_By: "me" },
      remove: ["Server"],
    });
  });

  test("moduleRequest of every full sample is its snake_case minimal form", async () => {
    const bodies = Object.fromEntries(
      ROUTE_MODULE_NAMES.map((m) => [
        m,
        moduleRequest(m, desired({ [MODULE_PROPERTY[m]]: MODULE_SAMPLES[m] })[m] as never),
      ]),
    );
    expect(bodies).toEqual({
      backend: { backend_id: "bkd_1" },
      ip_restriction: { ip_policy_ids: ["ipp_b", "ipp_a"] },
      circuit_breaker: {
        tripped_duration: 30,
        rolling_window: 60,
        num_buckets: 10,
        volume_threshold: 5,
        error_threshold_percentage: 0.5,
      },
      compression: { enabled: false },
      request_headers: { add: { "X-Foo": "1", x_custom_header: "2" }, remove: ["X-Drop_Me"] },
      response_headers: { add: { "Strict-Transport-Security": "max-age=1", X_Y: "z" }, remove: ["Server"] },
      webhook_verification: { provider: "stripe", secret: "whsec_1" },
      oauth: {
        provider: {
          github: {
            client_id: "cid",
            client_secret: "csec",
            scopes: ["read:org"],
            email_addresses: ["a@example.com"],
            email_domains: ["example.com"],
            teams: ["acme/ops"],
            organizations: ["acme"],
          },
        },
        options_passthrough: true,
        cookie_prefix: "app.",
        inactivity_timeout: 600,
        maximum_duration: 86400,
        auth_check_interval: 300,
      },
      saml: {
        idp_metadata: IDP_METADATA,
        force_authn: true,
        allow_idp_initiated: true,
        authorized_groups: ["admins"],
        nameid_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
        cookie_prefix: "sso.",
      },
      oidc: {
        issuer: "https://idp.example.com",
        client_id: "oidc_client",
        client_secret: "oidc_secret",
        scopes: ["openid", "email"],
        maximum_duration: 3600,
      },
      websocket_tcp_converter: { enabled: false },
      user_agent_filter: { allow: ["curl/.*"], deny: ["bot"] },
      traffic_policy: { value: "on_http_request: []" },
    });
  });

  test("routeCreateRequest: wire names, header names verbatim, defaults and empty texts left out", async () => {
    const want = desired({
      matchType: "exact_path",
      match: "/x",
      backend: { backendId: "bkd_1" },
      requestHeaders: { add: { "X-Foo": "1", x_custom_header: "2" } },
      responseHeaders: { remove: ["X-Powered-By"] },
      compression: {},
      oidc: MODULE_MINIMAL.oidc,
    });
    expect(routeCreateRequest(want)).toEqual({
      match_type: "exact_path",
      match: "/x",
      backend: { backend_id: "bkd_1" },
      request_headers: { add: { "X-Foo": "1", x_custom_header: "2" } },
      response_headers: { remove: ["X-Powered-By"] },
      compression: {},
      oidc: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" },
    });
  });

  test("routeCreateRequest carries description and metadata when set", async () => {
    expect(routeCreateRequest(desired({ description: "d", metadata: "m" }))).toEqual({
      match_type: "path_prefix",
      match: "/app",
      description: "d",
      metadata: "m",
    });
  });

  test("routeCreateRequest of a route with every module is a valid create that reads back identical", async () => {
    const want = desired(allModulesWith("oauth"));
    const body = routeCreateRequest(want);
    expect(Object.keys(body).sort()).toEqual(
      ["match", "match_type", ...ROUTE_MODULE_NAMES.filter((m) => m !== "oidc" && m !== "saml")].sort(),
    );
    const edge = await service.client.createHttpsEdge({});
    expect(planRoute(currentOf(await service.client.createRoute(edge.id, body)), want).changed).toEqual([]);
  });
});

// ---------------------------------------------------------------- fail-closed auth switches

type Auth = (typeof AUTH_MODULES)[number];
const AUTH_PROP: Record<Auth, string> = { oauth: "oauth", oidc: "oidc", saml: "saml" };

/** Backend enabled and no auth module: traffic would be served unauthenticated. */
function isOpen(route: Route): boolean {
  return route.backend?.enabled === true && AUTH_MODULES.every((m) => route[m] === null);
}

/** Carries the plan out on the service, step by step; returns the route after each step. */
async function execute(start: Route, plan: RoutePlan): Promise<Route[]> {
  const { client } = service;
  const states: Route[] = [];
  for (const step of plan.steps) {
    if (step.op === "patch") await client.updateRoute(start.edge_id, start.id, step.body);
    else await client.deleteRouteModule(start.edge_id, start.id, step.module);
    states.push(await client.getRoute(start.edge_id, start.id));
  }
  return states;
}

describe("fail-closed authentication switch", () => {
  const backendOn = { backendId: "bkd_1" };
  const backendOff = { backendId: "bkd_1", enabled: false };

  test("backend enabled, oauth → oidc: disable backend, delete oauth, set oidc with backend re-enabled", async () => {
    const current = await createdFrom(desired({ backend: backendOn, oauth: MODULE_MINIMAL.oauth }));
    const want = desired({ backend: backendOn, oidc: MODULE_MINIMAL.oidc });
    const plan = planRoute(current, want);
    expect(plan.changed).toEqual(["oauth", "oidc"]);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { backend: { backend_id: "bkd_1", enabled: false } } },
      { op: "deleteModule", module: "oauth" },
      {
        op: "patch",
        body: {
          oidc: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" },
          backend: { backend_id: "bkd_1" },
        },
      },
    ]);
    for (const step of plan.steps) expect(step.why.length).toBeGreaterThan(0);
    expect(describePlan(plan).map((l) => l.slice(0, 22))).toEqual([
      "1. PATCH backend: fail",
      "2. DELETE module oauth",
      "3. PATCH oidc, backend",
    ]);
  });

  test("backend already disabled → no disabling step", async () => {
    const current = await createdFrom(desired({ backend: backendOff, saml: MODULE_MINIMAL.saml }));
    const want = desired({ backend: backendOff, oauth: MODULE_MINIMAL.oauth });
    expect(ops(planRoute(current, want))).toEqual([
      { op: "deleteModule", module: "saml" },
      { op: "patch", body: { oauth: { provider: { google: {} } } } },
    ]);
  });

  test("backend disabled now and enabled in the desired route → enabled together with the new auth", async () => {
    const current = await createdFrom(desired({ backend: backendOff, oidc: MODULE_MINIMAL.oidc }));
    const want = desired({ backend: backendOn, saml: MODULE_MINIMAL.saml });
    expect(ops(planRoute(current, want))).toEqual([
      { op: "deleteModule", module: "oidc" },
      { op: "patch", body: { saml: { idp_metadata: IDP_METADATA }, backend: { backend_id: "bkd_1" } } },
    ]);
  });

  test("desired route without backend → backend deleted after the switch, never re-enabled", async () => {
    const current = await createdFrom(desired({ backend: backendOn, oauth: MODULE_MINIMAL.oauth }));
    const want = desired({ oidc: MODULE_MINIMAL.oidc });
    const plan = planRoute(current, want);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { backend: { backend_id: "bkd_1", enabled: false } } },
      { op: "deleteModule", module: "oauth" },
      {
        op: "patch",
        body: { oidc: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" } },
      },
      { op: "deleteModule", module: "backend" },
    ]);
  });

  test("other changes ride in the final patch; other removals come last", async () => {
    const current = await createdFrom(
      desired({
        description: "old",
        backend: backendOn,
        oauth: MODULE_MINIMAL.oauth,
        circuitBreaker: { numBuckets: 10 },
        compression: {},
      }),
    );
    const want = desired({
      description: "new",
      backend: { backendId: "bkd_2" },
      oidc: MODULE_MINIMAL.oidc,
      circuitBreaker: { numBuckets: 20 },
      trafficPolicy: { value: "p" },
    });
    const plan = planRoute(current, want);
    expect(ops(plan)).toEqual([
      { op: "patch", body: { backend: { backend_id: "bkd_1", enabled: false } } },
      { op: "deleteModule", module: "oauth" },
      {
        op: "patch",
        body: {
          description: "new",
          backend: { backend_id: "bkd_2" },
          circuit_breaker: { num_buckets: 20 },
          oidc: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" },
          traffic_policy: { value: "p" },
        },
      },
      { op: "deleteModule", module: "compression" },
    ]);
  });

  test("changing the auth module in place (no switch) is one patch", async () => {
    const current = await createdFrom(desired({ backend: backendOn, oauth: MODULE_MINIMAL.oauth }));
    const want = desired({ backend: backendOn, oauth: MODULE_SAMPLES.oauth });
    const plan = planRoute(current, want);
    expect(plan.steps).toHaveLength(1);
    expect(ops(plan)[0]).toEqual({ op: "patch", body: { oauth: moduleRequest("oauth", want.oauth!) } });
  });

  // ------------------------------------------------------------ generated combinations

  type BackendState = "enabled" | "disabled" | "absent";
  const backendBefore: Record<BackendState, Inputs | undefined> = {
    enabled: backendOn,
    disabled: backendOff,
    absent: undefined,
  };
  const backendAfter: Record<string, Inputs | undefined> = {
    enabled: backendOn,
    "enabled, other backend": { backendId: "bkd_2" },
    disabled: backendOff,
    absent: undefined,
  };
  const authValues: Record<string, (a: Auth) => Inputs> = {
    minimal: (a) => MODULE_MINIMAL[a],
    full: (a) => MODULE_SAMPLES[a],
  };
  const extras: Record<string, [Inputs, Inputs]> = {
    "no other change": [{}, {}],
    "circuit breaker changed": [{ circuitBreaker: { numBuckets: 1 } }, { circuitBreaker: { numBuckets: 2 } }],
    "compression removed": [{ compression: {} }, {}],
    "headers added, description changed": [
      { description: "a" },
      { description: "b", requestHeaders: { add: { "X-Auth-Switch": "1" } } },
    ],
  };

  interface Combo {
    name: string;
    before: Inputs;
    after: Inputs;
  }
  function combos(auths: Array<Auth | "none">): Combo[] {
    const out: Combo[] = [];
    for (const a0 of auths)
      for (const a1 of auths)
        for (const [b0, backend0] of Object.entries(backendBefore))
          for (const [b1, backend1] of Object.entries(backendAfter))
            for (const [v, value] of Object.entries(authValues))
              for (const [e, [extra0, extra1]] of Object.entries(extras)) {
                const before: Inputs = { ...extra0 };
                const after: Inputs = { ...extra1 };
                if (backend0) before.backend = backend0;
                if (backend1) after.backend = backend1;
                if (a0 !== "none") before[AUTH_PROP[a0]] = MODULE_MINIMAL[a0];
                if (a1 !== "none") after[AUTH_PROP[a1]] = value(a1);
                out.push({
                  name: `${a0} → ${a1} (${v}), backend ${b0} → ${b1}, ${e}`,
                  before,
                  after,
                });
              }
    return out;
  }

  /** Plans, carries the plan out on the service, and checks the end state and that nothing is left to do. */
  async function run(c: Combo): Promise<{ start: Route; states: Route[]; plan: RoutePlan }> {
    const want = desired(c.after);
    const start = await stored(desired(c.before));
    const plan = planRoute(currentOf(start), want);
    let states: Route[];
    try {
      states = await execute(start, plan);
    } catch (e) {
      throw new Error(`${c.name}: ${(e as Error).message}\n${describePlan(plan).join("\n")}`);
    }
    const end = states.at(-1) ?? start;
    expect([c.name, planRoute(currentOf(end), want)]).toEqual([c.name, NO_CHANGE]);
    return { start, states, plan };
  }

  test("3 auth modules × backend states before and after: never open after any step", async () => {
    const all = combos([...AUTH_MODULES]);
    expect(all).toHaveLength(3 * 3 * 3 * 4 * 2 * 4);
    let switches = 0;
    for (const c of all) {
      const { start, states, plan } = await run(c);
      expect([c.name, "start", isOpen(start)]).toEqual([c.name, "start", false]);
      states.forEach((s, i) => {
        expect([c.name, describePlan(plan)[i], isOpen(s)]).toEqual([c.name, describePlan(plan)[i], false]);
      });
      const switching = plan.steps.some(
        (s) => s.op === "deleteModule" && (AUTH_MODULES as readonly string[]).includes(s.module),
      );
      if (switching) {
        switches++;
        // The old auth module goes before the new one arrives, never both at once (the service refuses both).
        const firstStep = plan.steps[0]!;
        const backendWasOn = start.backend?.enabled === true;
        expect([c.name, firstStep.op === "patch" && "backend" in firstStep.body]).toEqual([
          c.name,
          backendWasOn,
        ]);
      }
    }
    // Two different auth modules in 2/3 of the combinations: every one of them is a switch.
    expect(switches).toBe((all.length * 2) / 3);
  });

  test("with 'no auth' on either side: closed → closed is never open in between", async () => {
    const all = combos([...AUTH_MODULES, "none"]);
    expect(all).toHaveLength(4 * 4 * 3 * 4 * 2 * 4);
    let guarded = 0;
    for (const c of all) {
      const { start, states, plan } = await run(c);
      // Open at the start, or open by the user's own wish at the end: there is nothing to protect.
      if (isOpen(start) || isOpen(states.at(-1) ?? start)) continue;
      guarded++;
      states.forEach((s, i) => {
        expect([c.name, describePlan(plan)[i], isOpen(s)]).toEqual([c.name, describePlan(plan)[i], false]);
      });
    }
    expect(guarded).toBeGreaterThan(all.length / 2);
  });

  test("a failure at any step leaves the route closed (every prefix of a switch plan)", async () => {
    for (const [from, to] of [
      ["oauth", "oidc"],
      ["oidc", "saml"],
      ["saml", "oauth"],
    ] as Array<[Auth, Auth]>) {
      const before = desired({ backend: backendOn, [from]: MODULE_MINIMAL[from] });
      const plan = planRoute(
        currentOf(await stored(before)),
        desired({ backend: backendOn, [to]: MODULE_MINIMAL[to] }),
      );
      expect(plan.steps).toHaveLength(3);
      for (let n = 0; n <= plan.steps.length; n++) {
        const start = await stored(before);
        const states = await execute(start, { ...plan, steps: plan.steps.slice(0, n) });
        expect([from, to, n, isOpen(states.at(-1) ?? start)]).toEqual([from, to, n, false]);
      }
    }
  });
});

// Keep the module list honest: the samples cover all 13 modules.
test("samples cover every module", async () => {
  expect(Object.keys(MODULE_SAMPLES).sort()).toEqual([...ROUTE_MODULE_NAMES].sort());
  expect(ROUTE_MODULE_NAMES).toHaveLength(13);
  const names: RouteModuleName[] = Object.keys(MODULE_MINIMAL) as RouteModuleName[];
  expect(names.sort()).toEqual([...ROUTE_MODULE_NAMES].sort());
});
