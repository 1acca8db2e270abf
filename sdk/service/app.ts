/**
 * The edge API over Web-standard Request/Response (Hono). `app.fetch` serves both a socket
 * (the standalone server) and in-process calls (the embedded transport): one code path.
 * The routes are the contract's operation table (sdk/contract/operations); this file says what
 * each operation does, in the table's order. Cross-cutting concerns are the middleware of
 * ./middleware, answers are built in ./context.
 */
import { Hono } from "hono";
import { type z } from "zod";
import {
  ALL_OPERATIONS,
  buildOpenApi,
  ID_PATTERN,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  issuesToProblems,
  noQuerySchema,
  type Operation,
  OPERATIONS,
  type PageQuery,
  pageQuerySchema,
  type PathParams,
  type Problem,
  ROUTE_MODULE_NAMES,
} from "../contract";
import { type EdgeContext, type Env, errorAnswer, respond } from "./context";
import { ApiError } from "./errors";
import { bearerAuth } from "./middleware/bearer-auth";
import { jsonBody, jsonBodyOrEmpty } from "./middleware/json-body";
import { notFoundOrMethodNotAllowed } from "./middleware/method-not-allowed";
import { rateLimit } from "./middleware/rate-limit";
import { requestLog } from "./middleware/request-log";
import { ResponseCache } from "./response-cache";
import { EdgeService, type RequestContext } from "./service";
import type { Store } from "./store";

export interface EdgeAppOptions {
  store: Store;
  /** When set, every request must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Requests per minute per API key; off when undefined. */
  rateLimitPerMinute?: number;
  /** One line per request (method, path, status, time, operation id); never bodies or keys. */
  log?: (line: string) => void;
  /**
   * Bound, in bytes of URL and body, on the GET answers kept for reuse while the data is
   * unchanged (see ResponseCache). Default 8 MiB; 0 renders every GET afresh.
   */
  responseCacheBytes?: number;
}

const DEFAULT_RESPONSE_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * The query parameters of a request, checked against the operation's schema: an unknown or
 * repeated parameter is a 400 naming it.
 */
function query<S extends z.ZodObject>(c: EdgeContext, schema: S): z.output<S> {
  const url = c.req.url;
  const params = url.includes("?") ? c.req.queries() : {};
  const problems: Problem[] = [];
  const single: Record<string, string> = {};
  for (const [key, values] of Object.entries(params)) {
    if (values.length > 1) problems.push({ field: key, msg: "is given more than once (give it once)" });
    single[key] = values[0]!;
  }
  const result = schema.safeParse(single);
  if (!result.success) {
    const allowed = Object.keys(schema.shape);
    for (const p of issuesToProblems(result.error.issues)) {
      problems.push(
        p.msg.startsWith("unknown field")
          ? {
              field: p.field,
              msg: `unknown query parameter (${allowed.length > 0 ? `this operation takes ${allowed.join(" and ")}` : "this operation takes none"}; check the spelling)`,
            }
          : p,
      );
    }
  }
  if (!result.success || problems.length > 0) throw ApiError.invalid(problems);
  return result.data;
}

/** What a handler gets: the path's identifiers (checked), the body, the page asked for, the context. */
interface Call<O extends Operation> {
  params: Record<PathParams<O["path"]>, string>;
  /** The JSON body as sent (the service parses it against the contract). */
  body: unknown;
  /** `?limit=` and `?before_id=`, for the list operations. */
  page: PageQuery;
  ctx: RequestContext;
}

/** `/edges/https/{edge_id}/routes` → Hono's `/edges/https/:edge_id/routes`. */
const honoPath = (template: string) => template.replace(/\{(\w+)\}/g, ":$1");

export function createEdgeApp(opts: EdgeAppOptions): Hono<Env> {
  const service = new EdgeService(opts.store);
  const cache = new ResponseCache(
    () => opts.store.changeCounter(),
    opts.responseCacheBytes ?? DEFAULT_RESPONSE_CACHE_BYTES,
  );
  const app = new Hono<Env>();

  if (opts.log) app.use(requestLog(opts.log));
  if (opts.apiKey !== undefined) app.use(bearerAuth(opts.apiKey));
  if (opts.rateLimitPerMinute !== undefined) {
    app.use(rateLimit(opts.rateLimitPerMinute, opts.apiKey !== undefined));
  }

  /**
   * Where the caller reached the service (every Ref and uri is built on it); for an operation that
   * takes an `Idempotency-Key`, the key, and an answer to a repeat says so (`Idempotent-Replayed`).
   */
  const context = (op: Operation, c: EdgeContext): RequestContext => {
    const baseUrl = new URL(c.req.url).origin;
    if (!op.idempotent) return { baseUrl };
    const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
    if (key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(key)) {
      throw ApiError.invalid([
        { field: IDEMPOTENCY_KEY_HEADER, msg: "must be 1 to 255 visible ASCII characters" },
      ]);
    }
    return { baseUrl, idempotencyKey: key, onReplay: () => c.set("replayed", true) };
  };
  /** The path's identifiers, each in the identifier character set (else a 404). */
  const params = (op: Operation, c: EdgeContext): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [, name] of op.path.matchAll(/\{(\w+)\}/g)) {
      const value = c.req.param(name!) ?? "";
      if (!ID_PATTERN.test(value)) throw ApiError.notFound(`${name} "${value.slice(0, 80)}"`);
      out[name!] = value;
    }
    return out;
  };

  const registered = new Set<string>();
  /**
   * Serves `op`: its body read first (POST/PUT/PATCH), its query checked (an unknown parameter
   * is a 400: a typo must not serve page 1 again), its path identifiers checked; a GET's answer
   * reused while the data is unchanged (errors are never kept), a 204 without a body.
   */
  const serve = <O extends Operation>(op: O, handler: (call: Call<O>) => unknown) => {
    registered.add(op.id);
    const answer = async (c: EdgeContext) => {
      const page: PageQuery = op.query === "page" ? query(c, pageQuerySchema) : query(c, noQuerySchema);
      const call = async () =>
        handler({
          params: params(op, c),
          body: c.get("body"),
          page,
          ctx: context(op, c),
        });
      const success = op.success;
      if (success.status === 204) {
        await call();
        return respond(c, 204, null);
      }
      if (op.method === "GET") return respond(c, 200, await cache.json(c.req.url, call));
      return respond(c, success.status, JSON.stringify(await call()));
    };
    const path = honoPath(op.path);
    if (!op.body) app.on(op.method, path, answer);
    else app.on(op.method, path, op.body.emptyIsObject ? jsonBodyOrEmpty(() => ({})) : jsonBody, answer);
  };

  const { https, tls, routes, modules, tlsIpRestriction, meta } = OPERATIONS;
  for (const [kind, ops] of [
    ["https", https],
    ["tls", tls],
  ] as const) {
    serve(ops.create, ({ body, ctx }) => service.createEdge(kind, body, ctx));
    serve(ops.list, ({ page, ctx }) => service.listEdges(kind, page, ctx));
    serve(ops.get, ({ params, ctx }) => service.getEdge(kind, params.id, ctx));
    serve(ops.delete, ({ params }) => service.deleteEdge(kind, params.id));
  }
  serve(routes.create, ({ params, body, ctx }) => service.createRoute(params.edge_id, body, ctx));
  serve(routes.list, ({ params, page, ctx }) => service.listRoutes(params.edge_id, page, ctx));
  serve(routes.get, ({ params, ctx }) => service.getRoute(params.edge_id, params.id, ctx));
  serve(routes.update, ({ params, body, ctx }) => service.updateRoute(params.edge_id, params.id, body, ctx));
  serve(routes.delete, ({ params }) => service.deleteRoute(params.edge_id, params.id));
  for (const m of ROUTE_MODULE_NAMES) {
    const ops = modules[m];
    serve(ops.put, ({ params, body, ctx }) => service.putModule(params.edge_id, params.id, m, body, ctx));
    serve(ops.get, ({ params, ctx }) => service.getModule(params.edge_id, params.id, m, ctx));
    serve(ops.delete, ({ params }) => service.deleteModule(params.edge_id, params.id, m));
  }
  serve(tlsIpRestriction.put, ({ params, body, ctx }) => service.putTlsIpRestriction(params.id, body, ctx));
  serve(tlsIpRestriction.get, ({ params, ctx }) => service.getTlsIpRestriction(params.id, ctx));
  serve(tlsIpRestriction.delete, ({ params }) => service.deleteTlsIpRestriction(params.id));
  // The API describes itself (gaps.md), generated from the same table; rendered once.
  let openApi: unknown;
  serve(meta.openapi, () => (openApi ??= buildOpenApi()));

  const missing = ALL_OPERATIONS.filter((op) => !registered.has(op.id)).map((op) => op.id);
  if (missing.length > 0) throw new Error(`the service does not serve ${missing.join(", ")}`);

  app.notFound(notFoundOrMethodNotAllowed(app));
  app.onError((err, c) => errorAnswer(c, err, opts.log));
  return app;
}
