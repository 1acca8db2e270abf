/**
 * The edge API over Web-standard Request/Response (Hono). `app.fetch` serves both a socket
 * (the standalone server) and in-process calls (the embedded transport): one code path.
 * This file is the route table, read like the API table; cross-cutting concerns are the
 * middleware of ./middleware, answers are built in ./context.
 */
import { Hono } from "hono";
import { type z } from "zod";
import {
  acceptsEmptyBody,
  buildOpenApi,
  ID_PATTERN,
  isRouteModuleName,
  issuesToProblems,
  noQuerySchema,
  type PageQuery,
  pageQuerySchema,
  type Problem,
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
function query<S extends z.ZodType>(c: EdgeContext, schema: S): z.output<S> {
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
    const allowed = Object.keys((schema as unknown as z.ZodObject).shape ?? {});
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
  if (problems.length > 0) throw ApiError.invalid(problems);
  return result.data as z.output<S>;
}

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

  const ctx = (c: EdgeContext): RequestContext => ({ baseUrl: new URL(c.req.url).origin });
  /**
   * The context of a create: with its `Idempotency-Key`, when the caller sent one; an answer to
   * a repeat says so (`Idempotent-Replayed: true`).
   */
  const createCtx = (c: EdgeContext): RequestContext => {
    const key = c.req.header("idempotency-key");
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw ApiError.invalid([
        { field: "Idempotency-Key", msg: "must be 1 to 255 visible ASCII characters" },
      ]);
    }
    return { ...ctx(c), idempotencyKey: key, onReplay: () => c.set("replayed", true) };
  };
  const p = (c: EdgeContext, name: string): string => {
    const value = c.req.param(name) ?? "";
    if (!ID_PATTERN.test(value)) throw ApiError.notFound(`${name} "${value.slice(0, 80)}"`);
    return value;
  };
  const body = (c: EdgeContext) => c.get("body");
  const page = (c: EdgeContext): PageQuery => query(c, pageQuerySchema);
  /** Refuses a query parameter the operation does not take (gaps.md: a typo must not serve page 1 again). */
  const none = (c: EdgeContext): void => void query(c, noQuerySchema);
  /** Answers a GET: the rendered body, reused while the data is unchanged. Errors are never kept. */
  const read = async (
    c: EdgeContext,
    render: () => Promise<unknown>,
    q: (c: EdgeContext) => unknown = none,
  ) => {
    q(c);
    return respond(c, 200, await cache.json(c.req.url, render));
  };
  /** Runs a delete and answers 204. */
  const noContent = async (c: EdgeContext, run: () => Promise<void>) => {
    none(c);
    await run();
    return respond(c, 204, null);
  };
  /** Answers a write with the stored resource. */
  const json = async (c: EdgeContext, status: 200 | 201, value: () => Promise<unknown>) => {
    none(c);
    return respond(c, status, JSON.stringify(await value()));
  };

  // Writes that take a body read it through jsonBody first; GETs, the hot path, skip that layer.

  // HTTPS edges
  app.post("/edges/https", jsonBody, (c) =>
    json(c, 201, () => service.createEdge("https", body(c), createCtx(c))),
  );
  app.get("/edges/https", (c) => read(c, () => service.listEdges("https", page(c), ctx(c)), page));
  app.get("/edges/https/:id", (c) => read(c, () => service.getEdge("https", p(c, "id"), ctx(c))));
  app.delete("/edges/https/:id", (c) => noContent(c, () => service.deleteEdge("https", p(c, "id"))));

  // Routes of an HTTPS edge
  const routes = "/edges/https/:edge_id/routes";
  app.post(routes, jsonBody, (c) =>
    json(c, 201, () => service.createRoute(p(c, "edge_id"), body(c), createCtx(c))),
  );
  app.get(routes, (c) => read(c, () => service.listRoutes(p(c, "edge_id"), page(c), ctx(c)), page));
  app.get(`${routes}/:id`, (c) => read(c, () => service.getRoute(p(c, "edge_id"), p(c, "id"), ctx(c))));
  app.patch(`${routes}/:id`, jsonBody, (c) =>
    json(c, 200, () => service.updateRoute(p(c, "edge_id"), p(c, "id"), body(c), ctx(c))),
  );
  app.delete(`${routes}/:id`, (c) => noContent(c, () => service.deleteRoute(p(c, "edge_id"), p(c, "id"))));

  // One sub-resource per route module: /edges/https/{edge_id}/routes/{id}/{module}
  const mod = `${routes}/:id/:module`;
  const module = (c: EdgeContext) => c.req.param("module") ?? "";
  // A module whose fields are all optional takes a PUT without any body as `{}` (the Python client's empty module).
  const emptyModule = (c: EdgeContext) => {
    const name = module(c);
    return isRouteModuleName(name) && acceptsEmptyBody(name) ? {} : undefined;
  };
  app.put(mod, jsonBodyOrEmpty(emptyModule), (c) =>
    json(c, 200, () => service.putModule(p(c, "edge_id"), p(c, "id"), module(c), body(c), ctx(c))),
  );
  app.get(mod, (c) => read(c, () => service.getModule(p(c, "edge_id"), p(c, "id"), module(c), ctx(c))));
  app.delete(mod, (c) => noContent(c, () => service.deleteModule(p(c, "edge_id"), p(c, "id"), module(c))));

  // TLS edges and their IP restriction module
  app.post("/edges/tls", jsonBody, (c) =>
    json(c, 201, () => service.createEdge("tls", body(c), createCtx(c))),
  );
  app.get("/edges/tls", (c) => read(c, () => service.listEdges("tls", page(c), ctx(c)), page));
  app.get("/edges/tls/:id", (c) => read(c, () => service.getEdge("tls", p(c, "id"), ctx(c))));
  app.delete("/edges/tls/:id", (c) => noContent(c, () => service.deleteEdge("tls", p(c, "id"))));
  const tlsIp = "/edges/tls/:id/ip_restriction";
  app.put(tlsIp, jsonBody, (c) =>
    json(c, 200, () => service.putTlsIpRestriction(p(c, "id"), body(c), createCtx(c))),
  );
  app.get(tlsIp, (c) => read(c, () => service.getTlsIpRestriction(p(c, "id"), ctx(c))));
  app.delete(tlsIp, (c) => noContent(c, () => service.deleteTlsIpRestriction(p(c, "id"))));

  // The API describes itself (gaps.md), generated from the same contract; rendered once.
  let openApi: string | undefined;
  app.get("/openapi.json", (c) => {
    none(c);
    openApi ??= JSON.stringify(buildOpenApi());
    return respond(c, 200, openApi);
  });

  app.notFound(notFoundOrMethodNotAllowed(app));
  app.onError((err, c) => errorAnswer(c, err, opts.log));
  return app;
}
