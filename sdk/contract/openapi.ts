/**
 * `GET /openapi.json`: the API described in OpenAPI 3.1, generated from the zod schemas of this
 * contract (zod 4's own `z.toJSONSchema`, JSON Schema 2020-12, which is OpenAPI 3.1's dialect),
 * so the document cannot drift from what the service parses and renders. Request bodies are the
 * schemas' input side (defaults optional), responses their output side (total).
 */
import { z } from "zod";
import {
  edgeCreateSchema,
  httpsEdgeListSchema,
  httpsEdgeSchema,
  tlsEdgeListSchema,
  tlsEdgeSchema,
} from "./edges";
import { ERROR_CODES, errorBodySchema, OPERATION_ID_HEADER, REPLAYED_HEADER } from "./errors";
import { ID_PATTERN, MAX_BODY_BYTES } from "./limits";
import { ROUTE_MODULE_NAMES, ROUTE_MODULES, type RouteModuleName } from "./modules";
import { routeCreateBodySchema, routeListSchema, routeSchema, routeUpdateSchema } from "./routes";
import { acceptsEmptyBody, pageQuerySchema, ROUTE_MODULE_BODIES, tlsIpRestrictionBodySchema } from "./wire";

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    target: "draft-2020-12",
    unrepresentable: "any",
  }) as Json;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const pascal = (wire: string) => wire.replace(/(^|_)([a-z])/g, (_m, _u, ch: string) => ch.toUpperCase());

/** Response headers every answer carries. */
const operationIdHeader = {
  [OPERATION_ID_HEADER]: {
    description: "Operation id of this request; error bodies repeat it in `details.operation_id`.",
    required: true,
    schema: { type: "string" },
  },
};

const ERROR_TEXT: Record<number, string> = {
  400: "Invalid input: `details.field` names the (first) field or parameter at fault, `details.problems` lists every problem. Nothing was changed.",
  401: "Missing or wrong API key (`Authorization: Bearer <key>`), when the service requires one.",
  404: "Unknown edge, route or module, or a path identifier outside [A-Za-z0-9_]{1,64}.",
  409: "Conflict: another route of this edge has the same match_type and match; or a keyed PUT of a TLS IP restriction where one is configured already.",
  413: `The request body is larger than ${MAX_BODY_BYTES} bytes.`,
  415: "The request body is not sent as `Content-Type: application/json`.",
  429: "Too many requests for this API key: retry after `Retry-After` seconds.",
};

function errorResponse(status: number): Json {
  const kinds = Object.values(ERROR_CODES)
    .filter((e) => e.status === status)
    .map((e) => e.code);
  return {
    description: `${ERROR_TEXT[status]} Error codes: ${kinds.join(", ")}.`,
    headers: {
      ...operationIdHeader,
      ...(status === 429
        ? { "Retry-After": { description: "Seconds to wait.", required: true, schema: { type: "string" } } }
        : {}),
    },
    content: { "application/json": { schema: ref("Error") } },
  };
}

function ok(status: 200 | 201, schema: Json, description: string): Json {
  return {
    [status]: { description, headers: operationIdHeader, content: { "application/json": { schema } } },
  };
}
const noContent = { 204: { description: "Done; no body.", headers: operationIdHeader } };

interface Op {
  operationId: string;
  summary: string;
  tags: string[];
  /** Path parameters. */
  path?: string[];
  query?: "page";
  body?: { schema: Json; required: boolean; description?: string };
  idempotent?: boolean;
  success: Json;
  errors: number[];
  links?: Json;
}

function operation(op: Op): Json {
  const parameters: Json[] = (op.path ?? []).map((name) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string", pattern: ID_PATTERN.source },
  }));
  if (op.query === "page") {
    const page = jsonSchema(pageQuerySchema, "output") as { properties: Record<string, Json> };
    for (const [name, schema] of Object.entries(page.properties)) {
      const { description, ...rest } = schema;
      parameters.push({ name, in: "query", required: false, description, schema: rest });
    }
  }
  if (op.idempotent) {
    parameters.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "Makes the create exactly-once: a repeat with the same key and body, in this call or long after, answers the object the first one made, as it is now, for as long as it exists (the answer then carries `Idempotent-Replayed: true`); the same key with another body is a 400.",
      schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
    });
  }
  const responses: Json = { ...op.success };
  if (op.idempotent) {
    for (const answer of Object.values(responses) as Array<{ headers?: Json }>) {
      answer.headers = {
        ...answer.headers,
        [REPLAYED_HEADER]: {
          description: "`true` when an earlier request with this Idempotency-Key made the object answered.",
          required: false,
          schema: { type: "string", enum: ["true"] },
        },
      };
    }
  }
  // Any operation may meet a bad query parameter, a missing key or the rate limit.
  for (const status of [...new Set([400, 401, 429, ...op.errors])].sort()) {
    responses[status] = errorResponse(status);
  }
  if (op.links) {
    const [status] = Object.keys(op.success);
    (responses[status!] as Json).links = op.links;
  }
  return {
    operationId: op.operationId,
    summary: op.summary,
    tags: op.tags,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: op.body.required,
            ...(op.body.description ? { description: op.body.description } : {}),
            content: { "application/json": { schema: op.body.schema } },
          },
        }
      : {}),
    responses,
  };
}

/** Links from a created resource to the operations on it (for readers and stateful testers). */
function links(targets: Record<string, Record<string, string>>): Json {
  return Object.fromEntries(
    Object.entries(targets).map(([operationId, parameters]) => [operationId, { operationId, parameters }]),
  );
}

const BODY_ERRORS = [413, 415];

/**
 * The OpenAPI 3.1 document of the API. `info.version` is "1": the API has no versioning of its own
 * (edge-api.md "Versioning": not shown); the document changes only with this contract.
 */
export function buildOpenApi(): Json {
  const version = "1";
  const schemas: Json = {
    Error: jsonSchema(errorBodySchema, "output"),
    EdgeCreate: jsonSchema(edgeCreateSchema, "input"),
    HttpsEdge: jsonSchema(httpsEdgeSchema, "output"),
    HttpsEdgeList: jsonSchema(httpsEdgeListSchema, "output"),
    TlsEdge: jsonSchema(tlsEdgeSchema, "output"),
    TlsEdgeList: jsonSchema(tlsEdgeListSchema, "output"),
    RouteCreate: jsonSchema(routeCreateBodySchema, "input"),
    RouteUpdate: jsonSchema(routeUpdateSchema, "input"),
    Route: jsonSchema(routeSchema, "output"),
    RouteList: jsonSchema(routeListSchema, "output"),
    TlsIpRestrictionPut: jsonSchema(tlsIpRestrictionBodySchema, "input"),
    TlsIpRestriction: jsonSchema(ROUTE_MODULES.ip_restriction.response, "output"),
  };
  for (const name of ROUTE_MODULE_NAMES) {
    schemas[`${pascal(name)}ModulePut`] = jsonSchema(ROUTE_MODULE_BODIES[name], "input");
    schemas[`${pascal(name)}Module`] = jsonSchema(ROUTE_MODULES[name].response, "output");
  }

  const edgeLinks = (kind: "https" | "tls") =>
    links({
      [`get_${kind}_edge`]: { id: "$response.body#/id" },
      [`delete_${kind}_edge`]: { id: "$response.body#/id" },
      ...(kind === "https"
        ? { create_route: { edge_id: "$response.body#/id" }, list_routes: { edge_id: "$response.body#/id" } }
        : {
            put_tls_ip_restriction: { id: "$response.body#/id" },
            get_tls_ip_restriction: { id: "$response.body#/id" },
            delete_tls_ip_restriction: { id: "$response.body#/id" },
          }),
    });
  const routeIds = { edge_id: "$response.body#/edge_id", id: "$response.body#/id" };
  const routeLinks = links({
    get_route: routeIds,
    update_route: routeIds,
    delete_route: routeIds,
    ...Object.fromEntries(
      ROUTE_MODULE_NAMES.flatMap((m) => [
        [`put_${m}_module`, routeIds],
        [`get_${m}_module`, routeIds],
        [`delete_${m}_module`, routeIds],
      ]),
    ),
  });

  const paths: Json = {};
  for (const kind of ["https", "tls"] as const) {
    const label = kind === "https" ? "HTTPS" : "TLS";
    const Edge = kind === "https" ? "HttpsEdge" : "TlsEdge";
    paths[`/edges/${kind}`] = {
      post: operation({
        operationId: `create_${kind}_edge`,
        summary: `Create a ${label} edge`,
        tags: [`${label} edges`],
        body: { schema: ref("EdgeCreate"), required: true },
        idempotent: true,
        success: ok(201, ref(Edge), `The ${label} edge.`),
        errors: BODY_ERRORS,
        links: edgeLinks(kind),
      }),
      get: operation({
        operationId: `list_${kind}_edges`,
        summary: `List ${label} edges, newest first, a page at a time`,
        tags: [`${label} edges`],
        query: "page",
        success: ok(200, ref(`${Edge}List`), "One page; `next_page_uri` is null on the last."),
        errors: [],
      }),
    };
    paths[`/edges/${kind}/{id}`] = {
      get: operation({
        operationId: `get_${kind}_edge`,
        summary: `Get a ${label} edge`,
        tags: [`${label} edges`],
        path: ["id"],
        success: ok(200, ref(Edge), `The ${label} edge.`),
        errors: [404],
      }),
      delete: operation({
        operationId: `delete_${kind}_edge`,
        summary: `Delete a ${label} edge, with its ${kind === "https" ? "routes" : "IP restriction"}`,
        tags: [`${label} edges`],
        path: ["id"],
        success: noContent,
        errors: [404],
      }),
    };
  }

  const routes = "/edges/https/{edge_id}/routes";
  paths[routes] = {
    post: operation({
      operationId: "create_route",
      summary: "Create a route of an HTTPS edge",
      tags: ["Routes"],
      path: ["edge_id"],
      body: { schema: ref("RouteCreate"), required: true },
      idempotent: true,
      success: ok(201, ref("Route"), "The route."),
      errors: [404, 409, ...BODY_ERRORS],
      links: routeLinks,
    }),
    get: operation({
      operationId: "list_routes",
      summary: "List the routes of an HTTPS edge, newest first, a page at a time",
      tags: ["Routes"],
      path: ["edge_id"],
      query: "page",
      success: ok(200, ref("RouteList"), "One page; `next_page_uri` is null on the last."),
      errors: [404],
    }),
  };
  paths[`${routes}/{id}`] = {
    get: operation({
      operationId: "get_route",
      summary: "Get a route",
      tags: ["Routes"],
      path: ["edge_id", "id"],
      success: ok(200, ref("Route"), "The route."),
      errors: [404],
    }),
    patch: operation({
      operationId: "update_route",
      summary: "Update a route: present fields replace, a present module replaces that module whole",
      tags: ["Routes"],
      path: ["edge_id", "id"],
      body: { schema: ref("RouteUpdate"), required: true },
      success: ok(200, ref("Route"), "The route."),
      errors: [404, 409, ...BODY_ERRORS],
    }),
    delete: operation({
      operationId: "delete_route",
      summary: "Delete a route",
      tags: ["Routes"],
      path: ["edge_id", "id"],
      success: noContent,
      errors: [404],
    }),
  };
  for (const name of ROUTE_MODULE_NAMES) {
    const Name = pascal(name);
    paths[`${routes}/{id}/${name}`] = moduleOperations(name, Name);
  }

  const tlsIp = "/edges/tls/{id}/ip_restriction";
  paths[tlsIp] = {
    put: operation({
      operationId: "put_tls_ip_restriction",
      summary:
        "Replace the IP restriction module of a TLS edge (with an Idempotency-Key: create it, where none is configured)",
      tags: ["TLS edges"],
      path: ["id"],
      body: { schema: ref("TlsIpRestrictionPut"), required: true },
      idempotent: true,
      success: ok(200, ref("TlsIpRestriction"), "The module."),
      errors: [404, 409, ...BODY_ERRORS],
    }),
    get: operation({
      operationId: "get_tls_ip_restriction",
      summary: "Get the IP restriction module of a TLS edge",
      tags: ["TLS edges"],
      path: ["id"],
      success: ok(200, ref("TlsIpRestriction"), "The module."),
      errors: [404],
    }),
    delete: operation({
      operationId: "delete_tls_ip_restriction",
      summary: "Delete the IP restriction module of a TLS edge",
      tags: ["TLS edges"],
      path: ["id"],
      success: noContent,
      errors: [404],
    }),
  };

  paths["/openapi.json"] = {
    get: operation({
      operationId: "get_openapi",
      summary: "This document",
      tags: ["Meta"],
      success: ok(200, { type: "object" }, "The OpenAPI 3.1 description of this API."),
      errors: [],
    }),
  };

  return {
    openapi: "3.1.0",
    info: {
      title: "Edge management API",
      version,
      description:
        "HTTPS edges and their routes with 13 traffic modules, TLS edges and their IP restriction module. JSON over HTTP; unknown body fields and query parameters are refused (400 naming them); a rejected request changes nothing.",
    },
    security: [{ bearer: [] }, {}],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "The API key the service was started with; none when started without one (loopback only).",
        },
      },
    },
  };
}

function moduleOperations(name: RouteModuleName, Name: string): Json {
  const path = ["edge_id", "id"];
  const tags = ["Route modules"];
  const emptyOk = acceptsEmptyBody(name);
  return {
    put: operation({
      operationId: `put_${name}_module`,
      summary: `Replace the ${name} module of a route`,
      tags,
      path,
      body: {
        schema: ref(`${Name}ModulePut`),
        required: !emptyOk,
        description: `The module, bare or wrapped as {"edge_id"?, "id"?, "module"}.${emptyOk ? " No body at all (no bytes, no content type) is {}." : ""}`,
      },
      success: ok(200, ref(`${Name}Module`), "The module."),
      errors: [404, ...BODY_ERRORS],
    }),
    get: operation({
      operationId: `get_${name}_module`,
      summary: `Get the ${name} module of a route (404 when not configured)`,
      tags,
      path,
      success: ok(200, ref(`${Name}Module`), "The module."),
      errors: [404],
    }),
    delete: operation({
      operationId: `delete_${name}_module`,
      summary: `Delete the ${name} module of a route (404 when not configured)`,
      tags,
      path,
      success: noContent,
      errors: [404],
    }),
  };
}
