/**
 * Shared fixtures of the provider unit tests: canonical inputs (through the provider's own
 * `check`), a pure in-memory model of the service's route semantics (what a response looks like
 * for a stored route, what PATCH and module DELETE do), and valid samples of all 13 modules.
 * No Pulumi engine, no server, no I/O.
 */
import {
  AUTH_MODULES,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type Route,
  type RouteCreateCanonical,
  type RouteModuleName,
  routeCreateSchema,
  routeSchema,
  routeUpdateSchema,
} from "../../sdk/contract";
import { fromWire, toWire } from "../../provider/model/case";
import {
  MODULE_PROPERTY,
  checkRoute,
  routeCanonical,
  routeCreateRequest,
  routeFromResponse,
} from "../../provider/model/route";
import type { RouteInputs } from "../../provider/model/types";
import type { RouteStep } from "../../provider/plan/types";

export const EDGE_ID = "edghts_000000000000000000000000001";
export const OTHER_EDGE_ID = "edghts_000000000000000000000000002";
export const ROUTE_ID = "edghtsrt_00000000000000000000000001";
export const BASE_URL = "https://api.edge.test";

export const IDP_METADATA =
  '<?xml version="1.0" encoding="UTF-8"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ' +
  'entityID="https://idp.example.com/metadata"><md:IDPSSODescriptor protocolSupportEnumeration=' +
  '"urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>';

export type Inputs = Record<string, unknown>;

/** A full, valid, non-default Pulumi-side sample of every module (as a user would write it). */
export const MODULE_SAMPLES: Record<RouteModuleName, Inputs> = {
  backend: { backendId: "bkd_1" },
  ip_restriction: { ipPolicyIds: ["ipp_b", "ipp_a"] },
  circuit_breaker: {
    trippedDuration: 30,
    rollingWindow: 60,
    numBuckets: 10,
    volumeThreshold: 5,
    errorThresholdPercentage: 0.5,
  },
  compression: { enabled: false },
  request_headers: { add: { "X-Foo": "1", x_custom_header: "2" }, remove: ["X-Drop_Me"] },
  response_headers: { add: { "Strict-Transport-Security": "max-age=1", X_Y: "z" }, remove: ["Server"] },
  webhook_verification: { provider: "Stripe", secret: "whsec_1" },
  oauth: {
    provider: {
      github: {
        clientId: "cid",
        clientSecret: "csec",
        scopes: ["read:org"],
        emailAddresses: ["a@example.com"],
        emailDomains: ["example.com"],
        teams: ["acme/ops"],
        organizations: ["acme"],
      },
    },
    optionsPassthrough: true,
    cookiePrefix: "app.",
    inactivityTimeout: 600,
    maximumDuration: 86400,
    authCheckInterval: 300,
  },
  saml: {
    idpMetadata: IDP_METADATA,
    forceAuthn: true,
    allowIdpInitiated: true,
    authorizedGroups: ["admins"],
    nameidFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    cookiePrefix: "sso.",
  },
  oidc: {
    issuer: "https://idp.example.com",
    clientId: "oidc_client",
    clientSecret: "oidc_secret",
    scopes: ["openid", "email"],
    maximumDuration: 3600,
  },
  websocket_tcp_converter: { enabled: false },
  user_agent_filter: { allow: ["curl/.*"], deny: ["bot"] },
  traffic_policy: { value: "on_http_request: []" },
};

/** The smallest valid Pulumi-side value of every module (everything else defaulted). */
export const MODULE_MINIMAL: Record<RouteModuleName, Inputs> = {
  backend: { backendId: "bkd_1" },
  ip_restriction: { ipPolicyIds: ["ipp_a"] },
  circuit_breaker: {},
  compression: {},
  request_headers: {},
  response_headers: {},
  webhook_verification: { provider: "sns" },
  oauth: { provider: { google: {} } },
  saml: { idpMetadata: IDP_METADATA },
  oidc: { issuer: "https://idp.example.com", clientId: "c", clientSecret: "s" },
  websocket_tcp_converter: {},
  user_agent_filter: {},
  traffic_policy: { value: "p" },
};

/** Every module but the given auth module's two rivals (a route has at most one auth module). */
export function allModulesWith(auth: (typeof AUTH_MODULES)[number]): Inputs {
  const out: Inputs = {};
  for (const name of ROUTE_MODULE_NAMES) {
    if ((AUTH_MODULES as readonly string[]).includes(name) && name !== auth) continue;
    out[MODULE_PROPERTY[name]] = MODULE_SAMPLES[name];
  }
  return out;
}

/** What the provider's `check` makes of these route inputs (must be valid): the "desired" side. */
export function desired(props: Inputs): RouteInputs {
  const checked = checkRoute({ edgeId: EDGE_ID, matchType: "path_prefix", match: "/app", ...props });
  if (checked.failures.length > 0) throw new Error(`invalid sample: ${JSON.stringify(checked.failures)}`);
  return checked.inputs;
}

/** A module's canonical Pulumi-side value (defaults filled), e.g. to compare with outputs. */
export function canonicalModule(name: RouteModuleName, value: unknown): Inputs {
  return fromWire(ROUTE_MODULES[name].request.parse(toWire(value, [name])), [name]);
}

// ---------------------------------------------------------------- the service, as a pure model

/** A stored route: canonical wire fields, modules in request shape, null when not configured. */
export type WireRoute = Record<string, unknown> & {
  match_type: string;
  match: string;
  description: string;
  metadata: string;
};

/** What the service stores for a create body (validated like the real service does). */
export function storeCreate(body: unknown): WireRoute {
  const parsed: RouteCreateCanonical = routeCreateSchema.parse(body);
  const route: WireRoute = { ...parsed } as WireRoute;
  for (const name of ROUTE_MODULE_NAMES) route[name] = parsed[name] ?? null;
  assertOneAuth(route);
  return route;
}

function assertOneAuth(route: WireRoute): void {
  const auth = AUTH_MODULES.filter((m) => route[m] != null);
  if (auth.length > 1) throw new Error(`400: at most one of oauth, oidc, saml (got ${auth.join(", ")})`);
}

/**
 * One plan step against the stored route, with the API's rules: the PATCH body must be a valid
 * update; a present module replaces that module whole; at most one auth module at any time;
 * deleting a module that is not configured is a 404 (a correct plan never does it).
 */
export function applyStep(route: WireRoute, step: RouteStep): WireRoute {
  const next: WireRoute = { ...route };
  if (step.op === "deleteModule") {
    if (route[step.module] == null) throw new Error(`404: module ${step.module} is not configured`);
    next[step.module] = null;
    return next;
  }
  const parsed = routeUpdateSchema.safeParse(step.body);
  if (!parsed.success) throw new Error(`400: invalid PATCH body ${JSON.stringify(step.body)}`);
  for (const [key, value] of Object.entries(parsed.data)) {
    if (value === undefined || value === null) continue; // absent or null: left unchanged
    next[key] = value;
  }
  assertOneAuth(next);
  return next;
}

/** The route resource the service returns for a stored route (response shapes, Refs, SAML fields). */
export function respond(route: WireRoute, edgeId = EDGE_ID, id = ROUTE_ID): Route {
  const uri = `${BASE_URL}/edges/https/${edgeId}/routes/${id}`;
  const body: Record<string, unknown> = {
    id,
    edge_id: edgeId,
    created_at: "2026-01-02T03:04:05Z",
    uri,
    match_type: route.match_type,
    match: route.match,
    description: route.description,
    metadata: route.metadata,
  };
  for (const name of ROUTE_MODULE_NAMES) {
    const m = route[name] as Record<string, any> | null;
    if (m == null) body[name] = null;
    else if (name === "backend")
      body[name] = {
        enabled: m.enabled,
        backend: { id: m.backend_id, uri: `${BASE_URL}/backends/${m.backend_id}` },
      };
    else if (name === "circuit_breaker") body[name] = { ...m, num_buckets: m.num_buckets ?? 0 };
    else if (name === "ip_restriction")
      body[name] = {
        enabled: m.enabled,
        ip_policies: (m.ip_policy_ids as string[]).map((p) => ({
          id: p,
          uri: `${BASE_URL}/ip_policies/${p}`,
        })),
      };
    else if (name === "saml")
      body[name] = {
        ...m,
        entity_id: `${BASE_URL}/saml/${id}/metadata`,
        metadata_url: `${BASE_URL}/saml/${id}/metadata`,
        assertion_consumer_service_url: `${BASE_URL}/saml/${id}/acs`,
        single_logout_url: `${BASE_URL}/saml/${id}/slo`,
        request_signing_certificate_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
      };
    else body[name] = m;
  }
  return routeSchema.parse(body);
}

/** The "current" side of a diff for a stored route, exactly as the dynamic provider builds it. */
export function currentOf(route: WireRoute): RouteInputs {
  return routeCanonical(routeFromResponse(respond(route)));
}

/** The current side right after creating the route these desired inputs describe. */
export function createdFrom(want: RouteInputs): RouteInputs {
  return currentOf(storeCreate(routeCreateRequest(want)));
}
