/**
 * What the service accepts on the wire beyond the canonical shapes, so that the real API's
 * published clients work (docs/decisions.md#compatibility):
 * identifiers of the path repeated in a body, the wrapped module form, the empty module body,
 * and the query parameters each operation takes (any other → 400).
 */
import { z } from "zod";
import type { Problem } from "./errors";
import { tlsIpRestrictionMutateSchema } from "./edges";
import { PAGE_LIMIT_MAX } from "./limits";
import { byModule, idSchema, ROUTE_MODULE_NAMES, ROUTE_MODULES, type RouteModuleName } from "./modules";
import { pathEchoSchema } from "./routes";
import { keptText } from "./text";

/** Path identifiers of an operation, by the name a body may repeat them under. */
export type PathIds = Readonly<Partial<Record<"edge_id" | "id", string>>>;

/**
 * A body's repetition of its path's identifiers: equal → ignored, different → one problem per
 * differing field. `body` is the parsed body (the wrapper, for a wrapped module).
 */
export function pathEchoProblems(body: unknown, path: PathIds): Problem[] {
  const problems: Problem[] = [];
  for (const [key, value] of Object.entries(path)) {
    const echoed: unknown = typeof body === "object" && body !== null ? Reflect.get(body, key) : undefined;
    if (echoed !== undefined && echoed !== value) {
      problems.push({
        field: key,
        msg: `is ${JSON.stringify(echoed)} but the path says ${JSON.stringify(value)}: send the path's ${key}, or omit it`,
      });
    }
  }
  return problems;
}

/**
 * A module PUT body: the bare module object, or the wrapped form the published API reference
 * documents, `{"edge_id"?, "id"?, "module": {...}}` (TLS: `{"id"?, "module": {...}}`).
 */
export function moduleBodySchema<S extends z.ZodType>(module: S, ids: ReadonlyArray<"edge_id" | "id">) {
  const wrapped = z
    .strictObject({
      ...Object.fromEntries(ids.map((k) => [k, pathEchoSchema(k)])),
      module: module,
    })
    .describe("The wrapped form: the module under `module`, the path's identifiers optionally repeated.");
  // The bare form first: on a body that fits neither, its problems are the ones reported.
  return z.union([module, wrapped]);
}

/** The body schema of `PUT /edges/https/{edge_id}/routes/{id}/{module}`, one per module. */
export const ROUTE_MODULE_BODIES = byModule<Record<RouteModuleName, ModuleBodySchema>>((name) =>
  moduleBodySchema(ROUTE_MODULES[name].request, ["edge_id", "id"]),
);

/** The body schema of `PUT /edges/tls/{id}/ip_restriction`. */
export const tlsIpRestrictionBodySchema = moduleBodySchema(tlsIpRestrictionMutateSchema, ["id"]);

export type ModuleBodySchema = z.ZodUnion<readonly [z.ZodType, z.ZodType]>;

/**
 * The form of a module PUT body to check it against: the wrapped one when it has a `module` key,
 * else the bare one. (Checking against the union would report the problems of whichever form
 * fails with fewer, e.g. "unknown field module" for a wrapped body with one bad inner field.)
 */
export function moduleBodyForm(schema: ModuleBodySchema, body: unknown): z.ZodType {
  const wrapped = body !== null && typeof body === "object" && Object.hasOwn(body, "module");
  return schema.options[wrapped ? 1 : 0];
}

/** The module of a module PUT body, bare or wrapped; `wrapper` is set for the wrapped form. */
export function unwrapModule<T>(body: T | { module: T; edge_id?: string; id?: string }): {
  module: T;
  wrapper?: Record<string, unknown>;
} {
  if (body !== null && typeof body === "object" && Object.hasOwn(body, "module")) {
    const wrapper = body as { module: T } & Record<string, unknown>;
    return { module: wrapper.module, wrapper };
  }
  return { module: body as T };
}

/**
 * Modules whose every field is optional: a PUT with no body at all (no bytes, no content type),
 * as the Python client sends for an empty module, is `{}` for them.
 */
export function acceptsEmptyBody(module: RouteModuleName): boolean {
  return EMPTY_OK.has(module);
}
const EMPTY_OK: ReadonlySet<string> = new Set(
  ROUTE_MODULE_NAMES.filter((m) => ROUTE_MODULES[m].request.safeParse({}).success),
);

const LIMIT_TEXT = `must be an integer between 1 and ${PAGE_LIMIT_MAX}`;
/**
 * `?limit=` and `?before_id=` of the list operations; nothing else. Its input side is the query
 * string, its output side the typed values (what the OpenAPI document shows).
 */
export const pageQuerySchema = z.strictObject({
  limit: keptText({ error: "must be given once" })
    .regex(/^[0-9]+$/, { error: LIMIT_TEXT })
    .pipe(
      z.coerce
        .number<string>()
        .int()
        .min(1, { error: LIMIT_TEXT })
        .max(PAGE_LIMIT_MAX, { error: LIMIT_TEXT })
        .describe(`Page size, 1 to ${PAGE_LIMIT_MAX}; default ${PAGE_LIMIT_MAX}.`),
    )
    .optional(),
  before_id: idSchema
    .optional()
    .describe("Id of the last item of the previous page (from `next_page_uri`): the page after it."),
});
export type PageQuery = z.output<typeof pageQuerySchema>;
/** Operations that take no query parameter. */
export const noQuerySchema = z.strictObject({});
