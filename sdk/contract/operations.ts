/**
 * The API's operations, each stated once: method, path, query, request and response schemas,
 * whether it takes an `Idempotency-Key`, the errors it may answer, its documentation. The
 * service's route table, the client's methods and the OpenAPI document are all derived from
 * this table (as @hono/zod-openapi's `createRoute` does for one route).
 */
import { z } from "zod";
import {
  edgeCreateSchema,
  httpsEdgeListSchema,
  httpsEdgeSchema,
  tlsEdgeListSchema,
  tlsEdgeSchema,
} from "./edges";
import { ROUTE_MODULE_NAMES, ROUTE_MODULES, type RouteModuleName } from "./modules";
import { routeCreateBodySchema, routeListSchema, routeSchema, routeUpdateSchema } from "./routes";
import { acceptsEmptyBody, ROUTE_MODULE_BODIES, tlsIpRestrictionBodySchema } from "./wire";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** The header of an idempotent create, and what a key may be: 1 to 255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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
  /** `page`: `?limit=` and `?before_id=`; absent: no query parameter at all (any other is a 400). */
  readonly query?: "page";
  /**
   * The request body, in every form the service accepts. `emptyIsObject`: a request without any
   * body (no bytes, no content type) is `{}` (a module whose fields are all optional).
   */
  readonly body?: NamedSchema & { readonly emptyIsObject?: boolean; readonly description?: string };
  /** The success answer: its status and body (none for 204). */
  readonly success:
    (NamedSchema & { readonly status: 200 | 201; readonly description: string }) | { readonly status: 204 };
  /**
   * Takes an `Idempotency-Key`: a create made once per key, answered by the object it made for
   * as long as that object exists (see the service's `once`).
   */
  readonly idempotent?: boolean;
  /** Error statuses beyond those every operation may answer (400, 401, 403, 429, 503). */
  readonly errors: readonly number[];
}

/** What a successful call of `O` answers (its body, parsed), or void for a 204. */
export type SuccessOf<O extends Operation> = O["success"] extends { schema: infer S extends z.ZodType }
  ? z.output<S>
  : void;
/** The body `O` takes, as a caller writes it (defaults optional). */
export type BodyOf<O extends Operation> = O["body"] extends { schema: infer S extends z.ZodType }
  ? z.input<S>
  : never;

/** The path parameters of a template: `"/a/{x}/b/{y}"` → `"x" | "y"`. */
export type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParams<Rest>
  : never;

const op = <const O extends Operation>(o: O): O => o;

const BODY_ERRORS = [413, 415] as const;

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
      errors: BODY_ERRORS,
    }),
    list: op({
      id: `list_${kind}_edges`,
      method: "GET",
      path: `/edges/${kind}`,
      summary: `List ${label} edges, newest first, a page at a time`,
      tag,
      query: "page",
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
  return {
    put: op({
      id: `put_${module}_module`,
      method: "PUT",
      path: `${ROUTE}/${module}` as `${typeof ROUTE}/${string}`,
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
      path: `${ROUTE}/${module}` as `${typeof ROUTE}/${string}`,
      summary: `Get the ${module} module of a route (404 when not configured)`,
      tag: "Route modules",
      success: { status: 200, ...response, description: "The module." },
      errors: [404],
    }),
    delete: op({
      id: `delete_${module}_module`,
      method: "DELETE",
      path: `${ROUTE}/${module}` as `${typeof ROUTE}/${string}`,
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
      query: "page",
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
  modules: Object.fromEntries(ROUTE_MODULE_NAMES.map((m) => [m, moduleOperations(m)])) as {
    [M in RouteModuleName]: ReturnType<typeof moduleOperations<M>>;
  },
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
  },
} as const;

/** Every operation, in the order of the API document. */
export const ALL_OPERATIONS: readonly Operation[] = [
  ...Object.values(OPERATIONS.https),
  ...Object.values(OPERATIONS.tls),
  ...Object.values(OPERATIONS.routes),
  ...ROUTE_MODULE_NAMES.flatMap((m) => Object.values<Operation>(OPERATIONS.modules[m])),
  ...Object.values(OPERATIONS.tlsIpRestriction),
  OPERATIONS.meta.openapi,
];

/** A path template filled with its parameters (each URI-encoded). */
export function fillPath<P extends string>(template: P, params: Record<PathParams<P>, string>): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) =>
    encodeURIComponent((params as Record<string, string>)[name]!),
  );
}
