/**
 * The edge API over Web-standard Request/Response (Hono). `app.fetch` serves both a socket
 * (the standalone server) and in-process calls (the embedded transport): one code path.
 * Routing reads like the API table; cross-cutting concerns are middleware.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import {
  ERROR_CODES,
  type ErrorBody,
  formatPath,
  ID_PATTERN,
  MAX_BODY_BYTES,
  OPERATION_ID_HEADER,
} from "../contract";
import { ApiError } from "./errors";
import { newOperationId } from "./ids";
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

type Env = { Variables: { operationId: string; body: unknown } };

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
  // Only the methods with a body pass through it: GETs, the hot path, skip a layer.
  app.on(METHODS_WITH_BODY, "*", jsonBody);

  const ctx = (c: Context<Env>): RequestContext => ({ baseUrl: new URL(c.req.url).origin });
  /** The context of a create: with its `Idempotency-Key`, when the caller sent one. */
  const createCtx = (c: Context<Env>): RequestContext => {
    const key = c.req.header("idempotency-key");
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw ApiError.invalid([
        { field: "Idempotency-Key", msg: "must be 1 to 255 visible ASCII characters" },
      ]);
    }
    return { ...ctx(c), idempotencyKey: key };
  };
  const p = (c: Context<Env>, name: string): string => {
    const value = c.req.param(name) ?? "";
    if (!ID_PATTERN.test(value)) throw ApiError.notFound(`${name} "${value.slice(0, 80)}"`);
    return value;
  };
  const body = (c: Context<Env>) => c.get("body");
  const page = (c: Context<Env>) => ({ limit: c.req.query("limit"), before_id: c.req.query("before_id") });
  /** Answers a GET: the rendered body, reused while the data is unchanged. Errors are never kept. */
  const read = (c: Context<Env>, render: () => unknown) => respond(c, 200, cache.json(c.req.url, render));
  /** Runs a delete and answers 204. */
  const noContent = (c: Context<Env>, run: () => void) => {
    run();
    return respond(c, 204, null);
  };
  /** Answers a write with the stored resource. */
  const json = (c: Context<Env>, status: 200 | 201, value: unknown) =>
    respond(c, status, JSON.stringify(value));

  // HTTPS edges
  app.post("/edges/https", (c) => json(c, 201, service.createEdge("https", body(c), createCtx(c))));
  app.get("/edges/https", (c) => read(c, () => service.listEdges("https", page(c), ctx(c))));
  app.get("/edges/https/:id", (c) => read(c, () => service.getEdge("https", p(c, "id"), ctx(c))));
  app.delete("/edges/https/:id", (c) => noContent(c, () => service.deleteEdge("https", p(c, "id"))));

  // Routes of an HTTPS edge
  app.post("/edges/https/:edge_id/routes", (c) =>
    json(c, 201, service.createRoute(p(c, "edge_id"), body(c), createCtx(c))),
  );
  app.get("/edges/https/:edge_id/routes", (c) =>
    read(c, () => service.listRoutes(p(c, "edge_id"), page(c), ctx(c))),
  );
  app.get("/edges/https/:edge_id/routes/:id", (c) =>
    read(c, () => service.getRoute(p(c, "edge_id"), p(c, "id"), ctx(c))),
  );
  app.patch("/edges/https/:edge_id/routes/:id", (c) =>
    json(c, 200, service.updateRoute(p(c, "edge_id"), p(c, "id"), body(c), ctx(c))),
  );
  app.delete("/edges/https/:edge_id/routes/:id", (c) =>
    noContent(c, () => service.deleteRoute(p(c, "edge_id"), p(c, "id"))),
  );

  // One sub-resource per route module: /edges/https/{edge_id}/routes/{id}/{module}
  const mod = "/edges/https/:edge_id/routes/:id/:module";
  app.put(mod, (c) =>
    json(c, 200, service.putModule(p(c, "edge_id"), p(c, "id"), c.req.param("module"), body(c), ctx(c))),
  );
  app.get(mod, (c) =>
    read(c, () => service.getModule(p(c, "edge_id"), p(c, "id"), c.req.param("module"), ctx(c))),
  );
  app.delete(mod, (c) =>
    noContent(c, () => service.deleteModule(p(c, "edge_id"), p(c, "id"), c.req.param("module"))),
  );

  // TLS edges and their IP restriction module
  app.post("/edges/tls", (c) => json(c, 201, service.createEdge("tls", body(c), createCtx(c))));
  app.get("/edges/tls", (c) => read(c, () => service.listEdges("tls", page(c), ctx(c))));
  app.get("/edges/tls/:id", (c) => read(c, () => service.getEdge("tls", p(c, "id"), ctx(c))));
  app.delete("/edges/tls/:id", (c) => noContent(c, () => service.deleteEdge("tls", p(c, "id"))));
  app.put("/edges/tls/:id/ip_restriction", (c) =>
    json(c, 200, service.putTlsIpRestriction(p(c, "id"), body(c), ctx(c))),
  );
  app.get("/edges/tls/:id/ip_restriction", (c) =>
    read(c, () => service.getTlsIpRestriction(p(c, "id"), ctx(c))),
  );
  app.delete("/edges/tls/:id/ip_restriction", (c) =>
    noContent(c, () => service.deleteTlsIpRestriction(p(c, "id"))),
  );

  // 405 is decided where 404 would be, rather than by a middleware around every request.
  const allowedMethods = methodsByPath(app);
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    const allowed = allowedMethods(path);
    return allowed.length > 0 && !allowed.includes(c.req.method)
      ? methodError(c, allowed)
      : errorResponse(c, ApiError.notFound(`${c.req.method} ${path}`));
  });
  app.onError((err, c) => {
    if (err instanceof ApiError) return errorResponse(c, err);
    opts.log?.(
      `internal error ${operationId(c)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    return errorResponse(
      c,
      new ApiError("internal", "internal server error (reported with its operation id)"),
    );
  });
  return app;
}

// ---------------------------------------------------------------- responses

/**
 * The request's operation id, made on first use. Every answer carries it (`Request-Id`): all of
 * them are built by `respond` or `errorResponse` below.
 */
function operationId(c: Context<Env>): string {
  let id = c.get("operationId");
  if (id === undefined) {
    id = newOperationId();
    c.set("operationId", id);
  }
  return id;
}

/**
 * A success answer: JSON (or no body) with its operation id. Headers are a plain object, which
 * @hono/node-server writes straight to the socket; a Headers object costs more than a cached GET.
 */
function respond(c: Context<Env>, status: number, body: string | Uint8Array<ArrayBuffer> | null): Response {
  const headers: Record<string, string> = { [OPERATION_ID_HEADER]: operationId(c) };
  if (body !== null) headers["Content-Type"] = "application/json";
  return new Response(body, { status, headers });
}

function errorResponse(c: Context<Env>, err: ApiError): Response {
  const id = operationId(c);
  const [first] = err.problems;
  const body: ErrorBody = {
    error_code: ERROR_CODES[err.kind].code,
    status_code: err.status,
    msg: err.message,
    details: {
      operation_id: id,
      ...(first ? { field: first.field } : {}),
      ...(err.problems.length > 1 ? { problems: err.problems } : {}),
    },
  };
  return c.json(body, err.status as 400, { ...err.headers, [OPERATION_ID_HEADER]: id });
}

/** The methods `app` serves on a path (HEAD wherever GET), in the order they were registered. */
function methodsByPath(app: Hono<Env>): (path: string) => string[] {
  let router: TrieRouter<string[]> | undefined;
  return (path) => {
    if (!router) {
      const byPattern = new Map<string, Set<string>>();
      for (const route of app.routes) {
        if (route.method === "ALL" || route.path === "/*" || route.path === "*") continue; // middleware
        const methods = byPattern.get(route.path) ?? new Set<string>();
        methods.add(route.method);
        if (route.method === "GET") methods.add("HEAD");
        byPattern.set(route.path, methods);
      }
      router = new TrieRouter<string[]>();
      for (const [pattern, methods] of byPattern) router.add("ALL", pattern, [...methods]);
    }
    const allowed = new Set<string>();
    for (const [methods] of router.match("ALL", path)[0]) for (const m of methods) allowed.add(m);
    return [...allowed];
  };
}

function methodError(c: Context<Env>, allowed: string[]): Response {
  return errorResponse(
    c,
    new ApiError("methodNotAllowed", `${c.req.method} is not allowed here; allowed: ${allowed.join(", ")}`, {
      headers: { Allow: allowed.join(", ") },
    }),
  );
}

// ---------------------------------------------------------------- middleware

/** One line per request: method, path, status, time, operation id (never bodies or keys). */
function requestLog(log: (line: string) => void): MiddlewareHandler<Env> {
  return async (c, next) => {
    const id = operationId(c);
    const started = performance.now();
    await next();
    log(
      `${c.req.method} ${new URL(c.req.url).pathname} ${c.res.status} ${(performance.now() - started).toFixed(1)}ms ${id}`,
    );
  };
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Bearer key check. Both sides are hashed first so the comparison is constant-time whatever the lengths. */
function bearerAuth(apiKey: string): MiddlewareHandler<Env> {
  const expected = digest(apiKey);
  return async (c, next) => {
    const token = bearerToken(c.req.header("authorization"));
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      throw new ApiError(
        "unauthorized",
        token !== undefined
          ? "the API key is not valid"
          : "missing API key: send 'Authorization: Bearer <api key>'",
        { headers: { "WWW-Authenticate": "Bearer" } },
      );
    }
    await next();
  };
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, token trimmed). */
function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim();
}

/**
 * Fixed one-minute windows per API key. The window is keyed on the verified token, never on the raw
 * header (rewriting the header must not open a new window); without a key configured the header
 * proves nothing, so every caller shares one window.
 */
function rateLimit(perMinute: number, keyed: boolean): MiddlewareHandler<Env> {
  const windows = new Map<string, { start: number; count: number }>();
  return async (c, next) => {
    const now = Date.now();
    const start = now - (now % 60_000);
    const key = (keyed && bearerToken(c.req.header("authorization"))) || "anonymous";
    let w = windows.get(key);
    if (!w || w.start !== start) {
      if (windows.size > 10_000) windows.clear(); // old windows are worthless; bound the memory
      w = { start, count: 0 };
      windows.set(key, w);
    }
    if (++w.count > perMinute) {
      const retryAfter = Math.max(1, Math.ceil((start + 60_000 - now) / 1000));
      throw new ApiError(
        "rateLimited",
        `rate limit of ${perMinute} requests per minute exceeded; retry after ${retryAfter}s`,
        {
          headers: { "Retry-After": String(retryAfter) },
        },
      );
    }
    await next();
  };
}

const METHODS_WITH_BODY = ["POST", "PUT", "PATCH"];
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads and checks the JSON body of POST/PUT/PATCH before any handler runs. */
async function jsonBody(c: Context<Env>, next: () => Promise<void>): Promise<void> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError(
      "unsupportedMediaType",
      "the request body must be JSON: send 'Content-Type: application/json'",
    );
  }
  const length = c.req.header("content-length");
  if (Number(length ?? "0") > MAX_BODY_BYTES) throw tooLarge();
  // With a declared length (the HTTP parser holds the body to it) read it whole: on
  // @hono/node-server that skips the WHATWG stream, a tenth of a POST's CPU. A body of unknown
  // length (chunked) is read piece by piece and refused as soon as it passes the limit.
  const bytes =
    length !== undefined
      ? new Uint8Array(await c.req.arrayBuffer())
      : await readLimited(c.req.raw, MAX_BODY_BYTES);
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge();
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError("invalidBody", "the request body is not valid UTF-8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ApiError("invalidBody", `the request body is not valid JSON (${(e as Error).message})`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ApiError("invalidBody", "the request body must be a JSON object");
  }
  const proto = protoKeyPath(parsed);
  if (proto) {
    throw ApiError.invalid([
      { field: formatPath(proto), msg: "is not allowed as a key (it cannot be stored)" },
    ]);
  }
  c.set("body", parsed);
  await next();
}

/**
 * Path of a "__proto__" key anywhere in a parsed body. JSON.parse keeps it as an own key, but
 * schema parsing drops it from maps (header maps) without a word: refuse it instead.
 * Iterative, paths built only for a hit: a body may nest far deeper than the call stack.
 */
function protoKeyPath(body: object): PropertyKey[] | undefined {
  type Node = { value: object; parent?: Node; key?: PropertyKey };
  const pending: Node[] = [{ value: body }];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (Object.hasOwn(node.value, "__proto__")) {
      const path: PropertyKey[] = ["__proto__"];
      for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) path.push(n.key);
      return path.reverse();
    }
    for (const [key, inner] of Object.entries(node.value)) {
      if (inner !== null && typeof inner === "object") {
        pending.push({ value: inner, parent: node, key: Array.isArray(node.value) ? Number(key) : key });
      }
    }
  }
  return undefined;
}

const tooLarge = () => new ApiError("payloadTooLarge", `the request body exceeds ${MAX_BODY_BYTES} bytes`);

async function readLimited(req: Request, limit: number): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
