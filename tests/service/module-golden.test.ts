/**
 * THE GOLDEN PINS of the modules' wire shape: the one place their answers are written by hand.
 *
 * The other service tests derive what they expect from the request through the contract
 * (`expectedModule` in helpers.ts: the module's schema fills the defaults, render builds the
 * response), which is the service's own code: on its own that proves nothing about the shape. So
 * here, per module, a request and the answer written out literally, checked two ways: the
 * contract's derivation and the service's real answer (both stores) must both contain it.
 *
 * A pin lists the fields of today's shape (`toMatchObject`: a field added later with a default
 * does not break it; a field renamed, dropped or given another default does). The set of keys
 * is held to the response schema, so nothing outside the contract slips in. When you add a
 * field, add its default here too if you want it pinned; nothing else has to change.
 */
import {
  DEFAULT_NAMEID_FORMAT,
  OAUTH_PROVIDER_KEYS,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
} from "../../sdk/contract";
import {
  CERTIFICATE_PEM,
  expectedModule,
  FIXTURES,
  type Fixture,
  IDP_METADATA,
  MODULE_SAMPLE_REQUESTS,
  raw,
  uniqueMatch,
} from "./helpers";

const BASE = "{base}";
const ROUTE = "{route}";

const SESSION = {
  options_passthrough: false,
  cookie_prefix: "edge.",
  inactivity_timeout: 0,
  maximum_duration: 0,
};
const NO_SLOTS = Object.fromEntries(OAUTH_PROVIDER_KEYS.map((k) => [k, null]));
const EMPTY_PROVIDER = {
  client_id: "",
  client_secret: "",
  scopes: [],
  email_addresses: [],
  email_domains: [],
};

/** Per module: [what the pin shows, request, the answer written by hand]. `{base}`/`{route}` are filled in. */
const GOLDEN: Array<[RouteModuleName, string, unknown, Record<string, unknown>]> = [
  [
    "backend",
    "the sample",
    MODULE_SAMPLE_REQUESTS.backend,
    { enabled: true, backend: { id: "bkd_primary1", uri: `${BASE}/backends/bkd_primary1` } },
  ],
  [
    "ip_restriction",
    "the sample: Refs in the order of the ids",
    MODULE_SAMPLE_REQUESTS.ip_restriction,
    {
      enabled: false,
      ip_policies: ["ipp_b", "ipp_a", "ipp_c"].map((id) => ({ id, uri: `${BASE}/ip_policies/${id}` })),
    },
  ],
  [
    "circuit_breaker",
    "the sample",
    MODULE_SAMPLE_REQUESTS.circuit_breaker,
    {
      enabled: true,
      tripped_duration: 30,
      rolling_window: 0,
      num_buckets: 10,
      volume_threshold: 0,
      error_threshold_percentage: 0,
    },
  ],
  [
    "circuit_breaker",
    "all zero values, an unset num_buckets read back as 0",
    {},
    {
      enabled: true,
      tripped_duration: 0,
      rolling_window: 0,
      num_buckets: 0,
      volume_threshold: 0,
      error_threshold_percentage: 0,
    },
  ],
  ["compression", "defaults", {}, { enabled: true }],
  [
    "request_headers",
    "the sample: key case kept",
    MODULE_SAMPLE_REQUESTS.request_headers,
    { enabled: true, add: { "X-Foo": "bar", "x-MiXeD-Case": "v" }, remove: [] },
  ],
  ["request_headers", "defaults", {}, { enabled: true, add: {}, remove: [] }],
  [
    "response_headers",
    "the sample",
    MODULE_SAMPLE_REQUESTS.response_headers,
    { enabled: true, add: {}, remove: ["Server", "X-Powered-By"] },
  ],
  ["response_headers", "disabled", { enabled: false }, { enabled: false, add: {}, remove: [] }],
  [
    "webhook_verification",
    "the sample: provider lowercased",
    MODULE_SAMPLE_REQUESTS.webhook_verification,
    { enabled: true, provider: "github", secret: "whsec_sample" },
  ],
  [
    "webhook_verification",
    "sns without a secret",
    { provider: "SNS" },
    { enabled: true, provider: "sns", secret: "" },
  ],
  [
    "oauth",
    "the sample: github's zero values, the other slots null",
    MODULE_SAMPLE_REQUESTS.oauth,
    {
      enabled: true,
      provider: { ...NO_SLOTS, github: { ...EMPTY_PROVIDER, teams: [], organizations: [] } },
      ...SESSION,
      auth_check_interval: 0,
    },
  ],
  [
    "oauth",
    "another slot: no teams nor organizations",
    { provider: { google: {} } },
    { enabled: true, provider: { ...NO_SLOTS, google: EMPTY_PROVIDER }, ...SESSION, auth_check_interval: 0 },
  ],
  [
    "saml",
    "the sample: defaults and the computed fields",
    MODULE_SAMPLE_REQUESTS.saml,
    {
      enabled: true,
      ...SESSION,
      idp_metadata: IDP_METADATA,
      force_authn: false,
      allow_idp_initiated: false,
      authorized_groups: [],
      nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
      entity_id: `${BASE}/saml/${ROUTE}/metadata`,
      metadata_url: `${BASE}/saml/${ROUTE}/metadata`,
      assertion_consumer_service_url: `${BASE}/saml/${ROUTE}/acs`,
      single_logout_url: `${BASE}/saml/${ROUTE}/slo`,
      request_signing_certificate_pem: CERTIFICATE_PEM,
    },
  ],
  [
    "oidc",
    "the sample",
    MODULE_SAMPLE_REQUESTS.oidc,
    {
      enabled: true,
      ...SESSION,
      issuer: "https://accounts.example.com",
      client_id: "cid",
      client_secret: "csecret",
      scopes: [],
    },
  ],
  [
    "websocket_tcp_converter",
    "the sample",
    MODULE_SAMPLE_REQUESTS.websocket_tcp_converter,
    { enabled: false },
  ],
  [
    "user_agent_filter",
    "the sample",
    MODULE_SAMPLE_REQUESTS.user_agent_filter,
    { enabled: true, allow: [], deny: ["curl/.*"] },
  ],
  [
    "traffic_policy",
    "the sample",
    MODULE_SAMPLE_REQUESTS.traffic_policy,
    { enabled: true, value: '{"on_http_request":[]}' },
  ],
];

/** The pin with `{base}` and `{route}` filled in (a matcher stays a matcher). */
function fill(value: unknown, base: string, route: string): unknown {
  if (typeof value === "string") return value.replaceAll(BASE, base).replaceAll(ROUTE, route);
  if (Array.isArray(value)) return value.map((v) => fill(v, base, route));
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, base, route)]));
  return value;
}

/** The keys a module's answer has: its response schema's. */
const responseKeys = (m: RouteModuleName) => Object.keys(ROUTE_MODULES[m].response.shape).sort();

test("every module has a pin, and the pins keep today's defaults", () => {
  expect([...new Set(GOLDEN.map(([m]) => m))].sort()).toEqual([...ROUTE_MODULE_NAMES].sort());
  expect(DEFAULT_NAMEID_FORMAT).toBe("urn:oasis:names:tc:SAML:2.0:nameid-format:persistent");
});

test.each(GOLDEN)("the contract renders %s (%s) as pinned", (m, _what, request, pinned) => {
  const derived = expectedModule(m, request, "https://h.example", "edghtsrt_x");
  expect(derived).toMatchObject(fill(pinned, "https://h.example", "edghtsrt_x") as object);
  expect(Object.keys(derived).sort()).toEqual(responseKeys(m));
});

describe.each(FIXTURES)("the service's answers match the pins %s", (_name, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge()).id;
  });
  afterAll(async () => {
    await fx.close();
  });

  test.each(GOLDEN)("%s (%s)", async (m, _what, request, pinned) => {
    const route = await fx.client.createRoute(edgeId, {
      match_type: "path_prefix",
      match: uniqueMatch("gold"),
    });
    const put = await raw(fx.transport, "PUT", `/edges/https/${edgeId}/routes/${route.id}/${m}`, {
      body: request,
    });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject(fill(pinned, fx.baseUrl, route.id) as object);
    expect(Object.keys(put.json).sort()).toEqual(responseKeys(m));
    expect(put.json).toEqual(expectedModule(m, request, fx.baseUrl, route.id));
  });
});
