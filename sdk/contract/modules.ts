/**
 * The 13 route modules: request shapes ("Mutate"), response shapes, and the registry that
 * the service, the client and the provider all iterate over.
 *
 * Parsing a request with these schemas yields its canonical form: every omitted field is
 * filled with its documented default (docs/decisions.md#shapes), so canonical forms can be
 * compared.
 */
import { z } from "zod";
import type { Problem } from "./errors";
import { keptText } from "./text";
import {
  DEFAULT_COOKIE_PREFIX,
  DEFAULT_NAMEID_FORMAT,
  ID_PATTERN,
  LIST_MAX_ITEMS,
  NAMEID_FORMATS,
  NUM_BUCKETS_MAX,
  NUM_BUCKETS_MIN,
  OAUTH_PROVIDER_KEYS,
  SECRETLESS_WEBHOOK_PROVIDER,
  tooManyItemsMessage,
  UINT32_MAX,
  WEBHOOK_PROVIDERS,
} from "./limits";

// ---------------------------------------------------------------- building blocks

/** `enabled` of every module: omitted means true. */
const enabled = z
  .boolean({ error: "must be a boolean" })
  .default(true)
  .describe("True applies the module to traffic; false disables it. Default true.");
const flag = z.boolean({ error: "must be a boolean" }).default(false);
const uint32 = z
  .number({ error: "must be a number" })
  .int({ error: "must be an integer" })
  .min(0, { error: `must be between 0 and ${UINT32_MAX}` })
  .max(UINT32_MAX, { error: `must be between 0 and ${UINT32_MAX}` });
const text = keptText({ error: "must be a string" }).default("");
/** A list of at most `max` items (LIST_MAX_ITEMS), the bound said in its description too. */
const boundedList = <T extends z.ZodType>(item: T, max: number, error: string) =>
  z.array(item, { error }).max(max, { error: tooManyItemsMessage(max) });
/** The description `schema` was given, for a schema that reuses it (a missing one is a bug here). */
const descriptionOf = (schema: z.ZodType): string => {
  if (schema.description === undefined)
    throw new Error("the contract reuses a schema's description it lacks");
  return schema.description;
};
/** " At most N." for a list's description (OpenAPI and the plugin schema carry it). */
const atMost = (max: number, what = "items") => ` At most ${max} ${what}.`;
const textList = (max: number) =>
  boundedList(keptText({ error: "must be a string" }), max, "must be a list of strings").default([]);
const requiredText = (what: string) =>
  keptText({ error: `${what} is required (a non-empty string)` }).min(1, {
    error: `${what} must not be empty`,
  });

/** Identifiers of backends and IP policies: taken as given, in the path-safe character set. */
export const idSchema = keptText({ error: "must be a string identifier" }).regex(ID_PATTERN, {
  error: "must be 1 to 64 characters from A-Z, a-z, 0-9 and _",
});

const lowercaseList = (max: number) =>
  boundedList(
    keptText({ error: "must be a string" }).refine((s) => s === s.toLowerCase(), {
      error: "must be lowercase",
    }),
    max,
    "must be a list of strings",
  ).default([]);

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Header name → value. Keys are kept exactly as sent; two keys equal but for case are refused. */
const headerMap = z
  .record(
    keptText().regex(HEADER_NAME, { error: "is not a valid HTTP header name" }),
    keptText({ error: "must be a string" }),
    { error: "must be an object mapping header names to values" },
  )
  .superRefine((map, ctx) => {
    const keys = Object.keys(map);
    if (keys.length > LIST_MAX_ITEMS.add) {
      ctx.addIssue({ code: "custom", message: tooManyItemsMessage(LIST_MAX_ITEMS.add) });
      return;
    }
    const seen = new Map<string, string>();
    for (const key of keys) {
      const lower = key.toLowerCase();
      const first = seen.get(lower);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `duplicates header "${first}" (header names are case-insensitive)`,
        });
      } else seen.set(lower, key);
    }
  })
  .meta({ maxProperties: LIST_MAX_ITEMS.add })
  .default({});
const headerNameList = boundedList(
  keptText().regex(HEADER_NAME, { error: "is not a valid HTTP header name" }),
  LIST_MAX_ITEMS.remove,
  "must be a list of header names",
).default([]);

/** Ref: how responses point at another resource. */
export const refSchema = z.object({
  id: z.string().describe("Resource identifier."),
  uri: z.string().describe("URI for locating the resource."),
});
export type Ref = z.infer<typeof refSchema>;

/** Session fields shared by OAuth, SAML and OIDC. */
const sessionFields = {
  options_passthrough: flag.describe(
    "When true, authentication is not enforced on HTTP OPTIONS requests. Needed to support CORS.",
  ),
  cookie_prefix: keptText({ error: "must be a string" })
    .default(DEFAULT_COOKIE_PREFIX)
    .describe(
      `Prefix of the session cookie set on the HTTP client to cache authentication. Default "${DEFAULT_COOKIE_PREFIX}".`,
    ),
  inactivity_timeout: uint32
    .default(0)
    .describe(
      "Seconds of inactivity after which the session times out and the user must authenticate again.",
    ),
  maximum_duration: uint32
    .default(0)
    .describe(
      "Seconds of maximum duration of an authenticated session. After it, the user must authenticate again.",
    ),
};

// ---------------------------------------------------------------- modules

export const backendMutateSchema = z
  .strictObject({
    enabled,
    backend_id: idSchema.describe("The backend to use."),
  })
  .describe("Backend module: the backend that serves the route.");
export const backendResponseSchema = z
  .object({
    enabled: z.boolean(),
    backend: refSchema.describe("The backend that backs the endpoint."),
  })
  .describe(descriptionOf(backendMutateSchema));

export const ipPolicyMutateSchema = z
  .strictObject({
    enabled,
    ip_policy_ids: boundedList(idSchema, LIST_MAX_ITEMS.ip_policy_ids, "must be a list of IP policy ids")
      .min(1, { error: "must list at least one IP policy id" })
      .describe(
        `All IP policies used to check whether a source IP may access the endpoint. At least one, at most ${LIST_MAX_ITEMS.ip_policy_ids}; their order carries no meaning.`,
      ),
  })
  .describe("IP restriction module: only source IPs allowed by its IP policies get through.");
/** docs/decisions.md#shapes: `ip_policies` is a list of Refs, in the order of `ip_policy_ids`. */
export const ipPolicyResponseSchema = z
  .object({
    enabled: z.boolean(),
    ip_policies: z
      .array(refSchema)
      .describe("The IP policies used to check source IPs, in the order of `ip_policy_ids`."),
  })
  .describe(descriptionOf(ipPolicyMutateSchema));

const NUM_BUCKETS_TEXT = "Number of buckets into which metrics are kept.";
export const circuitBreakerSchema = z
  .strictObject({
    enabled,
    tripped_duration: uint32
      .default(0)
      .describe("Seconds to wait, after the circuit is tripped, before re-evaluating upstream health."),
    rolling_window: uint32
      .default(0)
      .describe("Seconds of the statistical rolling window in which metrics are kept."),
    /** Unset when omitted: a request may only send 1..128 (responses render unset as 0). */
    num_buckets: z
      .number({ error: "must be a number" })
      .int({ error: "must be an integer" })
      .min(NUM_BUCKETS_MIN, { error: `must be between ${NUM_BUCKETS_MIN} and ${NUM_BUCKETS_MAX}` })
      .max(NUM_BUCKETS_MAX, { error: `must be between ${NUM_BUCKETS_MIN} and ${NUM_BUCKETS_MAX}` })
      .optional()
      .describe(`${NUM_BUCKETS_TEXT} ${NUM_BUCKETS_MIN} to ${NUM_BUCKETS_MAX}; omitted means unset.`),
    volume_threshold: uint32
      .default(0)
      .describe(
        "Number of requests in a rolling window that trips the circuit. Useful when traffic volume is low.",
      ),
    error_threshold_percentage: z
      .number({ error: "must be a number" })
      .min(0, { error: "must be a fraction between 0 and 1.0 (not a percentage of 100)" })
      .max(1, { error: "must be a fraction between 0 and 1.0 (not a percentage of 100)" })
      .default(0)
      .describe("Error rate that trips the circuit: a fraction between 0 and 1.0, not a percentage of 100."),
  })
  .describe("Circuit breaker module: stops sending requests to an unhealthy upstream.");

/**
 * Responses are total (docs/decisions.md#shapes): an unset `num_buckets` is rendered as 0, the only
 * place a 0 exists. Readers map it back to "unset" (absent).
 */
export const circuitBreakerResponseSchema = circuitBreakerSchema
  .extend({
    num_buckets: z
      .number()
      .int()
      .min(0)
      .max(NUM_BUCKETS_MAX)
      .describe(`${NUM_BUCKETS_TEXT} 0 when unset, else ${NUM_BUCKETS_MIN} to ${NUM_BUCKETS_MAX}.`),
  })
  .describe(descriptionOf(circuitBreakerSchema));
/** What an unset `num_buckets` reads back as. */
export const NUM_BUCKETS_UNSET = 0;

export const compressionSchema = z
  .strictObject({ enabled })
  .describe("Compression module: compresses responses for clients that accept it.");
export const websocketTcpConverterSchema = z
  .strictObject({ enabled })
  .describe("Websocket-to-TCP converter module: a websocket to TCP adapter.");

export const requestHeadersSchema = z
  .strictObject({
    enabled,
    add: headerMap.describe(
      `Header name to value, injected into the HTTP request before it goes to the upstream server. Names are kept exactly as written.${atMost(LIST_MAX_ITEMS.add, "headers")}`,
    ),
    remove: headerNameList.describe(
      `Header names removed from the request before it goes to the upstream server.${atMost(LIST_MAX_ITEMS.remove)}`,
    ),
  })
  .describe("Request headers module: adds and removes headers of requests going upstream.");
export const responseHeadersSchema = z
  .strictObject({
    enabled,
    add: headerMap.describe(
      `Header name to value, injected into the HTTP response returned to the client. Names are kept exactly as written.${atMost(LIST_MAX_ITEMS.add, "headers")}`,
    ),
    remove: headerNameList.describe(
      `Header names removed from the response returned to the client.${atMost(LIST_MAX_ITEMS.remove)}`,
    ),
  })
  .describe("Response headers module: adds and removes headers of responses to the client.");

export const webhookVerificationSchema = z
  .strictObject({
    enabled,
    provider: keptText({ error: "is required (one of the supported webhook providers)" })
      .transform((s) => s.toLowerCase())
      .pipe(z.enum(WEBHOOK_PROVIDERS, { error: "is not a supported webhook provider" }))
      .describe(
        'The webhook provider that sends webhooks to this endpoint, e.g. "github", "stripe" or "sns" (matched case-insensitively, returned lowercase).',
      ),
    secret: text.describe(
      `Secret used to validate requests from the provider. Required for every provider except "${SECRETLESS_WEBHOOK_PROVIDER}", where it is not allowed.`,
    ),
  })
  .describe("Webhook verification module: verifies that webhooks come from their provider.")
  .superRefine((v, ctx) => {
    if (v.provider === SECRETLESS_WEBHOOK_PROVIDER && v.secret !== "") {
      ctx.addIssue({
        code: "custom",
        path: ["secret"],
        message: `must not be set for provider "${v.provider}"`,
      });
    } else if (v.provider !== SECRETLESS_WEBHOOK_PROVIDER && v.secret === "") {
      ctx.addIssue({ code: "custom", path: ["secret"], message: `is required for provider "${v.provider}"` });
    }
  });

const oauthProviderFields = {
  client_id: text.describe(
    "Client ID of your own OAuth app. Optional: when omitted, the service's own managed OAuth app is used, which has extra restrictions. Requires client_secret.",
  ),
  client_secret: text.describe("Client secret of your own OAuth app. Requires client_id."),
  scopes: textList(LIST_MAX_ITEMS.scopes).describe(
    `Provider-specific scopes. Allowed only with your own app (client_id and client_secret).${atMost(LIST_MAX_ITEMS.scopes)}`,
  ),
  email_addresses: lowercaseList(LIST_MAX_ITEMS.email_addresses).describe(
    `Email addresses (lowercase) of authenticated users who are allowed access.${atMost(LIST_MAX_ITEMS.email_addresses)}`,
  ),
  email_domains: lowercaseList(LIST_MAX_ITEMS.email_domains).describe(
    `Email domains (lowercase) of authenticated users who are allowed access.${atMost(LIST_MAX_ITEMS.email_domains)}`,
  ),
};
type OAuthProviderCommon = { client_id: string; client_secret: string; scopes: string[] };
function ownAppRules(v: OAuthProviderCommon, ctx: z.RefinementCtx) {
  if ((v.client_id === "") !== (v.client_secret === "")) {
    ctx.addIssue({
      code: "custom",
      path: [v.client_id === "" ? "client_id" : "client_secret"],
      message: "client_id and client_secret must be given together (or both omitted to use the managed app)",
    });
  }
  if (v.scopes.length > 0 && (v.client_id === "" || v.client_secret === "")) {
    ctx.addIssue({
      code: "custom",
      path: ["scopes"],
      message: "scopes are allowed only with your own app (client_id and client_secret)",
    });
  }
}
const TEAM_SLUG = /^[^/\s]+\/[^/\s]+$/;
export const oauthGithubSchema = z
  .strictObject({
    ...oauthProviderFields,
    teams: boundedList(
      keptText().regex(TEAM_SLUG, { error: 'must have the form "<org_slug>/<team_slug>"' }),
      LIST_MAX_ITEMS.teams,
      "must be a list of strings",
    )
      .default([])
      .describe(
        `Team identifiers in slug format qualified with the organization, "<org_slug>/<team_slug>". A member of any listed team is allowed.${atMost(LIST_MAX_ITEMS.teams)}`,
      ),
    organizations: textList(LIST_MAX_ITEMS.organizations).describe(
      `Organization slugs. A member of any listed organization is allowed.${atMost(LIST_MAX_ITEMS.organizations)}`,
    ),
  })
  .superRefine(ownAppRules)
  .describe("GitHub as identity provider; it can also allow by team and organization.");
export const oauthProviderObjectSchema = z
  .strictObject(oauthProviderFields)
  .superRefine(ownAppRules)
  .describe("An OAuth identity provider.");

const slot = (name: string) =>
  oauthProviderObjectSchema.nullable().default(null).describe(`${name} as identity provider.`);
/** One optional object per identity provider (the contract's slots 1 to 8); exactly one is set. */
export const oauthProviderSchema = z
  .strictObject(
    {
      github: oauthGithubSchema.nullable().default(null).describe(descriptionOf(oauthGithubSchema)),
      facebook: slot("Facebook"),
      microsoft: slot("Microsoft"),
      google: slot("Google"),
      linkedin: slot("LinkedIn"),
      gitlab: slot("GitLab"),
      twitch: slot("Twitch"),
      amazon: slot("Amazon"),
    },
    { error: "must be an object with exactly one identity provider (github, google, ...)" },
  )
  .superRefine((v, ctx) => {
    const configured = OAUTH_PROVIDER_KEYS.filter((k) => v[k] != null);
    if (configured.length !== 1) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message:
          configured.length === 0
            ? `must configure exactly one identity provider (one of ${OAUTH_PROVIDER_KEYS.join(", ")})`
            : `must configure exactly one identity provider, got ${configured.join(" and ")}`,
      });
    }
  })
  .describe("The identity provider, and who may access: exactly one of its slots is set.");

export const oauthSchema = z
  .strictObject({
    enabled,
    provider: oauthProviderSchema,
    ...sessionFields,
    auth_check_interval: uint32
      .default(0)
      .describe(
        "Seconds after which the service refreshes user state from the identity provider and rechecks authorization: the preferred bound on how long a revoked user keeps access.",
      ),
  })
  .describe("OAuth module: end users authenticate with an OAuth identity provider.");

const httpsUrl = keptText({ error: "is required (an https URL)" }).refine(
  (s) => {
    try {
      return new URL(s).protocol === "https:";
    } catch {
      return false;
    }
  },
  { error: "must be an https URL" },
);

export const oidcSchema = z
  .strictObject({
    enabled,
    ...sessionFields,
    issuer: httpsUrl.describe("URL of the OpenID provider (https): the base URL for discovery."),
    client_id: requiredText("client_id").describe("Client ID of the OIDC app, also the audience."),
    client_secret: requiredText("client_secret").describe("Client secret of the OIDC app."),
    scopes: textList(LIST_MAX_ITEMS.scopes).describe(
      `Scopes requested from the identity provider.${atMost(LIST_MAX_ITEMS.scopes)}`,
    ),
  })
  .describe("OIDC module: end users authenticate with an OpenID Connect provider.");

const ENTITY_DESCRIPTOR = /<\s*(?:[A-Za-z_][\w.-]*:)?EntityDescriptor[\s>/]/;
export const samlMutateSchema = z
  .strictObject({
    enabled,
    ...sessionFields,
    idp_metadata: keptText({ error: "is required (the IdP's XML EntityDescriptor)" })
      .refine((s) => s.trimStart().startsWith("<") && ENTITY_DESCRIPTOR.test(s), {
        error: "must be XML metadata containing an EntityDescriptor",
      })
      .describe("Full XML IdP EntityDescriptor."),
    force_authn: flag.describe(
      "When true, the IdP must prompt for credentials on each redirect for authentication, even if the user has a valid IdP session.",
    ),
    allow_idp_initiated: flag.describe(
      "When true, the IdP may start a login directly. The IdP should set the RelayState parameter to the target URL to which the user is sent after the assertion is processed.",
    ),
    authorized_groups: textList(LIST_MAX_ITEMS.authorized_groups).describe(
      `When present, only members of one of the listed groups may access the endpoint.${atMost(LIST_MAX_ITEMS.authorized_groups)}`,
    ),
    nameid_format: z
      .enum(NAMEID_FORMATS, { error: `must be one of ${NAMEID_FORMATS.join(", ")}` })
      .default(DEFAULT_NAMEID_FORMAT)
      .describe(
        `Name identifier format the service expects in assertions. Default ${DEFAULT_NAMEID_FORMAT}.`,
      ),
  })
  .describe("SAML module: end users authenticate with a SAML identity provider.");
/** Fields the service computes for a SAML module; they appear only in responses. */
export const samlComputedSchema = z.object({
  entity_id: z.string().describe("Service-provider entity ID, always a URL, equal to the metadata URL."),
  assertion_consumer_service_url: z.string().describe("Public URL of the assertion consumer service."),
  single_logout_url: z.string().describe("Public URL of the single logout service."),
  request_signing_certificate_pem: z
    .string()
    .describe("PEM-encoded X.509 certificate of the key pair that signs all SAML requests made to the IdP."),
  metadata_url: z.string().describe("Public URL where the service-provider metadata is hosted."),
});
export const samlResponseSchema = z
  .object({ ...samlMutateSchema.shape, ...samlComputedSchema.shape })
  .describe(descriptionOf(samlMutateSchema));

export const userAgentFilterSchema = z
  .strictObject({
    enabled,
    allow: textList(LIST_MAX_ITEMS.allow).describe(
      `User agents allowed (the contract gives no further semantics).${atMost(LIST_MAX_ITEMS.allow)}`,
    ),
    deny: textList(LIST_MAX_ITEMS.deny).describe(
      `User agents denied (the contract gives no further semantics).${atMost(LIST_MAX_ITEMS.deny)}`,
    ),
  })
  .describe("User agent filter module.");

export const trafficPolicySchema = z
  .strictObject({
    enabled,
    value: requiredText("value").describe("The traffic policy to apply to the endpoint's traffic."),
  })
  .describe("Traffic policy module: a traffic policy applied to the route's traffic.");

// ---------------------------------------------------------------- registry

/**
 * Every route module, in the contract's order. The name is both the route field and the
 * path segment of its sub-resource.
 */
export const ROUTE_MODULES = {
  backend: { request: backendMutateSchema, response: backendResponseSchema },
  ip_restriction: { request: ipPolicyMutateSchema, response: ipPolicyResponseSchema },
  circuit_breaker: { request: circuitBreakerSchema, response: circuitBreakerResponseSchema },
  compression: { request: compressionSchema, response: compressionSchema },
  request_headers: { request: requestHeadersSchema, response: requestHeadersSchema },
  response_headers: { request: responseHeadersSchema, response: responseHeadersSchema },
  webhook_verification: { request: webhookVerificationSchema, response: webhookVerificationSchema },
  oauth: { request: oauthSchema, response: oauthSchema },
  saml: { request: samlMutateSchema, response: samlResponseSchema },
  oidc: { request: oidcSchema, response: oidcSchema },
  websocket_tcp_converter: { request: websocketTcpConverterSchema, response: websocketTcpConverterSchema },
  user_agent_filter: { request: userAgentFilterSchema, response: userAgentFilterSchema },
  traffic_policy: { request: trafficPolicySchema, response: trafficPolicySchema },
} as const;

export type RouteModuleName = keyof typeof ROUTE_MODULES;
export const ROUTE_MODULE_NAMES: readonly RouteModuleName[] =
  Object.keys(ROUTE_MODULES).filter(isRouteModuleName);

/**
 * An object `T` with one entry per module, each computed by `entry` for its module. TypeScript
 * cannot check that each key gets its own value's type (a generic key indexes a union), so the
 * caller states `T` and this is the one place that builds such maps.
 */
export function byModule<T extends { [M in RouteModuleName]: unknown }>(
  entry: (module: RouteModuleName) => unknown,
): T {
  return Object.fromEntries(ROUTE_MODULE_NAMES.map((m) => [m, entry(m)])) as T;
}
export function isRouteModuleName(name: string): name is RouteModuleName {
  return Object.hasOwn(ROUTE_MODULES, name);
}

/**
 * The credential fields of a route's modules, each as a wire path: the module, then the field
 * inside it; "*" is every identity-provider slot of OAuth. The one statement of what is secret in
 * a route: the service seals these at rest, the provider keeps them secret in Pulumi state and
 * previews (only these leaves: the rest of their module stays readable). SAML has none: its
 * request carries public IdP metadata, and the private key the service makes for it never leaves
 * the service (responses carry its certificate only).
 */
export const ROUTE_SECRET_PATHS = [
  ["webhook_verification", "secret"],
  ["oauth", "provider", "*", "client_secret"],
  ["oidc", "client_secret"],
] as const satisfies ReadonlyArray<readonly [RouteModuleName, ...string[]]>;

/** A path into a JSON value: object keys, "*" for every key of the object at that step. */
export type ValuePath = readonly string[];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `value` with `f` applied to what each of `paths` reaches (`at`: the keys walked), copied along
 * the paths, never changed in place; an absent or null value stays as it is. Where a path meets a
 * value it cannot walk into before its end (`walkable`: a plain object by default), that value
 * stays as it is, or, with `whole`, `f` gets it whole (the strongest answer for a secret). The one
 * walk of ROUTE_SECRET_PATHS: the service seals along it, the provider marks secrets along it.
 */
export function mapPaths(
  value: unknown,
  paths: readonly ValuePath[],
  f: (leaf: unknown, at: readonly string[]) => unknown,
  opts: { walkable?: (v: unknown) => v is Record<string, unknown>; whole?: boolean } = {},
): unknown {
  const walkable = opts.walkable ?? isObject;
  const walk = (v: unknown, path: ValuePath, at: readonly string[]): unknown => {
    if (v === undefined || v === null) return v;
    const [head, ...rest] = path;
    if (head === undefined) return f(v, at);
    if (!walkable(v)) return opts.whole ? f(v, at) : v;
    const out: Record<string, unknown> = { ...v };
    for (const k of head === "*" ? Object.keys(out) : [head]) {
      if (Object.hasOwn(out, k)) out[k] = walk(out[k], rest, [...at, k]);
    }
    return out;
  };
  return paths.reduce((acc, path) => (path.length === 0 ? acc : walk(acc, path, [])), value);
}

/**
 * What a secret leaf reads instead of its value where the reader may not see it: in an audit
 * event, and in a route answered to a `read` key (docs/decisions.md#read-keys-redaction). A string,
 * so that every client that parses a secret parses it; reserved, so that it always means "redacted"
 * (a write of it as a secret is refused: redactedSecretProblems).
 */
export const SECRET_REDACTED = "[redacted]";

/** `route` (or a route's modules) with every non-empty secret leaf read SECRET_REDACTED. */
export const redactSecrets = <T>(route: T): T =>
  mapPaths(route, ROUTE_SECRET_PATHS, (leaf) => (leaf === "" ? leaf : SECRET_REDACTED)) as T;

/**
 * A write's secret leaves that hold SECRET_REDACTED, as problems (`modules`: the modules as a
 * route carries them, `{webhook_verification: {...}}`): what a reader handed a redacted route
 * would send back, never a secret.
 */
export function redactedSecretProblems(modules: unknown, prefix: readonly string[] = []): Problem[] {
  const problems: Problem[] = [];
  mapPaths(modules, ROUTE_SECRET_PATHS, (leaf, at) => {
    if (leaf === SECRET_REDACTED) {
      problems.push({
        field: [...prefix, ...at].join("."),
        msg: `must not be "${SECRET_REDACTED}": that is what a key that may not read secrets is shown instead of one; send the secret itself`,
      });
    }
    return leaf;
  });
  return problems;
}

/** Modules that authenticate end users; a route carries at most one of them. */
export const AUTH_MODULES = ["oauth", "oidc", "saml"] as const satisfies readonly RouteModuleName[];
export type AuthModuleName = (typeof AUTH_MODULES)[number];
export const isAuthModule = (name: string): name is AuthModuleName => AUTH_MODULES.some((m) => m === name);

/**
 * docs/decisions.md#validation: at most one of oauth, oidc and saml on a route at a time.
 * `configured` are the modules the route would carry, `written` those the request (or program)
 * sets: the problem is reported on the one being written. The one statement of the rule, for the
 * service and the provider.
 */
export function authModuleProblem(
  configured: Iterable<string>,
  written: Iterable<string> = configured,
): Problem | undefined {
  const has = new Set(configured);
  const present = AUTH_MODULES.filter((m) => has.has(m));
  const last = present.at(-1);
  if (present.length <= 1 || last === undefined) return undefined;
  const writing = new Set(written);
  const field = present.find((m) => writing.has(m)) ?? last;
  const others = present.filter((m) => m !== field);
  return {
    field,
    msg: `a route can have only one of oauth, oidc and saml; it would also have ${others.join(" and ")} (remove ${others.length > 1 ? "those" : "that one"} first)`,
  };
}

/** Canonical request shape of a module (what parsing a request yields). */
export type ModuleRequest<M extends RouteModuleName> = z.output<(typeof ROUTE_MODULES)[M]["request"]>;
/** Request shape as a caller may write it (defaults optional). */
export type ModuleRequestInput<M extends RouteModuleName> = z.input<(typeof ROUTE_MODULES)[M]["request"]>;
export type ModuleResponse<M extends RouteModuleName> = z.output<(typeof ROUTE_MODULES)[M]["response"]>;
