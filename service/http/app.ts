/**
 * The edge API over Web-standard Request/Response (Hono). `app.fetch` serves both a socket
 * (the standalone server) and in-process calls (the embedded transport): one code path.
 * The routes are the contract's operation table (sdk/contract/operations), served by
 * ./operation-routes with the answers the service gives (operationHandlers); this file assembles
 * them with the middleware of ./middleware, the probes, and the one error handler.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { ALL_OPERATIONS, buildOpenApi, errorMessage, OPERATIONS, type ReadyBody } from "../../sdk/contract";
import { startAuditPruner } from "../audit-retention";
import {
  CLIENT_CLOSED_REQUEST,
  clientClosedAnswer,
  clientGone,
  type EdgeContext,
  type Env,
  errorAnswer,
  errorResponse,
  respond,
} from "./context";
import { ApiError } from "../errors";
import { type LogFormat, type ServiceLog, serviceLog } from "./log";
import type { ServiceMetrics } from "./metrics";
import { KeyRing } from "../api-keys";
import { bearerAuth } from "./middleware/bearer-auth";
import { clientCertificate } from "./middleware/client-certificate";
import { notFoundOrMethodNotAllowed } from "./middleware/method-not-allowed";
import { rateLimit } from "./middleware/rate-limit";
import { requestLog } from "./middleware/request-log";
import { Readiness } from "./readiness";
import { ResponseCache } from "./response-cache";
import { writeFault, writeFaultError } from "../store/write-faults";
import { countsOf, honoPath, OperationRoutes } from "./operation-routes";
import { EdgeService, operationHandlers } from "../service";
import type { Deadline, Store } from "../store/store";
import { requestDeadline } from "./request-start";

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
  /**
   * Why the host cannot take requests, beside the store's reasons (`GET /readyz` answers 503):
   * the standalone server says "stopping" from a stop's start.
   */
  hostNotReady?: () => string | undefined;
  /**
   * What `GET /readyz` says beside "ok" while the service serves but its operator should look
   * (the standalone server: TLS files that could not be reloaded).
   */
  readyDetail?: () => string | undefined;
  /**
   * Every request but the probes must come over a TLS connection whose client certificate the
   * server verified (mutual TLS: the standalone server with client CAs); else a 401 says so.
   */
  clientCertificates?: boolean;
}

const DEFAULT_RESPONSE_CACHE_BYTES = 8 * 1024 * 1024;

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
const PUBLIC_PATHS: ReadonlySet<string> = new Set(
  ALL_OPERATIONS.filter((op) => op.public).map((op) => op.path),
);
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
      metrics.requestDone(countsOf(request), 500, (performance.now() - started) / 1000);
      throw e;
    }
    if (!(answer instanceof Promise)) {
      metrics.requestDone(countsOf(request), answer.status, (performance.now() - started) / 1000);
      return answer;
    }
    return answer.then(
      (res) => {
        // A client gone before its answer is counted so, whatever the handler came to.
        const status = clientGone(env) ? CLIENT_CLOSED_REQUEST : res.status;
        metrics.requestDone(countsOf(request), status, (performance.now() - started) / 1000);
        return res;
      },
      (e: unknown) => {
        const status = clientGone(env) ? CLIENT_CLOSED_REQUEST : 500;
        metrics.requestDone(countsOf(request), status, (performance.now() - started) / 1000);
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
  const app = new Hono<Env>();
  const deadline = (c: EdgeContext) => requestDeadline(c, opts.store);
  const routes = new OperationRoutes(app, {
    metrics,
    cache: new ResponseCache(
      (within) => opts.store.changeCounter(within),
      opts.responseCacheBytes ?? DEFAULT_RESPONSE_CACHE_BYTES,
      metrics?.cache,
    ),
    readiness: storeReadiness(opts.store, log, opts.hostNotReady),
    deadline,
  });
  useMiddleware(app, routes, opts, log, deadline);

  // Every operation of the table, as the service says it answers it (its handlers), in one loop.
  for (const h of operationHandlers(service)) routes.serve(h.op, (call) => h.answer(call));
  // The API describes itself (docs/decisions.md#compatibility), generated from the same table;
  // rendered once.
  let openApi: unknown;
  routes.serve(OPERATIONS.meta.openapi, () => (openApi ??= buildOpenApi()));
  serveProbes(routes, metrics, opts.readyDetail);
  routes.assertComplete();

  app.notFound(notFoundOrMethodNotAllowed(app));
  app.onError((err, c) => {
    // The client hung up (its body cut mid-upload, most often): no server error to report.
    if (clientGone(c.env)) return clientClosedAnswer(c);
    // A write the storage refused (disk full, read-only): a 503 the client retries, one line for
    // the operator when the fault begins, and not ready until a write succeeds again.
    const fault = err instanceof ApiError ? undefined : writeFault(err, opts.store);
    if (!fault) return errorAnswer(c, err, log);
    routes.readiness.writeFailed(fault.log);
    return errorResponse(c, writeFaultError(fault));
  });
  if (metrics) observe(app, metrics);
  return app;
}

/** Whether the host and `store` can serve; a probe write answers whether its storage takes writes. */
function storeReadiness(
  store: Store,
  log: ServiceLog | undefined,
  hostNotReady: (() => string | undefined) | undefined,
): Readiness {
  return new Readiness(
    () => store.whyNotReady(),
    log,
    { hostNotReady, unavailableSeen: () => store.unavailableSeen?.() ?? 0 },
    () =>
      store.probeWrite().then(
        () => undefined,
        (e: unknown) => writeFault(e, store)?.log ?? `a probe write failed (${errorMessage(e)})`,
      ),
  );
}

/** The cross-cutting middleware `opts` asks for, outermost first: the log sees every answer, refusals of the key included. */
function useMiddleware(
  app: Hono<Env>,
  routes: OperationRoutes,
  opts: EdgeAppOptions,
  log: ServiceLog | undefined,
  deadline: (c: EdgeContext) => Deadline | undefined,
) {
  const middleware: MiddlewareHandler<Env>[] = [];
  if (log) middleware.push(requestLog(log));
  // Before the key: a connection without a verified certificate gets nothing else of the API.
  if (opts.clientCertificates) middleware.push(exceptPublic(clientCertificate()));
  if (opts.apiKey !== undefined || opts.namedKeys) {
    middleware.push(exceptPublic(bearerAuth(new KeyRing(opts.store, opts.apiKey), deadline)));
  }
  if (opts.rateLimitPerMinute !== undefined)
    middleware.push(exceptPublic(rateLimit(opts.rateLimitPerMinute)));
  if (middleware.length === 0) return;
  // Each route first tells which operation of the table it is, before any middleware runs:
  // logs and metrics name it, public ones skip the key. Told once per route here, so nothing
  // maps a path back to an operation at request time. (Without middleware no route pays it.)
  for (const op of ALL_OPERATIONS) app.on(op.method, honoPath(op.path), routes.tag(op));
  for (const m of middleware) app.use(m);
}

const OK = JSON.stringify({ status: "ok" });

/** The probes and the metrics: answered afresh for each request. */
function serveProbes(
  routes: OperationRoutes,
  metrics: ServiceMetrics | undefined,
  readyDetail: (() => string | undefined) | undefined,
): void {
  // Alive while the process answers: the database is not asked, so an outage of it never gets
  // every replica restarted by its orchestrator.
  routes.serveLive(OPERATIONS.meta.health, (c) => respond(c, 200, OK));
  routes.serveLive(OPERATIONS.meta.ready, async (c) => {
    if ((await routes.readiness.whyNot()) !== undefined) {
      throw new ApiError(
        "unavailable",
        "not ready: the service cannot serve requests for now (the reason is in its log); retry shortly",
        { headers: { "Retry-After": "1" } },
      );
    }
    const detail = readyDetail?.();
    return respond(
      c,
      200,
      detail === undefined ? OK : JSON.stringify({ status: "ok", detail } satisfies ReadyBody),
    );
  });
  routes.serveLive(OPERATIONS.meta.metrics, async (c) => {
    if (!metrics) {
      throw new ApiError(
        "notFound",
        "metrics are turned off on this service: `edge-service serve` serves them, an in-process service does not",
      );
    }
    return respond(c, 200, await metrics.render(), metrics.contentType);
  });
}
