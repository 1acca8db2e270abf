/**
 * Shared fixtures of the provider unit tests: canonical inputs (through the provider's own
 * `check`), the bundled service itself on an in-memory store (its real rules for create, PATCH
 * and module DELETE, its real responses), and valid samples of all 13 modules. No Pulumi
 * engine, no socket.
 */
import { EdgeClient } from "../../sdk/client";
import {
  AUTH_MODULES,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type Route,
  type RouteModuleName,
} from "../../sdk/contract";
import { createEdgeApp } from "../../service/http/app";
import { SqliteStore } from "../../service/store/store-sqlite";
import type { Transport } from "../../sdk/transport";
import { fromWire, toWire } from "../../provider/model/case";
import {
  checkRoute,
  decodeRoute,
  MODULE_PROPERTY,
  routeCreateRequest,
  routeOutputsOf,
} from "../../provider/model/route";
import type { RouteConfig, RouteOutputs } from "../../provider/model/types";

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
export function desired(props: Inputs): RouteConfig {
  const checked = checkRoute({ edgeId: EDGE_ID, matchType: "path_prefix", match: "/app", ...props });
  if (checked.failures.length > 0) throw new Error(`invalid sample: ${JSON.stringify(checked.failures)}`);
  return checked.inputs;
}

/** A module's canonical value (defaults filled), e.g. to compare with outputs. */
export function canonicalModule(name: RouteModuleName, value: unknown): Inputs {
  return fromWire(ROUTE_MODULES[name].request.parse(toWire(value, [name])), [name]);
}

// ---------------------------------------------------------------- the real service, in memory

/**
 * The bundled service on an in-memory store, reached through a transport that hands requests to
 * its app (no socket): the real rules, not a model of them. `failing(n)` makes the n-th mutating
 * request from now on fail with a 500 before it reaches the service.
 */
function inMemoryService() {
  const app = createEdgeApp({ store: SqliteStore.open(":memory:") });
  let failIn = 0;
  const transport: Transport = {
    baseUrl: BASE_URL,
    async send(request) {
      if (request.method !== "GET" && failIn > 0 && --failIn === 0) {
        return Response.json(
          { error_code: "ERR_EDGE_500", status_code: 500, msg: "disk full", details: { operation_id: "op" } },
          { status: 500 },
        );
      }
      return app.fetch(request);
    },
  };
  return {
    client: new EdgeClient(transport),
    failing(n: number) {
      failIn = n;
    },
  };
}

export const service = inMemoryService();

/** The route the service stores for these desired inputs, on an edge of its own. */
export async function stored(want: RouteConfig): Promise<Route> {
  const edge = await service.client.createHttpsEdge({});
  return service.client.createRoute(edge.id, routeCreateRequest(want));
}

/**
 * The "current" side of a diff for a route the service answered, exactly as the faces build it
 * (the response → outputs in state → decoded), on the edge the desired side names.
 */
export function currentOf(route: Route, edgeId = EDGE_ID): RouteConfig {
  return { ...decodeRoute(routeOutputsOf(route)), edge_id: edgeId };
}

/** The outputs a face stores for the route the service makes of these desired inputs (on their edge). */
export async function storedOutputs(want: RouteConfig): Promise<RouteOutputs> {
  return { ...routeOutputsOf(await stored(want)), edgeId: want.edge_id };
}

/** The current side right after creating the route these desired inputs describe. */
export async function createdFrom(want: RouteConfig): Promise<RouteConfig> {
  return currentOf(await stored(want), want.edge_id);
}
