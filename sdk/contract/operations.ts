/**
 * The API's operations, each stated once: method, path, query, request and response schemas,
 * whether it takes an `Idempotency-Key`, the errors it may answer, its documentation. The
 * service's route table, the client's methods and the OpenAPI document are all derived from
 * this table (as @hono/zod-openapi's `createRoute` does for one route).
 */
import { z } from "zod";
import { auditEventListSchema, auditQuerySchema } from "./audit";
import {
  edgeCreateSchema,
  httpsEdgeListSchema,
  httpsEdgeSchema,
  tlsEdgeListSchema,
  tlsEdgeSchema,
} from "./edges";
import { byModule, ROUTE_MODULE_NAMES, ROUTE_MODULES, type RouteModuleName } from "./modules";
import { routeCreateBodySchema, routeListSchema, routeSchema, routeUpdateSchema } from "./routes";
import { keptText } from "./text";
import { acceptsEmptyBody, pageQuerySchema, ROUTE_MODULE_BODIES, tlsIpRestrictionBodySchema } from "./wire";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * What an API key may do, each scope including the ones before it: `read` the GETs (a drift check,
 * a dashboard, a metrics scraper), `write` every operation, `admin` every operation and managing
 * keys (`edge-service keys`, on the store). The API has no operation beyond `write`'s.
 */
export const SCOPES = ["read", "write", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** Whether a key of scope `held` may do what `needed` asks. */
export const scopeCovers = (held: Scope, needed: Scope): boolean =>
  SCOPES.indexOf(held) >= SCOPES.indexOf(needed);

/** The header of an idempotent create, and what a key may be: 1 to 255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** An `Idempotency-Key` header's value, checked like every string of a request. */
export const idempotencyKeySchema = keptText().regex(IDEMPOTENCY_KEY_PATTERN, {
  error: "must be 1 to 255 visible ASCII characters",
});

/** A schema with the name of its OpenAPI component (`#/components/schemas/<ref>`). */
export interface NamedSchema<S extends z.ZodType = z.ZodType> {
  readonly schema: S;
  readonly ref: string;
}

export interface Operation {
  /** The OpenAPI operationId. */
  readonly id: string;
  readonly method: Method;
  /** Path template, OpenAPI style: `/edges/https/{edge_id}/routes`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  /**
   * The query parameters, as one strict zod object whose input side is the query string and
   * output side the typed values: the service parses a request's query with it (an unknown
   * parameter is a 400 naming it), the OpenAPI document lists its fields, the client's method
   * takes them (camelCase). Absent: no query parameter at all (any other is a 400).
   */
  readonly query?: z.ZodObject;
  /**
   * The request body, in every form the service accepts. `emptyIsObject`: a request without any
   * body (no bytes, no content type) is `{}` (a module whose fields are all optional).
   */
  readonly body?: NamedSchema & { readonly emptyIsObject?: boolean; readonly description?: string };
  /**
   * The success answer: its status and body (none for 204). A body is JSON unless `mediaType`
   * says otherwise (the Prometheus text of `/metrics`).
   */
  readonly success:
    | (NamedSchema & {
        readonly status: 200 | 201;
        readonly description: string;
        readonly mediaType?: string;
      })
    | { readonly status: 204 };
  /**
   * Served to anyone, without an API key and outside the rate limit: the probes of load balancers
   * and orchestrators, which hold no key and must never be refused for asking too often.
   */
  readonly public?: true;
  /**
   * Takes an `Idempotency-Key`: a create made once per key, answered by the object it made for
   * as long as that object exists (see the service's `once`).
   */
  readonly idempotent?: boolean;
  /**
   * Error statuses beyond those every operation may answer (400, 401, 403, 429, 503; a public
   * operation answers no 401, 403 or 429).
   */
  readonly errors: readonly number[];
}

/** The parsed query of `O` (an empty object for an operation that takes none). */
export type QueryOf<O extends Pick<Operation, "query">> = O["query"] extends z.ZodObject
  ? z.output<O["query"]>
  : Record<string, never>;

/** `before_id` → `beforeId`. */
export type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
export const camel = (wire: string) => wire.replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase());

/** The keys of `T` that may not be left out. */
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/**
 * What a caller gives for a query schema's parameters, camelCase, each its typed value: required
 * where the query string must have it (the input side of the schema requires it: without it the
 * service answers 400), optional otherwise (optional or defaulted).
 */
export type QueryOptions<Q extends z.ZodObject> = {
  [K in keyof z.output<Q> & string as K extends RequiredKeys<z.input<Q>> ? Camel<K> : never]: z.output<Q>[K];
} & {
  [K in keyof z.output<Q> & string as K extends RequiredKeys<z.input<Q>> ? never : Camel<K>]?: z.output<Q>[K];
};
/** The query options of `O` (none for an operation that takes no query). */
export type QueryOptionsOf<O extends Pick<Operation, "query">> = O["query"] extends z.ZodObject
  ? QueryOptions<O["query"]>
  : Record<string, never>;

/** The query string of `options` for `op`'s parameters, in the schema's order ("" for none). */
export function queryString(op: Pick<Operation, "query">, options: Record<string, unknown> = {}): string {
  if (!op.query) return "";
  const q = new URLSearchParams();
  for (const name of Object.keys(op.query.shape)) {
    const value = options[camel(name)];
    if (typeof value === "string" || typeof value === "number") q.set(name, String(value));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The scope a key needs for `op`: none for a public one, `read` for a GET, `write` for any change. */
export const requiredScope = (op: Pick<Operation, "method" | "public">): Scope | undefined =>
  op.public ? undefined : op.method === "GET" ? "read" : "write";

/** What a successful call of `O` answers (its body, parsed), or void for a 204. */
export type SuccessOf<O extends Operation> = O["success"] extends { schema: infer S extends z.ZodType }
  ? z.output<S>
  : void;

/** What a call of `O` sends as its body (the input side of its schema), or never. */
export type BodyOf<O extends Operation> = O["body"] extends NamedSchema<infer S> ? z.input<S> : never;

/** The path parameters of a template: `"/a/{x}/b/{y}"` → `"x" | "y"`. */
export type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParams<Rest>
  : never;

const op = <const O extends Operation>(o: O): O => o;

const BODY_ERRORS = [413, 415] as const;

/** The body of a health or readiness answer: nothing beyond "ok" (no version, no database, no counts). */
export const healthSchema = z.object({ status: z.literal("ok") });

/** The body of a readiness answer: "ok", and what the operator should look at while it stays ready. */
export const readySchema = healthSchema.extend({
  detail: z
    .string()
    .optional()
    .describe(
      "Present while the service is ready but something needs its operator: the TLS certificate files could not be reloaded (the certificate loaded before is still served). The reason is in the service's log.",
    ),
});
export type ReadyBody = z.infer<typeof readySchema>;

/** The media type of Prometheus' text exposition format (what `GET /metrics` answers). */
export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

/** An OpenAPI document, as far as a reader of this one relies on it. */
const openApiDocumentSchema = z.looseObject({
  openapi: z.string(),
  paths: z.record(z.string(), z.unknown()),
});

function edgeOperations<K extends "https" | "tls", One extends z.ZodType, List extends z.ZodType>(
  kind: K,
  one: One,
  list: List,
) {
  const label = kind === "https" ? "HTTPS" : "TLS";
  const tag = `${label} edges`;
  const Edge = kind === "https" ? "HttpsEdge" : "TlsEdge";
  return {
    create: op({
      id: `create_${kind}_edge`,
      method: "POST",
      path: `/edges/${kind}`,
      summary: `Create a ${label} edge`,
      tag,
      body: { schema: edgeCreateSchema, ref: "EdgeCreate" },
      idempotent: true,
      success: { status: 201, schema: one, ref: Edge, description: `The ${label} edge.` },
      errors: [409, ...BODY_ERRORS],
    }),
    list: op({
      id: `list_${kind}_edges`,
      method: "GET",
      path: `/edges/${kind}`,
      summary: `List ${label} edges, newest first, a page at a time`,
      tag,
      query: pageQuerySchema,
      success: {
        status: 200,
        schema: list,
        ref: `${Edge}List`,
        description: "One page; `next_page_uri` is null on the last.",
      },
      errors: [],
    }),
    get: op({
      id: `get_${kind}_edge`,
      method: "GET",
      path: `/edges/${kind}/{id}`,
      summary: `Get a ${label} edge`,
      tag,
      success: { status: 200, schema: one, ref: Edge, description: `The ${label} edge.` },
      errors: [404],
    }),
    delete: op({
      id: `delete_${kind}_edge`,
      method: "DELETE",
      path: `/edges/${kind}/{id}`,
      summary: `Delete a ${label} edge, with its ${kind === "https" ? "routes" : "IP restriction"}`,
      tag,
      success: { status: 204 },
      errors: [404],
    }),
  };
}

const ROUTES = "/edges/https/{edge_id}/routes";
const ROUTE = `${ROUTES}/{id}` as const;

function moduleOperations<M extends RouteModuleName>(module: M) {
  const Name = pascal(module);
  const response = { schema: ROUTE_MODULES[module].response, ref: `${Name}Module` };
  const path: `${typeof ROUTE}/${string}` = `${ROUTE}/${module}`;
  return {
    put: op({
      id: `put_${module}_module`,
      method: "PUT",
      path,
      summary: `Replace the ${module} module of a route`,
      tag: "Route modules",
      body: {
        schema: ROUTE_MODULE_BODIES[module],
        ref: `${Name}ModulePut`,
        emptyIsObject: acceptsEmptyBody(module),
        description: `The module, bare or wrapped as {"edge_id"?, "id"?, "module"}.${acceptsEmptyBody(module) ? " No body at all (no bytes, no content type) is {}." : ""}`,
      },
      success: { status: 200, ...response, description: "The module." },
      errors: [404, ...BODY_ERRORS],
    }),
    get: op({
      id: `get_${module}_module`,
      method: "GET",
      path,
      summary: `Get the ${module} module of a route (404 when not configured)`,
      tag: "Route modules",
      success: { status: 200, ...response, description: "The module." },
      errors: [404],
    }),
    delete: op({
      id: `delete_${module}_module`,
      method: "DELETE",
      path,
      summary: `Delete the ${module} module of a route (404 when not configured)`,
      tag: "Route modules",
      success: { status: 204 },
      errors: [404],
    }),
  };
}

/** `ip_restriction` → `IpRestriction`: the component names of a module's schemas. */
export const pascal = (wire: string) =>
  wire.replace(/(^|_)([a-z])/g, (_m, _u, ch: string) => ch.toUpperCase());

export const OPERATIONS = {
  https: edgeOperations("https", httpsEdgeSchema, httpsEdgeListSchema),
  tls: edgeOperations("tls", tlsEdgeSchema, tlsEdgeListSchema),
  routes: {
    create: op({
      id: "create_route",
      method: "POST",
      path: ROUTES,
      summary: "Create a route of an HTTPS edge",
      tag: "Routes",
      body: { schema: routeCreateBodySchema, ref: "RouteCreate" },
      idempotent: true,
      success: { status: 201, schema: routeSchema, ref: "Route", description: "The route." },
      errors: [404, 409, ...BODY_ERRORS],
    }),
    list: op({
      id: "list_routes",
      method: "GET",
      path: ROUTES,
      summary: "List the routes of an HTTPS edge, newest first, a page at a time",
      tag: "Routes",
      query: pageQuerySchema,
      success: {
        status: 200,
        schema: routeListSchema,
        ref: "RouteList",
        description: "One page; `next_page_uri` is null on the last.",
      },
      errors: [404],
    }),
    get: op({
      id: "get_route",
      method: "GET",
      path: ROUTE,
      summary: "Get a route",
      tag: "Routes",
      success: { status: 200, schema: routeSchema, ref: "Route", description: "The route." },
      errors: [404],
    }),
    update: op({
      id: "update_route",
      method: "PATCH",
      path: ROUTE,
      summary: "Update a route: present fields replace, a present module replaces that module whole",
      tag: "Routes",
      body: { schema: routeUpdateSchema, ref: "RouteUpdate" },
      success: { status: 200, schema: routeSchema, ref: "Route", description: "The route." },
      errors: [404, 409, ...BODY_ERRORS],
    }),
    delete: op({
      id: "delete_route",
      method: "DELETE",
      path: ROUTE,
      summary: "Delete a route",
      tag: "Routes",
      success: { status: 204 },
      errors: [404],
    }),
  },
  modules: byModule<{ [M in RouteModuleName]: ReturnType<typeof moduleOperations<M>> }>(moduleOperations),
  tlsIpRestriction: {
    put: op({
      id: "put_tls_ip_restriction",
      method: "PUT",
      path: "/edges/tls/{id}/ip_restriction",
      summary:
        "Replace the IP restriction module of a TLS edge (with an Idempotency-Key: create it, where none is configured)",
      tag: "TLS edges",
      body: { schema: tlsIpRestrictionBodySchema, ref: "TlsIpRestrictionPut" },
      idempotent: true,
      success: {
        status: 200,
        schema: ROUTE_MODULES.ip_restriction.response,
        ref: "TlsIpRestriction",
        description: "The module.",
      },
      errors: [404, 409, ...BODY_ERRORS],
    }),
    get: op({
      id: "get_tls_ip_restriction",
      method: "GET",
      path: "/edges/tls/{id}/ip_restriction",
      summary: "Get the IP restriction module of a TLS edge",
      tag: "TLS edges",
      success: {
        status: 200,
        schema: ROUTE_MODULES.ip_restriction.response,
        ref: "TlsIpRestriction",
        description: "The module.",
      },
      errors: [404],
    }),
    delete: op({
      id: "delete_tls_ip_restriction",
      method: "DELETE",
      path: "/edges/tls/{id}/ip_restriction",
      summary: "Delete the IP restriction module of a TLS edge",
      tag: "TLS edges",
      success: { status: 204 },
      errors: [404],
    }),
  },
  audit: {
    list: op({
      id: "list_audit_events",
      method: "GET",
      path: "/audit_events",
      summary:
        "List the audit trail, newest first, a page at a time: one event per change (who, when, which fields; secrets redacted)",
      tag: "Audit",
      query: auditQuerySchema,
      success: {
        status: 200,
        schema: auditEventListSchema,
        ref: "AuditEventList",
        description: "One page; `next_page_uri` (which keeps the filters) is null on the last.",
      },
      errors: [],
    }),
  },
  meta: {
    openapi: op({
      id: "get_openapi",
      method: "GET",
      path: "/openapi.json",
      summary: "This document",
      tag: "Meta",
      success: {
        status: 200,
        schema: openApiDocumentSchema,
        ref: "OpenApiDocument",
        description: "The OpenAPI 3.1 description of this API.",
      },
      errors: [],
    }),
    health: op({
      id: "get_healthz",
      method: "GET",
      path: "/healthz",
      summary:
        "Liveness: the process is up and answering (the database is not consulted: an outage of it must not get replicas restarted)",
      tag: "Meta",
      public: true,
      success: { status: 200, schema: healthSchema, ref: "Health", description: "Alive." },
      errors: [],
    }),
    ready: op({
      id: "get_readyz",
      method: "GET",
      path: "/readyz",
      summary:
        "Readiness: the database is reachable, holds the schema this service expects, takes writes, and this server holds the secrets keys its values are sealed under (503 otherwise, for as long as requests would fail; the reason is in the service's log)",
      tag: "Meta",
      public: true,
      success: { status: 200, schema: readySchema, ref: "Ready", description: "Ready to serve requests." },
      errors: [503],
    }),
    metrics: op({
      id: "get_metrics",
      method: "GET",
      path: "/metrics",
      summary: "Metrics in Prometheus' text format (with the API key, when the service has one)",
      tag: "Meta",
      success: {
        status: 200,
        schema: z.string(),
        ref: "PrometheusText",
        mediaType: PROMETHEUS_TEXT,
        description: "Prometheus' text exposition format, version 0.0.4.",
      },
      errors: [404],
    }),
  },
} as const;

/** The three operations of every route module's sub-resource. */
export const MODULE_OPERATIONS: readonly Operation[] = ROUTE_MODULE_NAMES.flatMap((m): Operation[] => {
  const { put, get, delete: del } = OPERATIONS.modules[m];
  return [put, get, del];
});

/** Whether a value of the table is an operation (a leaf), not a group of them. */
const isOperation = (v: unknown): v is Operation =>
  typeof v === "object" &&
  v !== null &&
  "id" in v &&
  typeof v.id === "string" &&
  "method" in v &&
  "path" in v;

/** The operations under `group`, depth first in the table's order. */
function* operationsIn(group: unknown): Generator<Operation> {
  if (isOperation(group)) yield group;
  else if (typeof group === "object" && group !== null)
    for (const v of Object.values(group)) yield* operationsIn(v);
}

/**
 * Every operation, in the table's order (the API document's): walked, never listed, so a group
 * added to the table is served, described and given a client method like the others.
 */
export const ALL_OPERATIONS: readonly Operation[] = [...operationsIn(OPERATIONS)];

/** A path template filled with its parameters (each URI-encoded). */
export function fillPath<P extends string>(template: P, params: Record<PathParams<P>, string>): string {
  const values: Record<string, string> = params;
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(values[name] ?? ""));
}
