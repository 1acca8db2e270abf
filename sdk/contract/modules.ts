/**
 * The 13 route modules: request shapes ("Mutate"), response shapes, and the registry that
 * the service, the client and the provider all iterate over.
 *
 * Parsing a request with these schemas yields its canonical form: every omitted field is
 * filled with its documented default (gaps.md "Shapes"), so canonical forms can be compared.
 */
import { z } from "zod";
import {
  DEFAULT_COOKIE_PREFIX,
  DEFAULT_NAMEID_FORMAT,
  ID_PATTERN,
  NAMEID_FORMATS,
  NUM_BUCKETS_MAX,
  NUM_BUCKETS_MIN,
  OAUTH_PROVIDER_KEYS,
  SECRETLESS_WEBHOOK_PROVIDER,
  WEBHOOK_PROVIDERS,
} from "./limits";

// ---------------------------------------------------------------- building blocks

/** `enabled` of every module: omitted means true. */
const enabled = z.boolean({ error: "must be a boolean" }).default(true);
const flag = z.boolean({ error: "must be a boolean" }).default(false);
const uint32 = z
  .number({ error: "must be a number" })
  .int({ error: "must be an integer" })
  .min(0, { error: "must be between 0 and 4294967295" })
  .max(4294967295, { error: "must be between 0 and 4294967295" });
const text = z.string({ error: "must be a string" }).default("");
const textList = z
  .array(z.string({ error: "must be a string" }), { error: "must be a list of strings" })
  .default([]);
const requiredText = (what: string) =>
  z
    .string({ error: `${what} is required (a non-empty string)` })
    .min(1, { error: `${what} must not be empty` });

/** Identifiers of backends and IP policies: taken as given, in the path-safe character set. */
export const idSchema = z
  .string({ error: "must be a string identifier" })
  .regex(ID_PATTERN, { error: "must be 1 to 64 characters from A-Z, a-z, 0-9 and _" });

const lowercaseList = z
  .array(
    z
      .string({ error: "must be a string" })
      .refine((s) => s === s.toLowerCase(), { error: "must be lowercase" }),
    { error: "must be a list of strings" },
  )
  .default([]);

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Header name → value. Keys are kept exactly as sent; two keys equal but for case are refused. */
const headerMap = z
  .record(
    z.string().regex(HEADER_NAME, { error: "is not a valid HTTP header name" }),
    z.string({ error: "must be a string" }),
    { error: "must be an object mapping header names to values" },
  )
  .superRefine((map, ctx) => {
    const seen = new Map<string, string>();
    for (const key of Object.keys(map)) {
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
  .default({});
const headerNameList = z
  .array(z.string().regex(HEADER_NAME, { error: "is not a valid HTTP header name" }), {
    error: "must be a list of header names",
  })
  .default([]);

/** Ref: how responses point at another resource. */
export const refSchema = z.object({ id: z.string(), uri: z.string() });
export type Ref = z.infer<typeof refSchema>;

/** Session fields shared by OAuth, SAML and OIDC. */
const sessionFields = {
  options_passthrough: flag,
  cookie_prefix: z.string({ error: "must be a string" }).default(DEFAULT_COOKIE_PREFIX),
  inactivity_timeout: uint32.default(0),
  maximum_duration: uint32.default(0),
};

// ---------------------------------------------------------------- modules

export const backendMutateSchema = z.strictObject({
  enabled,
  backend_id: idSchema,
});
export const backendResponseSchema = z.object({ enabled: z.boolean(), backend: refSchema });

export const ipPolicyMutateSchema = z.strictObject({
  enabled,
  ip_policy_ids: z
    .array(idSchema, { error: "must be a list of IP policy ids" })
    .min(1, { error: "must list at least one IP policy id" }),
});
/** gaps.md: `ip_policies` is a list of Refs, in the order of `ip_policy_ids`. */
export const ipPolicyResponseSchema = z.object({ enabled: z.boolean(), ip_policies: z.array(refSchema) });

export const circuitBreakerSchema = z.strictObject({
  enabled,
  tripped_duration: uint32.default(0),
  rolling_window: uint32.default(0),
  /** 1..128 when given; 0 in responses means "not set". */
  num_buckets: z
    .number({ error: "must be a number" })
    .int({ error: "must be an integer" })
    .min(NUM_BUCKETS_MIN, { error: `must be between ${NUM_BUCKETS_MIN} and ${NUM_BUCKETS_MAX}` })
    .max(NUM_BUCKETS_MAX, { error: `must be between ${NUM_BUCKETS_MIN} and ${NUM_BUCKETS_MAX}` })
    .default(0),
  volume_threshold: uint32.default(0),
  /** A fraction between 0 and 1.0, not a percentage of 100. */
  error_threshold_percentage: z
    .number({ error: "must be a number" })
    .min(0, { error: "must be a fraction between 0 and 1.0 (not a percentage of 100)" })
    .max(1, { error: "must be a fraction between 0 and 1.0 (not a percentage of 100)" })
    .default(0),
});

/** Responses report an unset `num_buckets` as 0. */
export const circuitBreakerResponseSchema = circuitBreakerSchema.extend({
  num_buckets: z.number().int().min(0).max(NUM_BUCKETS_MAX),
});

export const compressionSchema = z.strictObject({ enabled });
export const websocketTcpConverterSchema = z.strictObject({ enabled });

export const requestHeadersSchema = z.strictObject({ enabled, add: headerMap, remove: headerNameList });
export const responseHeadersSchema = z.strictObject({ enabled, add: headerMap, remove: headerNameList });

export const webhookVerificationSchema = z
  .strictObject({
    enabled,
    provider: z
      .string({ error: "is required (one of the supported webhook providers)" })
      .transform((s) => s.toLowerCase())
      .pipe(z.enum(WEBHOOK_PROVIDERS, { error: "is not a supported webhook provider" })),
    secret: text,
  })
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
  client_id: text,
  client_secret: text,
  scopes: textList,
  email_addresses: lowercaseList,
  email_domains: lowercaseList,
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
    teams: z
      .array(z.string().regex(TEAM_SLUG, { error: 'must have the form "<org_slug>/<team_slug>"' }))
      .default([]),
    organizations: textList,
  })
  .superRefine(ownAppRules);
export const oauthProviderObjectSchema = z.strictObject(oauthProviderFields).superRefine(ownAppRules);

const otherSlot = oauthProviderObjectSchema.nullable().default(null);
/** One optional object per identity provider (edge-api.md slots 1 to 8); exactly one is set. */
export const oauthProviderSchema = z
  .strictObject(
    {
      github: oauthGithubSchema.nullable().default(null),
      facebook: otherSlot,
      microsoft: otherSlot,
      google: otherSlot,
      linkedin: otherSlot,
      gitlab: otherSlot,
      twitch: otherSlot,
      amazon: otherSlot,
    },
    { error: "must be an object with exactly one identity provider (github, google, ...)" },
  )
  .superRefine((v, ctx) => {
    const configured = OAUTH_PROVIDER_KEYS.filter((k) => (v as Record<string, unknown>)[k] != null);
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
  });

export const oauthSchema = z.strictObject({
  enabled,
  provider: oauthProviderSchema,
  ...sessionFields,
  auth_check_interval: uint32.default(0),
});

const httpsUrl = z.string({ error: "is required (an https URL)" }).refine(
  (s) => {
    try {
      return new URL(s).protocol === "https:";
    } catch {
      return false;
    }
  },
  { error: "must be an https URL" },
);

export const oidcSchema = z.strictObject({
  enabled,
  ...sessionFields,
  issuer: httpsUrl,
  client_id: requiredText("client_id"),
  client_secret: requiredText("client_secret"),
  scopes: textList,
});

const ENTITY_DESCRIPTOR = /<\s*(?:[A-Za-z_][\w.-]*:)?EntityDescriptor[\s>/]/;
export const samlMutateSchema = z.strictObject({
  enabled,
  ...sessionFields,
  idp_metadata: z
    .string({ error: "is required (the IdP's XML EntityDescriptor)" })
    .refine((s) => s.trimStart().startsWith("<") && ENTITY_DESCRIPTOR.test(s), {
      error: "must be XML metadata containing an EntityDescriptor",
    }),
  force_authn: flag,
  allow_idp_initiated: flag,
  authorized_groups: textList,
  nameid_format: z
    .enum(NAMEID_FORMATS, { error: `must be one of ${NAMEID_FORMATS.join(", ")}` })
    .default(DEFAULT_NAMEID_FORMAT),
});
/** Fields the service computes for a SAML module; they appear only in responses. */
export const samlComputedSchema = z.object({
  entity_id: z.string(),
  assertion_consumer_service_url: z.string(),
  single_logout_url: z.string(),
  request_signing_certificate_pem: z.string(),
  metadata_url: z.string(),
});
export const samlResponseSchema = z.object({ ...samlMutateSchema.shape, ...samlComputedSchema.shape });

export const userAgentFilterSchema = z.strictObject({ enabled, allow: textList, deny: textList });

export const trafficPolicySchema = z.strictObject({ enabled, value: requiredText("value") });

// ---------------------------------------------------------------- registry

/**
 * Every route module, in the order of edge-api.md. The name is both the route field and the
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
export const ROUTE_MODULE_NAMES = Object.keys(ROUTE_MODULES) as RouteModuleName[];
export function isRouteModuleName(name: string): name is RouteModuleName {
  return Object.hasOwn(ROUTE_MODULES, name);
}

/** Modules that authenticate end users; a route carries at most one of them. */
export const AUTH_MODULES = ["oauth", "oidc", "saml"] as const satisfies readonly RouteModuleName[];
export type AuthModuleName = (typeof AUTH_MODULES)[number];

/** Canonical request shape of a module (what parsing a request yields). */
export type ModuleRequest<M extends RouteModuleName> = z.output<(typeof ROUTE_MODULES)[M]["request"]>;
/** Request shape as a caller may write it (defaults optional). */
export type ModuleRequestInput<M extends RouteModuleName> = z.input<(typeof ROUTE_MODULES)[M]["request"]>;
export type ModuleResponse<M extends RouteModuleName> = z.output<(typeof ROUTE_MODULES)[M]["response"]>;

export type ModuleRequests = { [M in RouteModuleName]: ModuleRequest<M> };
export type ModuleRequestInputs = { [M in RouteModuleName]: ModuleRequestInput<M> };
export type ModuleResponses = { [M in RouteModuleName]: ModuleResponse<M> };
