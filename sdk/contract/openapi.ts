/**
 * `GET /openapi.json`: the API described in OpenAPI 3.1, generated from the operation table
 * (./operations) and the zod schemas it names (zod 4's own `z.toJSONSchema`, JSON Schema
 * 2020-12, which is OpenAPI 3.1's dialect), so the document cannot drift from what the service
 * routes, parses and renders. Request bodies are the schemas' input side (defaults optional),
 * responses their output side (total).
 */
import { z } from "zod";
import { ERROR_CODES, errorBodySchema, OPERATION_ID_HEADER, REPLAYED_HEADER } from "./errors";
import { ID_PATTERN, MAX_BODY_BYTES } from "./limits";
import { TEXT_RULE_SUMMARY } from "./text";
import {
  ALL_OPERATIONS,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  MODULE_OPERATIONS,
  type Operation,
  OPERATIONS,
  requiredScope,
} from "./operations";

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
  401: "Missing, wrong or revoked API key (`Authorization: Bearer <key>`), when the service requires one.",
  403: "The API key is valid, but its scope does not cover this operation (a `read` key asking for a change). Nothing was changed.",
  404: "Unknown edge, route or module, or a path identifier outside [A-Za-z0-9_]{1,64}; for `/metrics`, metrics are turned off on this service.",
  409: "Conflict: another route of this edge has the same match_type and match; or a keyed PUT of a TLS IP restriction where one is configured already.",
  413: `The request body is larger than ${MAX_BODY_BYTES} bytes.`,
  415: "The request body is not sent as `Content-Type: application/json`.",
  429: "Too many requests for this API key: retry after `Retry-After` seconds.",
  503: "Not ready: the database cannot be reached, or holds a schema this service does not expect (the reason is in the service's log); or (`ERR_EDGE_507`) the service cannot store changes for now, its disk being full or its storage read-only, and nothing was changed. Retry after `Retry-After` seconds.",
};

function errorResponse(status: number): Json {
  const kinds = Object.values(ERROR_CODES)
    .filter((e) => e.status === status)
    .map((e) => e.code);
  return {
    description: `${ERROR_TEXT[status]} Error codes: ${kinds.join(", ")}.`,
    headers: {
      ...operationIdHeader,
      ...(status === 429 || status === 503
        ? { "Retry-After": { description: "Seconds to wait.", required: true, schema: { type: "string" } } }
        : {}),
    },
    content: { "application/json": { schema: ref("Error") } },
  };
}

const noContent = { description: "Done; no body.", headers: operationIdHeader };

function operation(op: Operation, opLinks?: Json): Json {
  const scope = requiredScope(op);
  const parameters: Json[] = [...op.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string", pattern: ID_PATTERN.source },
  }));
  if (op.query) {
    const page = jsonSchema(op.query, "output") as { properties: Record<string, Json> };
    for (const [name, schema] of Object.entries(page.properties)) {
      const { description, ...rest } = schema;
      parameters.push({ name, in: "query", required: false, description, schema: rest });
    }
  }
  if (op.idempotent) {
    parameters.push({
      name: IDEMPOTENCY_KEY_HEADER,
      in: "header",
      required: false,
      description:
        "Makes the create exactly-once: a repeat with the same key and body, in this call or long after, answers the object the first one made, as it is now, for as long as it exists (the answer then carries `Idempotent-Replayed: true`); the same key with another body is a 400.",
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    });
  }
  const success = op.success;
  const headers = {
    ...operationIdHeader,
    ...(op.idempotent
      ? {
          [REPLAYED_HEADER]: {
            description: "`true` when an earlier request with this Idempotency-Key made the object answered.",
            required: false,
            schema: { type: "string", enum: ["true"] },
          },
        }
      : {}),
  };
  const responses: Json = {
    [success.status]:
      success.status === 204
        ? noContent
        : {
            description: success.description,
            headers,
            content: { [success.mediaType ?? "application/json"]: { schema: ref(success.ref) } },
            ...(opLinks ? { links: opLinks } : {}),
          },
  };
  // Any operation may meet a bad query parameter; any but a public one a missing key, the rate
  // limit, or a database it cannot reach or write to (503).
  const common = scope === undefined ? [400] : [400, 401, 403, 429, 503];
  for (const status of [...new Set([...common, ...op.errors])].sort()) {
    responses[status] = errorResponse(status);
  }
  return {
    operationId: op.id,
    summary: op.summary,
    tags: [op.tag],
    // No key asked for, or a key with the scope named (OpenAPI 3.1 lets a bearer requirement list
    // role names); none at all on a keyless service.
    security: scope === undefined ? [] : [{ bearer: [scope] }, {}],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: !op.body.emptyIsObject,
            ...(op.body.description ? { description: op.body.description } : {}),
            content: { "application/json": { schema: ref(op.body.ref) } },
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

/** The links of each create's answer, by its operation id. */
function createLinks(): Record<string, Json> {
  const routeIds = { edge_id: "$response.body#/edge_id", id: "$response.body#/id" };
  const byId = { id: "$response.body#/id" };
  const on = (ops: Operation[], params: Record<string, string>) =>
    Object.fromEntries(ops.map((o) => [o.id, params]));
  return {
    [OPERATIONS.https.create.id]: links({
      ...on([OPERATIONS.https.get, OPERATIONS.https.delete], byId),
      ...on([OPERATIONS.routes.create, OPERATIONS.routes.list], { edge_id: "$response.body#/id" }),
    }),
    [OPERATIONS.tls.create.id]: links(
      on([OPERATIONS.tls.get, OPERATIONS.tls.delete, ...Object.values(OPERATIONS.tlsIpRestriction)], byId),
    ),
    [OPERATIONS.routes.create.id]: links(
      on(
        [OPERATIONS.routes.get, OPERATIONS.routes.update, OPERATIONS.routes.delete, ...MODULE_OPERATIONS],
        routeIds,
      ),
    ),
  };
}

/**
 * The OpenAPI 3.1 document of the API. `info.version` is "1": the API has no versioning of its own
 * (the contract does not say how the API is versioned: docs/decisions.md#compatibility); the
 * document changes only with this contract.
 */
export function buildOpenApi(): Json {
  const schemas: Json = { Error: jsonSchema(errorBodySchema, "output") };
  const paths: Record<string, Json> = {};
  const opLinks = createLinks();
  for (const op of ALL_OPERATIONS) {
    if (op.body) schemas[op.body.ref] = jsonSchema(op.body.schema, "input");
    if (op.success.status !== 204) schemas[op.success.ref] = jsonSchema(op.success.schema, "output");
    (paths[op.path] ??= {})[op.method.toLowerCase()] = operation(op, opLinks[op.id]);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Edge management API",
      version: "1",
      description: `HTTPS edges and their routes with ${Object.keys(OPERATIONS.modules).length} traffic modules, TLS edges and their IP restriction module. JSON over HTTP; unknown body fields and query parameters are refused (400 naming them); a rejected request changes nothing. ${TEXT_RULE_SUMMARY}`,
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
            "An API key: the one the service was started with (scope `admin`), or a named key made with `edge-service keys create NAME --scope read|write|admin`. Each operation lists the scope it needs (`read` for a GET, `write` for a change; a wider scope covers a narrower one). None on a service started without keys (loopback only).",
        },
      },
    },
  };
}
