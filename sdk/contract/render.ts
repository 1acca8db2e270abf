/**
 * A module's request shape (what a route stores) rendered as its response shape, and the inverse:
 * the contract's mapping of request to response (backend_id → backend Ref, ip_policy_ids →
 * ip_policies Refs), total responses (an unset num_buckets reads back as 0:
 * docs/decisions.md#shapes) and the SAML fields the service computes. The service renders with it;
 * the provider reads responses back with its inverse. Stated side by side, so the two cannot drift
 * (a round-trip property test holds them to it).
 */
import {
  type ModuleRequest,
  type ModuleResponse,
  NUM_BUCKETS_UNSET,
  type Ref,
  type RouteModuleName,
  samlComputedSchema,
} from "./modules";

/** What a rendering needs beyond the stored configuration. */
export interface RenderContext {
  /** The origin the caller used: every Ref and URL is built on it. */
  baseUrl: string;
  /** The route's id (SAML's URLs name it). */
  routeId: string;
  /** The route's SAML request-signing certificate (SAML only). */
  samlCertificatePem: string;
}

interface Mapping<M extends RouteModuleName> {
  render(config: ModuleRequest<M>, ctx: RenderContext): ModuleResponse<M>;
  request(response: ModuleResponse<M>): ModuleRequest<M>;
}

export const backendRef = (id: string, baseUrl: string): Ref => ({ id, uri: `${baseUrl}/backends/${id}` });
export const ipPolicyRef = (id: string, baseUrl: string): Ref => ({
  id,
  uri: `${baseUrl}/ip_policies/${id}`,
});

/** The IP policies module, as a route's `ip_restriction` and as a TLS edge's own module. */
export const ipPolicyMapping: Mapping<"ip_restriction"> = {
  render: (c, { baseUrl }) => ({
    enabled: c.enabled,
    ip_policies: c.ip_policy_ids.map((id) => ipPolicyRef(id, baseUrl)),
  }),
  request: (r) => ({ enabled: r.enabled, ip_policy_ids: r.ip_policies.map((p) => p.id) }),
};

const SAML_COMPUTED: ReadonlySet<string> = new Set(Object.keys(samlComputedSchema.shape));

export const MODULE_MAPPINGS: { [M in RouteModuleName]: Mapping<M> } = {
  backend: {
    render: (c, { baseUrl }) => ({ enabled: c.enabled, backend: backendRef(c.backend_id, baseUrl) }),
    request: (r) => ({ enabled: r.enabled, backend_id: r.backend.id }),
  },
  ip_restriction: ipPolicyMapping,
  circuit_breaker: {
    // Responses are total: an unset num_buckets is the contract's 0, and 0 reads back as unset.
    render: (c) => ({ ...c, num_buckets: c.num_buckets ?? NUM_BUCKETS_UNSET }),
    request: ({ num_buckets, ...rest }) =>
      num_buckets === NUM_BUCKETS_UNSET ? rest : { ...rest, num_buckets },
  },
  compression: { render: (c) => c, request: (r) => r },
  request_headers: { render: (c) => c, request: (r) => r },
  response_headers: { render: (c) => c, request: (r) => r },
  webhook_verification: { render: (c) => c, request: (r) => r },
  oauth: { render: (c) => c, request: (r) => r },
  saml: {
    render: (c, { baseUrl, routeId, samlCertificatePem }) => {
      const saml = `${baseUrl}/saml/${routeId}`;
      return {
        ...c,
        entity_id: `${saml}/metadata`,
        metadata_url: `${saml}/metadata`,
        assertion_consumer_service_url: `${saml}/acs`,
        single_logout_url: `${saml}/slo`,
        request_signing_certificate_pem: samlCertificatePem,
      };
    },
    request: (r) =>
      Object.fromEntries(Object.entries(r).filter(([k]) => !SAML_COMPUTED.has(k))) as ModuleRequest<"saml">,
  },
  oidc: { render: (c) => c, request: (r) => r },
  websocket_tcp_converter: { render: (c) => c, request: (r) => r },
  user_agent_filter: { render: (c) => c, request: (r) => r },
  traffic_policy: { render: (c) => c, request: (r) => r },
};

/** A stored module configuration → its response shape. */
export function renderModule<M extends RouteModuleName>(
  name: M,
  config: ModuleRequest<M>,
  ctx: RenderContext,
): ModuleResponse<M> {
  return MODULE_MAPPINGS[name].render(config, ctx);
}

/** A module's response shape → the request shape that produces it (the inverse of renderModule). */
export function moduleRequestOf<M extends RouteModuleName>(
  name: M,
  response: ModuleResponse<M>,
): ModuleRequest<M> {
  return MODULE_MAPPINGS[name].request(response);
}
