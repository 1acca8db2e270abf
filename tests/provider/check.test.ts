/**
 * Check as the faces run it (the model's `checkRoute`, `checkEdge`, over `checkAgainst`, then
 * encoded for Pulumi): canonical inputs with defaults filled, failures named by Pulumi (camelCase)
 * property paths, unknown values not judged, never a throw.
 */
import { DEFAULT_COOKIE_PREFIX, DEFAULT_NAMEID_FORMAT, routeCreateSchema } from "../../sdk/contract";
import { type CheckFailure, checkAgainst } from "../../provider/model/check";
import { dynamicProvider } from "../../provider/dynamic";
import { ProviderProcess } from "../../provider/engine/process";
import { checkEdge } from "../../provider/model/edge";
import { routeLifecycle } from "../../provider/lifecycle/route";
import { checkRoute as checkRouteConfig } from "../../provider/model/route";
import { UNKNOWN } from "../../provider/model/unknown";
import { EDGE_ID, IDP_METADATA, type Inputs, MODULE_MINIMAL } from "./support";

const base = { edgeId: EDGE_ID, matchType: "path_prefix", match: "/app" };

/** What the faces' check answers the engine: the brain's value encoded as Pulumi inputs. */
function checkRoute(props: Inputs, news: Inputs = { ...base, ...props }, olds?: Inputs) {
  return routeLifecycle.check(news, olds);
}
const properties = (failures: CheckFailure[]) => failures.map((f) => f.property);

describe("canonical inputs", () => {
  test("route defaults: empty description and metadata, modules absent", () => {
    expect(checkRoute({})).toEqual({
      inputs: { edgeId: EDGE_ID, matchType: "path_prefix", match: "/app", description: "", metadata: "" },
      failures: [],
    });
  });

  test("module defaults are filled: enabled, zero values, empty lists and maps", () => {
    const { inputs, failures } = checkRoute({
      backend: { backendId: "bkd_1" },
      circuitBreaker: { numBuckets: 10 },
      requestHeaders: {},
      userAgentFilter: { allow: ["x"] },
      webhookVerification: { provider: "SNS" },
    });
    expect(failures).toEqual([]);
    expect(inputs.backend).toMatchObject({ enabled: true, backendId: "bkd_1" });
    expect(inputs.circuitBreaker).toMatchObject({
      enabled: true,
      trippedDuration: 0,
      rollingWindow: 0,
      numBuckets: 10,
      volumeThreshold: 0,
      errorThresholdPercentage: 0,
    });
    expect(inputs.requestHeaders).toMatchObject({ enabled: true, add: {}, remove: [] });
    expect(inputs.userAgentFilter).toMatchObject({ enabled: true, allow: ["x"], deny: [] });
    expect(inputs.webhookVerification).toMatchObject({ enabled: true, provider: "sns", secret: "" });
  });

  test("oauth: cookiePrefix default, the other provider slots null", () => {
    const { inputs, failures } = checkRoute({ oauth: { provider: { github: { organizations: ["acme"] } } } });
    expect(failures).toEqual([]);
    expect(inputs.oauth).toEqual({
      enabled: true,
      provider: {
        github: {
          clientId: "",
          clientSecret: "",
          scopes: [],
          emailAddresses: [],
          emailDomains: [],
          teams: [],
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
      optionsPassthrough: false,
      cookiePrefix: DEFAULT_COOKIE_PREFIX,
      inactivityTimeout: 0,
      maximumDuration: 0,
      authCheckInterval: 0,
    });
    expect(DEFAULT_COOKIE_PREFIX).toBe("edge.");
  });

  test("saml: nameidFormat persistent by default, session defaults", () => {
    const { inputs, failures } = checkRoute({ saml: { idpMetadata: IDP_METADATA } });
    expect(failures).toEqual([]);
    expect(inputs.saml).toEqual({
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
    });
    expect(DEFAULT_NAMEID_FORMAT).toBe("urn:oasis:names:tc:SAML:2.0:nameid-format:persistent");
  });

  test("header names are kept verbatim in canonical inputs", () => {
    const { inputs, failures } = checkRoute({
      requestHeaders: { add: { "X-Foo": "1", x_custom_header: "2" }, remove: ["X_Bar"] },
      responseHeaders: { add: { snake_name: "v" } },
    });
    expect(failures).toEqual([]);
    expect(inputs.requestHeaders).toMatchObject({
      enabled: true,
      add: { "X-Foo": "1", x_custom_header: "2" },
      remove: ["X_Bar"],
    });
    expect(inputs.responseHeaders).toMatchObject({ enabled: true, add: { snake_name: "v" }, remove: [] });
  });

  test("canonical inputs are a fixed point: checking them again changes nothing", () => {
    const first = checkRoute({
      description: "d",
      oidc: MODULE_MINIMAL.oidc,
      backend: { backendId: "bkd_1", enabled: false },
      ipRestriction: { ipPolicyIds: ["b", "a"] },
    });
    expect(first.failures).toEqual([]);
    expect(checkRoute({}, first.inputs as unknown as Inputs)).toEqual(first);
  });

  test("the dynamic face hands the serialized provider (__provider) back from check", async () => {
    const provider = "serialized-provider-blob";
    const check = (props: Inputs) =>
      dynamicProvider("httpsEdgeRoute", new ProviderProcess()).check!(
        {} as never,
        { ...base, ...props } as never,
      ) as unknown as Promise<{
        inputs: Inputs;
        failures: CheckFailure[];
      }>;
    expect((await check({ __provider: provider })).inputs.__provider).toBe(provider);
    // ...also while values are unknown, and when there are failures.
    expect((await check({ __provider: provider, description: UNKNOWN })).inputs.__provider).toBe(provider);
    const bad = await check({ __provider: provider, circuitBreaker: { numBuckets: 0 } });
    expect(bad.failures).not.toEqual([]);
    expect(bad.inputs.__provider).toBe(provider);
    // The model itself never sees it: a property of its own would be an unknown field.
    expect(checkRoute({ __provider: provider }).failures).toEqual([
      { property: "__provider", reason: expect.stringMatching(/unknown field/) },
    ]);
  });

  test("adopt is passed through", () => {
    expect(checkRoute({ adopt: true })).toEqual({
      inputs: { ...base, description: "", metadata: "", adopt: true },
      failures: [],
    });
  });
});

describe("failures", () => {
  test("camelCase property paths", () => {
    expect(checkRoute({ circuitBreaker: { numBuckets: 500 } }).failures).toEqual([
      { property: "circuitBreaker.numBuckets", reason: "must be between 1 and 128" },
    ]);
    expect(checkRoute({ circuitBreaker: { errorThresholdPercentage: 50 } }).failures).toEqual([
      {
        property: "circuitBreaker.errorThresholdPercentage",
        reason: "must be a fraction between 0 and 1.0 (not a percentage of 100)",
      },
    ]);
    expect(checkRoute({ oauth: { provider: { github: { clientId: "cid" } } } }).failures).toEqual([
      {
        property: "oauth.provider.github.clientSecret",
        reason: "client_id and client_secret must be given together (or both omitted to use the managed app)",
      },
    ]);
    expect(properties(checkRoute({ ipRestriction: { ipPolicyIds: ["ok", "not ok"] } }).failures)).toEqual([
      "ipRestriction.ipPolicyIds[1]",
    ]);
  });

  test("a case-duplicate header names its key verbatim", () => {
    expect(checkRoute({ requestHeaders: { add: { "X-A": "1", "x-a": "2" } } }).failures).toEqual([
      {
        property: 'requestHeaders.add["x-a"]',
        reason: 'duplicates header "X-A" (header names are case-insensitive)',
      },
    ]);
    expect(properties(checkRoute({ responseHeaders: { add: { x_b: "1", X_B: "2" } } }).failures)).toEqual([
      "responseHeaders.add.X_B",
    ]);
  });

  test("an invalid header name is reported at its verbatim key", () => {
    expect(checkRoute({ requestHeaders: { add: { "bad name": "1" } } }).failures).toEqual([
      { property: 'requestHeaders.add["bad name"]', reason: "is not a valid HTTP header name" },
    ]);
  });

  test("several problems → one failure each", () => {
    const { failures } = checkRoute({
      matchType: "regex",
      circuitBreaker: { numBuckets: 0, trippedDuration: -1 },
      trafficPolicy: { value: "" },
    });
    expect(properties(failures).sort()).toEqual(
      [
        "circuitBreaker.numBuckets",
        "circuitBreaker.trippedDuration",
        "matchType",
        "trafficPolicy.value",
      ].sort(),
    );
  });

  test("snake_case keys are rejected with the camelCase spelling", () => {
    const { failures } = checkRoute({ backend: { backend_id: "bkd_1" } });
    expect(failures).toEqual([
      { property: "backend.backend_id", reason: "use camelCase property names (backendId)" },
    ]);
    expect(checkRoute({ match_type: "exact_path" }).failures).toContainEqual({
      property: "match_type",
      reason: "use camelCase property names (matchType)",
    });
    expect(checkRoute({ circuitBreaker: { num_buckets: 10 } }).failures).toEqual([
      { property: "circuitBreaker.num_buckets", reason: "use camelCase property names (numBuckets)" },
    ]);
  });

  test("header names with underscores are data, not property names", () => {
    expect(checkRoute({ requestHeaders: { add: { x_custom_header: "1" } } }).failures).toEqual([]);
  });

  test("unknown properties are named in camelCase", () => {
    expect(checkRoute({ backend: { backendId: "bkd_1", bakendId: "x" } }).failures).toEqual([
      {
        property: "backend.bakendId",
        reason: "unknown field (check the spelling; unknown fields are never ignored)",
      },
    ]);
    expect(properties(checkRoute({ compresion: {} }).failures)).toEqual(["compresion"]);
  });

  test("a route can carry the rivals' schemas, but each auth module is still validated", () => {
    expect(
      properties(
        checkRoute({ oidc: { issuer: "http://insecure", clientId: "c", clientSecret: "s" } }).failures,
      ),
    ).toEqual(["oidc.issuer"]);
    expect(properties(checkRoute({ saml: { idpMetadata: "not xml" } }).failures)).toEqual([
      "saml.idpMetadata",
    ]);
  });

  describe("edgeId", () => {
    test.each([
      ["missing", undefined],
      ["null", null],
      ["empty", ""],
    ])("%s → failure", (_name, edgeId) => {
      const { failures } = checkRoute({}, { ...base, edgeId });
      expect(failures).toEqual([
        { property: "edgeId", reason: "edgeId is required (the id of the edge, e.g. edge.id)" },
      ]);
    });

    test.each([
      ["a number", 42],
      ["bad characters", "edge/1"],
      ["an object", { id: "x" }],
    ])("%s → failure", (_name, edgeId) => {
      expect(properties(checkRoute({}, { ...base, edgeId }).failures)).toEqual(["edgeId"]);
    });

    test("unknown → no failure, kept as given", () => {
      const result = checkRoute({ edgeId: UNKNOWN });
      expect(result.failures).toEqual([]);
      expect(result.inputs.edgeId).toBe(UNKNOWN);
    });

    test("a resource without edgeId refuses one", () => {
      const result = checkEdge({ edgeId: "x" });
      expect(result.failures).toEqual([{ property: "edgeId", reason: "unknown property" }]);
    });
  });

  describe("adopt", () => {
    test.each([["yes"], [1], [null], [{}], [[true]]])("%p → must be a boolean", (adopt) => {
      expect(checkRoute({ adopt }).failures).toEqual([{ property: "adopt", reason: "must be a boolean" }]);
    });

    test.each([[true], [false], [UNKNOWN]])("%p → accepted", (adopt) => {
      const result = checkRoute({ adopt });
      expect(result.failures).toEqual([]);
      expect(result.inputs.adopt).toBe(adopt);
    });

    test("a resource without adopt refuses one", () => {
      const result = checkAgainst(routeCreateSchema, { ...base, adopt: true }, { edgeId: true });
      expect(result.failures).toEqual([{ property: "adopt", reason: "unknown property" }]);
    });
  });
});

describe("unknown values", () => {
  test("an unknown value is not judged and inputs are returned as given", () => {
    const news = { ...base, backend: { backendId: UNKNOWN } };
    expect(checkRoute({}, news)).toEqual({ inputs: news, failures: [] });
  });

  test.each([
    ["a whole module", { backend: UNKNOWN }],
    ["a list", { ipRestriction: { ipPolicyIds: UNKNOWN } }],
    ["a list element", { ipRestriction: { ipPolicyIds: ["ipp_a", UNKNOWN] } }],
    ["a header value", { requestHeaders: { add: { "X-Token": UNKNOWN } } }],
    [
      "a required secret",
      { oidc: { issuer: "https://idp.example.com", clientId: "c", clientSecret: UNKNOWN } },
    ],
    ["an issuer", { oidc: { issuer: UNKNOWN, clientId: "c", clientSecret: "s" } }],
    ["matchType and match", { matchType: UNKNOWN, match: UNKNOWN }],
    ["a webhook provider", { webhookVerification: { provider: UNKNOWN, secret: "s" } }],
    ["a number", { circuitBreaker: { numBuckets: UNKNOWN } }],
  ])("%s: no failure, inputs as given", (_name, props) => {
    const news = { ...base, ...props };
    expect(checkRoute({}, news)).toEqual({ inputs: news, failures: [] });
  });

  test("known bad siblings still fail", () => {
    const { failures } = checkRoute({
      backend: { backendId: UNKNOWN },
      circuitBreaker: { numBuckets: 500 },
      ipRestriction: { ipPolicyIds: [UNKNOWN, "bad id"] },
    });
    expect(failures).toEqual([
      {
        property: "ipRestriction.ipPolicyIds[1]",
        reason: "must be 1 to 64 characters from A-Z, a-z, 0-9 and _",
      },
      { property: "circuitBreaker.numBuckets", reason: "must be between 1 and 128" },
    ]);
  });

  test("a bad sibling inside the same module still fails", () => {
    const { failures } = checkRoute({ circuitBreaker: { trippedDuration: UNKNOWN, numBuckets: 500 } });
    expect(failures).toEqual([
      { property: "circuitBreaker.numBuckets", reason: "must be between 1 and 128" },
    ]);
  });

  test("a misspelt property is reported even while other values are unknown", () => {
    expect(checkRoute({ description: UNKNOWN, bakend: { backendId: "bkd_1" } }).failures).toEqual([
      { property: "bakend", reason: "unknown field (check the spelling; unknown fields are never ignored)" },
    ]);
    expect(checkRoute({ backend: { backendId: UNKNOWN, bakendId: "x" } }).failures).toEqual([
      {
        property: "backend.bakendId",
        reason: "unknown field (check the spelling; unknown fields are never ignored)",
      },
    ]);
    // A misspelt property whose value is unknown is still misspelt.
    expect(properties(checkRoute({ bakend: UNKNOWN }).failures)).toEqual(["bakend"]);
  });

  test("snake_case keys are rejected even while values are unknown", () => {
    expect(checkRoute({ backend: { backend_id: UNKNOWN } }).failures).toEqual([
      { property: "backend.backend_id", reason: "use camelCase property names (backendId)" },
    ]);
  });
});

describe("never throws on garbage", () => {
  test.each([
    ["null", null],
    ["undefined", undefined],
    ["a number", 42],
    ["a string", "inputs"],
    ["an array", [1, { matchType: "exact_path" }]],
    ["true", true],
  ])("news is %s → failures, no throw", (_name, news) => {
    expect(checkRouteConfig(news)).toEqual({
      inputs: {},
      failures: [{ property: "(inputs)", reason: "must be an object of properties" }],
    });
  });

  const junk: Array<[string, unknown]> = [
    ["null", null],
    ["a number", 7],
    ["NaN", Number.NaN],
    ["a string", "x"],
    ["an array", [1, "a", null, [[]]]],
    ["true", true],
    ["nested junk", { a: [{ b: { c: [null, 1, "x", { d_e: {} }] } }], f: -1 }],
  ];
  const props = [
    "matchType",
    "match",
    "description",
    "metadata",
    "backend",
    "ipRestriction",
    "circuitBreaker",
    "requestHeaders",
    "webhookVerification",
    "oauth",
    "saml",
    "oidc",
    "trafficPolicy",
  ];
  test("every property set to junk → a failure naming it, no throw", () => {
    for (const prop of props)
      for (const [name, value] of junk) {
        const text = ["match", "description", "metadata"].includes(prop);
        if (value === null && !text && prop !== "matchType") continue; // a null module means "not configured"
        if (typeof value === "string" && text) continue; // any string is a valid text
        const result = checkRoute({ [prop]: value });
        const named = result.failures.some(
          (f) =>
            f.property === prop || f.property.startsWith(`${prop}.`) || f.property.startsWith(`${prop}[`),
        );
        expect([prop, name, named]).toEqual([prop, name, true]);
      }
  });

  test("junk inside modules → failures, no throw", () => {
    const cases: Inputs[] = [
      { oauth: { provider: { github: { teams: [[[]]], clientId: {} } } } },
      { oauth: { provider: [] } },
      { oauth: { provider: { github: {}, google: {} } } },
      { requestHeaders: { add: [["X-A", "1"]] } },
      { requestHeaders: { add: { "X-A": 1 }, remove: "X-B" } },
      { ipRestriction: { ipPolicyIds: [] } },
      { ipRestriction: { ipPolicyIds: [null, 1, {}] } },
      { circuitBreaker: { numBuckets: 1.5, rollingWindow: 2 ** 40, volumeThreshold: "5" } },
      { webhookVerification: { provider: 3 } },
      { saml: { nameidFormat: "urn:nope" } },
      { userAgentFilter: { allow: { a: 1 } } },
    ];
    for (const props of cases) {
      const result = checkRoute(props);
      expect([props, result.failures.length > 0]).toEqual([props, true]);
    }
  });

  test("deeply nested junk → failures, no throw", () => {
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 200; i++) deep = { level: deep, list: [i, null, { x: [] }] };
    const result = checkRoute({ circuitBreaker: deep, userAgentFilter: { allow: [deep] } });
    expect(properties(result.failures)).toEqual([
      "circuitBreaker.level",
      "circuitBreaker.list",
      "userAgentFilter.allow[0]",
    ]);
  });

  test("absurdly deep nesting → a failure, no throw", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20000; i++) deep = { level: deep };
    const result = checkRoute({ circuitBreaker: deep });
    expect(result.failures.length).toBeGreaterThan(0);
  });
});
