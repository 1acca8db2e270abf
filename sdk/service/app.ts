/**
 * The edge API over Web-standard Request/Response (Hono). `app.fetch` serves both a socket
 * (the standalone server) and in-process calls (the embedded transport): one code path.
 * The routes are the contract's operation table (sdk/contract/operations); this file says what
 * each operation does, in the table's order. Cross-cutting concerns are the middleware of
 * ./middleware, answers are built in ./context.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { type z } from "zod";
import {
  ALL_OPERATIONS,
  buildOpenApi,
  errorMessage,
  ID_PATTERN,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_PRIOR_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  issuesToProblems,
  noQuerySchema,
  type Operation,
  OPERATIONS,
  type PageQuery,
  type Problem,
  type QueryOf,
} from "../contract";
import { startAuditPruner } from "./audit";
import {
  CLIENT_CLOSED_REQUEST,
  clientClosedAnswer,
  clientGone,
  type EdgeContext,
  type Env,
  errorAnswer,
  errorResponse,
  operationId,
  respond,
} from "./context";
import { ApiError } from "./errors";
import { type LogFormat, serviceLog } from "./log";
import type { OperationCounts, ServiceMetrics } from "./metrics";
import { KeyRing } from "./api-keys";
import { bearerAuth } from "./middleware/bearer-auth";
import { jsonBody, jsonBodyOrEmpty } from "./middleware/json-body";
import { notFoundOrMethodNotAllowed } from "./middleware/method-not-allowed";
import { rateLimit } from "./middleware/rate-limit";
import { requestLog } from "./middleware/request-log";
import { Readiness } from "./readiness";
import { ResponseCache } from "./response-cache";
import { writeFault, writeFaultError } from "./write-faults";
import { type Call, EdgeService, operationHandlers, type RequestContext } from "./service";
import type { Store } from "./store";

export interface EdgeAppOptions {
  store: Store;
  /**
   * The bootstrap key (scope admin): when set, every request but the probes must carry
   * `Authorization: Bearer <key>`, this one or a named key of the store.
   */
  apiKey?: string;
  /**
   * Check named keys of the store too (`edge-service keys`): once one was ever made, every request
   * but the probes needs a key. Servers do; an in-process service, which nobody else calls, not.
   */
  namedKeys?: boolean;
  /** Requests per minute per API key; off when undefined. */
  rateLimitPerMinute?: number;
  /**
   * Where the log's lines go: one per request (method, path, status, time, operation id, key
   * name), and the events an operator should know of; never bodies, header values or keys.
   */
  log?: (line: string) => void;
  /** `text` (default: the line format of earlier versions) or `json` (one object per line). */
  logFormat?: LogFormat;
  /**
   * Serve Prometheus metrics at `GET /metrics`. Off by default: an in-process service has nobody
   * to scrape it (the server turns them on); off, `/metrics` is a 404 that says so.
   */
  metrics?: boolean;
  /**
   * Bound, in bytes of URL and body, on the GET answers kept for reuse while the data is
   * unchanged (see ResponseCache). Default 8 MiB; 0 renders every GET afresh.
   */
  responseCacheBytes?: number;
  /**
   * Keep audit events this long (`serve --audit-retention`), pruning older ones in the background;
   * undefined: kept (an in-process service prunes nothing).
   */
  auditRetentionMs?: number;
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

/** `/edges/https/{edge_id}/routes` → Hono's `/edges/https/:edge_id/routes`. */
const honoPath = (template: string) => template.replace(/\{(\w+)\}/g, ":$1");

/** Loaded only here: prom-client takes ~50 ms to load, which an in-process service never needs. */
function newMetrics(store: Store): ServiceMetrics {
  const { ServiceMetrics } = require("./metrics") as typeof import("./metrics");
  return new ServiceMetrics(store);
}

/**
 * The paths of the public operations (health probes), whatever the method: a probe sent with the
 * wrong method (`POST /healthz`, a `/healthz/` with a trailing slash) is told 405 or 404 by the
 * routing, never 401: a load balancer holds no key, and its operator must see what is wrong.
 */
const PUBLIC_PATHS = new Set(ALL_OPERATIONS.filter((op) => op.public).map((op) => op.path));
const isPublicPath = (path: string) => PUBLIC_PATHS.has(path.length > 1 ? path.replace(/\/+$/, "") : path);

/** `mw`, except for the public operations (health probes: no key, no rate limit). */
const exceptPublic =
  (mw: MiddlewareHandler<Env>): MiddlewareHandler<Env> =>
  (c, next) => {
    // A request that matched an operation says whether it is public; only one that matched none
    // (a 404 or 405 to come) has its path looked at.
    const op = c.get("operation");
    return (op ? op.public : isPublicPath(c.req.path)) ? next() : mw(c, next);
  };

/**
 * The counts of the operation a request matched, left by its route for `observe` to find once
 * the request is answered (keyed weakly: an answered request takes its entry with it).
 */
const COUNTS = new WeakMap<Request, OperationCounts>();

/**
 * Counts and times every request the app answers (see ServiceMetrics), around `app.fetch`
 * rather than as a middleware: Hono runs a request that matches one handler alone without its
 * middleware machinery, and a middleware would take every GET off that path (a first version,
 * a middleware calling prom-client per request, cost 1.26× the CPU of a cached GET; BENCHMARKS.md,
 * "Metrics, probes and logs").
 */
function observe(app: Hono<Env>, metrics: ServiceMetrics): void {
  const fetch = app.fetch;
  app.fetch = (request, env, executionCtx) => {
    const started = performance.now();
    metrics.requestStarted();
    let answer: Response | Promise<Response>;
    try {
      answer = fetch(request, env, executionCtx);
    } catch (e) {
      metrics.requestDone(COUNTS.get(request), 500, (performance.now() - started) / 1000);
      throw e;
    }
    if (!(answer instanceof Promise)) {
      metrics.requestDone(COUNTS.get(request), answer.status, (performance.now() - started) / 1000);
      return answer;
    }
    return answer.then(
      (res) => {
        // A client gone before its answer is counted so, whatever the handler came to.
        const status = clientGone(env) ? CLIENT_CLOSED_REQUEST : res.status;
        metrics.requestDone(COUNTS.get(request), status, (performance.now() - started) / 1000);
        return res;
      },
      (e: unknown) => {
        const status = clientGone(env) ? CLIENT_CLOSED_REQUEST : 500;
        metrics.requestDone(COUNTS.get(request), status, (performance.now() - started) / 1000);
        throw e;
      },
    );
  };
}

export function createEdgeApp(opts: EdgeAppOptions): Hono<Env> {
  const log = opts.log ? serviceLog(opts.log, opts.logFormat) : undefined;
  const metrics = opts.metrics ? newMetrics(opts.store) : undefined;
  const service = new EdgeService(opts.store, metrics && ((n) => metrics.auditWritten(n)));
  if (opts.auditRetentionMs !== undefined) {
    startAuditPruner(
      opts.store,
      opts.auditRetentionMs,
      (n) => metrics?.auditPruned(n),
      (e) => log?.event("warn", `audit retention: pruning failed (${String(e)}); retried at the next round`),
    );
  }
  const cache = new ResponseCache(
    () => opts.store.changeCounter(),
    opts.responseCacheBytes ?? DEFAULT_RESPONSE_CACHE_BYTES,
    metrics?.cache,
  );
  const app = new Hono<Env>();

  /** For the metrics: marks a request as one of `op` (see `observe`); undefined when metrics are off. */
  const counter = (op: Operation): ((c: EdgeContext) => void) | undefined => {
    if (!metrics) return undefined;
    const counts = metrics.countsOf(op.id);
    return (c) => {
      COUNTS.set(c.req.raw, counts);
    };
  };
  /** Tells the log, the metrics and the key check which operation of the table `c` asks for. */
  const tag = (op: Operation): MiddlewareHandler<Env> => {
    const count = counter(op);
    return (c, next) => {
      c.set("operation", op);
      count?.(c);
      return next();
    };
  };

  // Outermost first: the log sees every answer, refusals of the key included.
  const middleware: MiddlewareHandler<Env>[] = [];
  if (log) middleware.push(requestLog(log));
  if (opts.apiKey !== undefined || opts.namedKeys) {
    middleware.push(exceptPublic(bearerAuth(new KeyRing(opts.store, opts.apiKey))));
  }
  if (opts.rateLimitPerMinute !== undefined)
    middleware.push(exceptPublic(rateLimit(opts.rateLimitPerMinute)));
  if (middleware.length > 0) {
    // Each route first tells which operation of the table it is, before any middleware runs:
    // logs and metrics name it, public ones skip the key. Told once per route here, so nothing
    // maps a path back to an operation at request time. (Without middleware no route pays it.)
    for (const op of ALL_OPERATIONS) app.on(op.method, honoPath(op.path), tag(op));
    for (const m of middleware) app.use(m);
  }

  /**
   * Where the caller reached the service (every Ref and uri is built on it); for an operation that
   * takes an `Idempotency-Key`, the key, and an answer to a repeat says so (`Idempotent-Replayed`).
   */
  const context = (op: Operation, c: EdgeContext): RequestContext => {
    const baseUrl = new URL(c.req.url).origin;
    // Who asks, for the audit event of a change (a GET changes nothing).
    const actor = op.method === "GET" ? undefined : { key: c.get("keyName"), requestId: operationId(c) };
    const redactSecrets = c.get("keyScope") === "read";
    if (!op.idempotent) return { baseUrl, actor, redactSecrets };
    const header = (name: string) => {
      const value = c.req.header(name);
      if (value !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(value)) {
        throw ApiError.invalid([{ field: name, msg: "must be 1 to 255 visible ASCII characters" }]);
      }
      return value;
    };
    const key = header(IDEMPOTENCY_KEY_HEADER);
    const prior = header(IDEMPOTENCY_PRIOR_KEY_HEADER);
    if (prior !== undefined && key === undefined) {
      throw ApiError.invalid([
        { field: IDEMPOTENCY_PRIOR_KEY_HEADER, msg: `only goes with an ${IDEMPOTENCY_KEY_HEADER}` },
      ]);
    }
    return {
      baseUrl,
      actor,
      redactSecrets,
      idempotencyKey: key,
      idempotencyPriorKey: prior,
      onReplay: (by) => {
        c.set("replayed", by);
        metrics?.replayed(op.id);
      },
    };
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

  // Made before the routes: a write's outcome tells readiness whether the storage takes writes.
  const readiness = new Readiness(
    () => opts.store.whyNotReady(),
    log,
    {},
    () =>
      opts.store.probeWrite().then(
        () => undefined,
        (e: unknown) => writeFault(e, opts.store)?.log ?? `a probe write failed (${errorMessage(e)})`,
      ),
  );

  const registered = new Set<string>();
  /**
   * Serves `op`: its body read first (POST/PUT/PATCH), its query checked (an unknown parameter
   * is a 400: a typo must not serve page 1 again), its path identifiers checked; a GET's answer
   * reused while the data is unchanged (errors are never kept), a 204 without a body.
   */
  const serve = <O extends Operation>(op: O, handler: (call: Call<O>) => unknown) => {
    registered.add(op.id);
    const count = counter(op);
    const answer = async (c: EdgeContext) => {
      count?.(c);
      // The operation's own query schema: its parse is QueryOf<O>.
      const parsed = query(c, op.query ?? noQuerySchema) as QueryOf<O>;
      const page: PageQuery = op.query ? parsed : {};
      const call = async () =>
        handler({
          params: params(op, c),
          body: c.get("body"),
          page,
          query: parsed,
          ctx: context(op, c),
        });
      const success = op.success;
      if (op.method === "GET") {
        // A read key's answers are other bodies (secrets redacted): cached apart.
        const key = c.get("keyScope") === "read" ? `${c.req.url} redacted` : c.req.url;
        return respond(c, 200, await cache.json(key, call));
      }
      const result = await call();
      readiness.writeSucceeded();
      return success.status === 204
        ? respond(c, 204, null)
        : respond(c, success.status, JSON.stringify(result));
    };
    const path = honoPath(op.path);
    if (!op.body) app.on(op.method, path, answer);
    else {
      const body = op.body.emptyIsObject ? jsonBodyOrEmpty(() => ({})) : jsonBody;
      // Tagged before the body is read, so that a 413 or 415 is counted under its operation.
      if (metrics) app.on(op.method, path, tag(op), body, answer);
      else app.on(op.method, path, body, answer);
    }
  };

  // Every operation of the table, as the service says it answers it (its handlers), in one loop.
  for (const h of operationHandlers(service)) serve(h.op, (call) => h.answer(call));
  // The API describes itself (gaps.md), generated from the same table; rendered once.
  let openApi: unknown;
  serve(OPERATIONS.meta.openapi, () => (openApi ??= buildOpenApi()));

  /** Serves `op` with an answer made for each request, never a cached one: probes and metrics. */
  const serveLive = (op: Operation, answer: (c: EdgeContext) => Response | Promise<Response>) => {
    registered.add(op.id);
    const count = counter(op);
    app.on(op.method, honoPath(op.path), (c) => {
      count?.(c);
      query(c, noQuerySchema);
      return answer(c);
    });
  };
  const OK = JSON.stringify({ status: "ok" });
  // Alive while the process answers: the database is not asked, so an outage of it never gets
  // every replica restarted by its orchestrator.
  serveLive(OPERATIONS.meta.health, (c) => respond(c, 200, OK));
  serveLive(OPERATIONS.meta.ready, async (c) => {
    if ((await readiness.whyNot()) !== undefined) {
      throw new ApiError(
        "unavailable",
        "not ready: the service cannot serve requests for now (the reason is in its log); retry shortly",
        { headers: { "Retry-After": "1" } },
      );
    }
    return respond(c, 200, OK);
  });
  serveLive(OPERATIONS.meta.metrics, async (c) => {
    if (!metrics) {
      throw new ApiError(
        "notFound",
        "metrics are turned off on this service: `edge-service serve` serves them, an in-process service does not",
      );
    }
    return respond(c, 200, await metrics.render(), metrics.contentType);
  });

  const missing = ALL_OPERATIONS.filter((op) => !registered.has(op.id)).map((op) => op.id);
  if (missing.length > 0) throw new Error(`the service does not serve ${missing.join(", ")}`);

  app.notFound(notFoundOrMethodNotAllowed(app));
  app.onError((err, c) => {
    // The client hung up (its body cut mid-upload, most often): no server error to report.
    if (clientGone(c.env)) return clientClosedAnswer(c);
    // A write the storage refused (disk full, read-only): a 503 the client retries, one line for
    // the operator when the fault begins, and not ready until a write succeeds again.
    const fault = err instanceof ApiError ? undefined : writeFault(err, opts.store);
    if (!fault) return errorAnswer(c, err, log);
    readiness.writeFailed(fault.log);
    return errorResponse(c, writeFaultError(fault));
  });
  if (metrics) observe(app, metrics);
  return app;
}
