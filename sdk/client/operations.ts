// Generated from the contract's operation table by scripts/client-methods.js (npm run generate):
// do not edit. One method per operation; the client (./index) adds what spans several.
import type { CreateOptions } from "./create";
import {
  type BodyOf,
  type Operation,
  OPERATIONS as OPS,
  type PathParams,
  type QueryOptionsOf,
  type SuccessOf,
} from "../contract";

/** What every call of the table goes through (the client's one request). */
export interface Requester {
  request<O extends Operation>(
    op: O,
    params: Record<PathParams<O["path"]>, string>,
    opts?: { body?: unknown; query?: QueryOptionsOf<O>; create?: CreateOptions },
  ): Promise<SuccessOf<O>>;
}

/** The operations of the table, each a method. */
export abstract class EdgeOperations implements Requester {
  abstract request<O extends Operation>(
    op: O,
    params: Record<PathParams<O["path"]>, string>,
    opts?: { body?: unknown; query?: QueryOptionsOf<O>; create?: CreateOptions },
  ): Promise<SuccessOf<O>>;

  /** Create a HTTPS edge (`POST /edges/https`). */
  createHttpsEdge(
    body: BodyOf<typeof OPS.https.create> = {},
    create?: CreateOptions,
  ): Promise<SuccessOf<typeof OPS.https.create>> {
    return this.request(OPS.https.create, {}, { body, create });
  }

  /** List HTTPS edges, newest first, a page at a time (`GET /edges/https`). */
  listHttpsEdges(query?: QueryOptionsOf<typeof OPS.https.list>): Promise<SuccessOf<typeof OPS.https.list>> {
    return this.request(OPS.https.list, {}, { query });
  }

  /** Get a HTTPS edge (`GET /edges/https/{id}`). */
  getHttpsEdge(id: string): Promise<SuccessOf<typeof OPS.https.get>> {
    return this.request(OPS.https.get, { id });
  }

  /** Delete a HTTPS edge, with its routes (`DELETE /edges/https/{id}`). */
  deleteHttpsEdge(id: string): Promise<SuccessOf<typeof OPS.https.delete>> {
    return this.request(OPS.https.delete, { id });
  }

  /** Create a TLS edge (`POST /edges/tls`). */
  createTlsEdge(
    body: BodyOf<typeof OPS.tls.create> = {},
    create?: CreateOptions,
  ): Promise<SuccessOf<typeof OPS.tls.create>> {
    return this.request(OPS.tls.create, {}, { body, create });
  }

  /** List TLS edges, newest first, a page at a time (`GET /edges/tls`). */
  listTlsEdges(query?: QueryOptionsOf<typeof OPS.tls.list>): Promise<SuccessOf<typeof OPS.tls.list>> {
    return this.request(OPS.tls.list, {}, { query });
  }

  /** Get a TLS edge (`GET /edges/tls/{id}`). */
  getTlsEdge(id: string): Promise<SuccessOf<typeof OPS.tls.get>> {
    return this.request(OPS.tls.get, { id });
  }

  /** Delete a TLS edge, with its IP restriction (`DELETE /edges/tls/{id}`). */
  deleteTlsEdge(id: string): Promise<SuccessOf<typeof OPS.tls.delete>> {
    return this.request(OPS.tls.delete, { id });
  }

  /** Create a route of an HTTPS edge (`POST /edges/https/{edge_id}/routes`). */
  createRoute(
    edgeId: string,
    body: BodyOf<typeof OPS.routes.create>,
    create?: CreateOptions,
  ): Promise<SuccessOf<typeof OPS.routes.create>> {
    return this.request(OPS.routes.create, { edge_id: edgeId }, { body, create });
  }

  /** List the routes of an HTTPS edge, newest first, a page at a time (`GET /edges/https/{edge_id}/routes`). */
  listRoutes(
    edgeId: string,
    query?: QueryOptionsOf<typeof OPS.routes.list>,
  ): Promise<SuccessOf<typeof OPS.routes.list>> {
    return this.request(OPS.routes.list, { edge_id: edgeId }, { query });
  }

  /** Get a route (`GET /edges/https/{edge_id}/routes/{id}`). */
  getRoute(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.routes.get>> {
    return this.request(OPS.routes.get, { edge_id: edgeId, id });
  }

  /** Update a route: present fields replace, a present module replaces that module whole (`PATCH /edges/https/{edge_id}/routes/{id}`). */
  updateRoute(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.routes.update> = {},
  ): Promise<SuccessOf<typeof OPS.routes.update>> {
    return this.request(OPS.routes.update, { edge_id: edgeId, id }, { body });
  }

  /** Delete a route (`DELETE /edges/https/{edge_id}/routes/{id}`). */
  deleteRoute(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.routes.delete>> {
    return this.request(OPS.routes.delete, { edge_id: edgeId, id });
  }

  /** Replace the backend module of a route (`PUT /edges/https/{edge_id}/routes/{id}/backend`). */
  putBackendModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.backend.put>,
  ): Promise<SuccessOf<typeof OPS.modules.backend.put>> {
    return this.request(OPS.modules.backend.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the backend module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/backend`). */
  getBackendModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.backend.get>> {
    return this.request(OPS.modules.backend.get, { edge_id: edgeId, id });
  }

  /** Delete the backend module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/backend`). */
  deleteBackendModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.backend.delete>> {
    return this.request(OPS.modules.backend.delete, { edge_id: edgeId, id });
  }

  /** Replace the ip_restriction module of a route (`PUT /edges/https/{edge_id}/routes/{id}/ip_restriction`). */
  putIpRestrictionModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.ip_restriction.put>,
  ): Promise<SuccessOf<typeof OPS.modules.ip_restriction.put>> {
    return this.request(OPS.modules.ip_restriction.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the ip_restriction module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/ip_restriction`). */
  getIpRestrictionModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.ip_restriction.get>> {
    return this.request(OPS.modules.ip_restriction.get, { edge_id: edgeId, id });
  }

  /** Delete the ip_restriction module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/ip_restriction`). */
  deleteIpRestrictionModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.ip_restriction.delete>> {
    return this.request(OPS.modules.ip_restriction.delete, { edge_id: edgeId, id });
  }

  /** Replace the circuit_breaker module of a route (`PUT /edges/https/{edge_id}/routes/{id}/circuit_breaker`). */
  putCircuitBreakerModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.circuit_breaker.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.circuit_breaker.put>> {
    return this.request(OPS.modules.circuit_breaker.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the circuit_breaker module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/circuit_breaker`). */
  getCircuitBreakerModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.circuit_breaker.get>> {
    return this.request(OPS.modules.circuit_breaker.get, { edge_id: edgeId, id });
  }

  /** Delete the circuit_breaker module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/circuit_breaker`). */
  deleteCircuitBreakerModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.circuit_breaker.delete>> {
    return this.request(OPS.modules.circuit_breaker.delete, { edge_id: edgeId, id });
  }

  /** Replace the compression module of a route (`PUT /edges/https/{edge_id}/routes/{id}/compression`). */
  putCompressionModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.compression.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.compression.put>> {
    return this.request(OPS.modules.compression.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the compression module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/compression`). */
  getCompressionModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.compression.get>> {
    return this.request(OPS.modules.compression.get, { edge_id: edgeId, id });
  }

  /** Delete the compression module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/compression`). */
  deleteCompressionModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.compression.delete>> {
    return this.request(OPS.modules.compression.delete, { edge_id: edgeId, id });
  }

  /** Replace the request_headers module of a route (`PUT /edges/https/{edge_id}/routes/{id}/request_headers`). */
  putRequestHeadersModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.request_headers.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.request_headers.put>> {
    return this.request(OPS.modules.request_headers.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the request_headers module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/request_headers`). */
  getRequestHeadersModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.request_headers.get>> {
    return this.request(OPS.modules.request_headers.get, { edge_id: edgeId, id });
  }

  /** Delete the request_headers module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/request_headers`). */
  deleteRequestHeadersModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.request_headers.delete>> {
    return this.request(OPS.modules.request_headers.delete, { edge_id: edgeId, id });
  }

  /** Replace the response_headers module of a route (`PUT /edges/https/{edge_id}/routes/{id}/response_headers`). */
  putResponseHeadersModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.response_headers.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.response_headers.put>> {
    return this.request(OPS.modules.response_headers.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the response_headers module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/response_headers`). */
  getResponseHeadersModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.response_headers.get>> {
    return this.request(OPS.modules.response_headers.get, { edge_id: edgeId, id });
  }

  /** Delete the response_headers module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/response_headers`). */
  deleteResponseHeadersModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.response_headers.delete>> {
    return this.request(OPS.modules.response_headers.delete, { edge_id: edgeId, id });
  }

  /** Replace the webhook_verification module of a route (`PUT /edges/https/{edge_id}/routes/{id}/webhook_verification`). */
  putWebhookVerificationModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.webhook_verification.put>,
  ): Promise<SuccessOf<typeof OPS.modules.webhook_verification.put>> {
    return this.request(OPS.modules.webhook_verification.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the webhook_verification module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/webhook_verification`). */
  getWebhookVerificationModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.webhook_verification.get>> {
    return this.request(OPS.modules.webhook_verification.get, { edge_id: edgeId, id });
  }

  /** Delete the webhook_verification module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/webhook_verification`). */
  deleteWebhookVerificationModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.webhook_verification.delete>> {
    return this.request(OPS.modules.webhook_verification.delete, { edge_id: edgeId, id });
  }

  /** Replace the oauth module of a route (`PUT /edges/https/{edge_id}/routes/{id}/oauth`). */
  putOauthModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.oauth.put>,
  ): Promise<SuccessOf<typeof OPS.modules.oauth.put>> {
    return this.request(OPS.modules.oauth.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the oauth module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/oauth`). */
  getOauthModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.oauth.get>> {
    return this.request(OPS.modules.oauth.get, { edge_id: edgeId, id });
  }

  /** Delete the oauth module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/oauth`). */
  deleteOauthModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.oauth.delete>> {
    return this.request(OPS.modules.oauth.delete, { edge_id: edgeId, id });
  }

  /** Replace the saml module of a route (`PUT /edges/https/{edge_id}/routes/{id}/saml`). */
  putSamlModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.saml.put>,
  ): Promise<SuccessOf<typeof OPS.modules.saml.put>> {
    return this.request(OPS.modules.saml.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the saml module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/saml`). */
  getSamlModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.saml.get>> {
    return this.request(OPS.modules.saml.get, { edge_id: edgeId, id });
  }

  /** Delete the saml module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/saml`). */
  deleteSamlModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.saml.delete>> {
    return this.request(OPS.modules.saml.delete, { edge_id: edgeId, id });
  }

  /** Replace the oidc module of a route (`PUT /edges/https/{edge_id}/routes/{id}/oidc`). */
  putOidcModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.oidc.put>,
  ): Promise<SuccessOf<typeof OPS.modules.oidc.put>> {
    return this.request(OPS.modules.oidc.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the oidc module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/oidc`). */
  getOidcModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.oidc.get>> {
    return this.request(OPS.modules.oidc.get, { edge_id: edgeId, id });
  }

  /** Delete the oidc module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/oidc`). */
  deleteOidcModule(edgeId: string, id: string): Promise<SuccessOf<typeof OPS.modules.oidc.delete>> {
    return this.request(OPS.modules.oidc.delete, { edge_id: edgeId, id });
  }

  /** Replace the websocket_tcp_converter module of a route (`PUT /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter`). */
  putWebsocketTcpConverterModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.websocket_tcp_converter.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.websocket_tcp_converter.put>> {
    return this.request(OPS.modules.websocket_tcp_converter.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the websocket_tcp_converter module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter`). */
  getWebsocketTcpConverterModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.websocket_tcp_converter.get>> {
    return this.request(OPS.modules.websocket_tcp_converter.get, { edge_id: edgeId, id });
  }

  /** Delete the websocket_tcp_converter module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter`). */
  deleteWebsocketTcpConverterModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.websocket_tcp_converter.delete>> {
    return this.request(OPS.modules.websocket_tcp_converter.delete, { edge_id: edgeId, id });
  }

  /** Replace the user_agent_filter module of a route (`PUT /edges/https/{edge_id}/routes/{id}/user_agent_filter`). */
  putUserAgentFilterModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.user_agent_filter.put> = {},
  ): Promise<SuccessOf<typeof OPS.modules.user_agent_filter.put>> {
    return this.request(OPS.modules.user_agent_filter.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the user_agent_filter module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/user_agent_filter`). */
  getUserAgentFilterModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.user_agent_filter.get>> {
    return this.request(OPS.modules.user_agent_filter.get, { edge_id: edgeId, id });
  }

  /** Delete the user_agent_filter module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/user_agent_filter`). */
  deleteUserAgentFilterModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.user_agent_filter.delete>> {
    return this.request(OPS.modules.user_agent_filter.delete, { edge_id: edgeId, id });
  }

  /** Replace the traffic_policy module of a route (`PUT /edges/https/{edge_id}/routes/{id}/traffic_policy`). */
  putTrafficPolicyModule(
    edgeId: string,
    id: string,
    body: BodyOf<typeof OPS.modules.traffic_policy.put>,
  ): Promise<SuccessOf<typeof OPS.modules.traffic_policy.put>> {
    return this.request(OPS.modules.traffic_policy.put, { edge_id: edgeId, id }, { body });
  }

  /** Get the traffic_policy module of a route (404 when not configured) (`GET /edges/https/{edge_id}/routes/{id}/traffic_policy`). */
  getTrafficPolicyModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.traffic_policy.get>> {
    return this.request(OPS.modules.traffic_policy.get, { edge_id: edgeId, id });
  }

  /** Delete the traffic_policy module of a route (404 when not configured) (`DELETE /edges/https/{edge_id}/routes/{id}/traffic_policy`). */
  deleteTrafficPolicyModule(
    edgeId: string,
    id: string,
  ): Promise<SuccessOf<typeof OPS.modules.traffic_policy.delete>> {
    return this.request(OPS.modules.traffic_policy.delete, { edge_id: edgeId, id });
  }

  /** Replace the IP restriction module of a TLS edge (with an Idempotency-Key: create it, where none is configured) (`PUT /edges/tls/{id}/ip_restriction`). */
  putTlsIpRestriction(
    id: string,
    body: BodyOf<typeof OPS.tlsIpRestriction.put>,
    create?: CreateOptions,
  ): Promise<SuccessOf<typeof OPS.tlsIpRestriction.put>> {
    return this.request(OPS.tlsIpRestriction.put, { id }, { body, create });
  }

  /** Get the IP restriction module of a TLS edge (`GET /edges/tls/{id}/ip_restriction`). */
  getTlsIpRestriction(id: string): Promise<SuccessOf<typeof OPS.tlsIpRestriction.get>> {
    return this.request(OPS.tlsIpRestriction.get, { id });
  }

  /** Delete the IP restriction module of a TLS edge (`DELETE /edges/tls/{id}/ip_restriction`). */
  deleteTlsIpRestriction(id: string): Promise<SuccessOf<typeof OPS.tlsIpRestriction.delete>> {
    return this.request(OPS.tlsIpRestriction.delete, { id });
  }

  /** List the audit trail, newest first, a page at a time: one event per change (who, when, which fields; secrets redacted) (`GET /audit_events`). */
  listAuditEvents(query?: QueryOptionsOf<typeof OPS.audit.list>): Promise<SuccessOf<typeof OPS.audit.list>> {
    return this.request(OPS.audit.list, {}, { query });
  }
}
