/**
 * The routes of the operation table on a Hono app: each operation served with its path
 * identifiers, query and request context checked the one way, a GET's answer reused while the
 * data is unchanged, and every request counted under its operation (see `observe` in ./app).
 * What each operation does is the service's (operationHandlers); which middleware runs is ./app's.
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { z } from "zod";
import {
  ALL_OPERATIONS,
  ID_PATTERN,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeySchema,
  issuesToProblems,
  keptText,
  noQuerySchema,
  type Operation,
  type PageQuery,
  type Problem,
  type QueryOf,
} from "../../sdk/contract";
import { type EdgeContext, type Env, operationId, respond } from "./context";
import { ApiError } from "../errors";
import type { OperationCounts, ServiceMetrics } from "./metrics";
import { jsonBody, jsonBodyOrEmpty } from "./middleware/json-body";
import type { Readiness } from "./readiness";
import type { ResponseCache } from "./response-cache";
import type { Call, RequestContext } from "../service";
import type { Deadline } from "../store/store";

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
export const honoPath = (template: string) => template.replace(/\{(\w+)\}/g, ":$1");

/**
 * The counts of the operation a request matched, left by its route for `observe` to find once
 * the request is answered (keyed weakly: an answered request takes its entry with it).
 */
const COUNTS = new WeakMap<Request, OperationCounts>();

/** The counts `observe` reads for `request`, if its route left them. */
export const countsOf = (request: Request): OperationCounts | undefined => COUNTS.get(request);

/**
 * Where the caller reached the service (every Ref and uri is built on it); for an operation that
 * takes an `Idempotency-Key`, the key, and an answer to a repeat says so (`Idempotent-Replayed`).
 */
function requestContext(
  op: Operation,
  c: EdgeContext,
  metrics: ServiceMetrics | undefined,
  deadline: Deadline | undefined,
): RequestContext {
  const baseUrl = new URL(c.req.url).origin;
  // Who asks, for the audit event of a change (a GET changes nothing).
  const actor = op.method === "GET" ? undefined : { key: c.get("keyName"), requestId: operationId(c) };
  const redactSecrets = c.get("keyScope") === "read";
  if (!op.idempotent) return { baseUrl, actor, redactSecrets, deadline };
  const header = (name: string) => {
    const value = c.req.header(name);
    const checked = value === undefined ? undefined : idempotencyKeySchema.safeParse(value);
    // Named as the header is spelled (a field path would quote it: ["Idempotency-Key"]).
    if (checked?.success === false) {
      throw ApiError.invalid(checked.error.issues.map((issue) => ({ field: name, msg: issue.message })));
    }
    return value;
  };
  const key = header(IDEMPOTENCY_KEY_HEADER);
  return {
    baseUrl,
    actor,
    redactSecrets,
    deadline,
    idempotencyKey: key,
    onReplay: () => {
      c.set("replayed", true);
      metrics?.replayed(op.id);
    },
  };
}

/** A path identifier's text, checked like every string of a request (a 400 names it). */
const PATH_TEXT = keptText();

/** The path's identifiers, each text the API keeps, in the identifier character set (else a 404). */
function pathParams(op: Operation, c: EdgeContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, name = ""] of op.path.matchAll(/\{(\w+)\}/g)) {
    const value = c.req.param(name) ?? "";
    const text = PATH_TEXT.safeParse(value);
    if (!text.success) throw ApiError.invalid(issuesToProblems(text.error.issues, [name]));
    if (!ID_PATTERN.test(value)) throw ApiError.notFound(`${name} "${value.slice(0, 80)}"`);
    out[name] = value;
  }
  return out;
}

/** The operations of the table served on `app`, each once; `assertComplete` says which are not. */
export class OperationRoutes {
  private readonly registered = new Set<string>();

  constructor(
    private readonly app: Hono<Env>,
    private readonly deps: {
      metrics: ServiceMetrics | undefined;
      cache: ResponseCache;
      /** Told of each change the store took: a write's outcome tells readiness whether storage takes writes. */
      readiness: Readiness;
      /** The request's deadline (see ./request-start), for each of its database waits. */
      deadline: (c: EdgeContext) => Deadline | undefined;
    },
  ) {}

  /** Whether the store can serve: the probes ask it, a failed write tells it. */
  get readiness(): Readiness {
    return this.deps.readiness;
  }

  /** For the metrics: marks a request as one of `op` (see `observe`); undefined when metrics are off. */
  private counter(op: Operation): ((c: EdgeContext) => void) | undefined {
    const metrics = this.deps.metrics;
    if (!metrics) return undefined;
    const counts = metrics.countsOf(op.id);
    return (c) => {
      COUNTS.set(c.req.raw, counts);
    };
  }

  /** Tells the log, the metrics and the key check which operation of the table `c` asks for. */
  tag(op: Operation): MiddlewareHandler<Env> {
    const count = this.counter(op);
    return (c, next) => {
      c.set("operation", op);
      count?.(c);
      return next();
    };
  }

  /**
   * Serves `op`: its body read first (POST/PUT/PATCH), its query checked (an unknown parameter
   * is a 400: a typo must not serve page 1 again), its path identifiers checked; a GET's answer
   * reused while the data is unchanged (errors are never kept), a 204 without a body.
   */
  serve<O extends Operation>(op: O, handler: (call: Call<O>) => unknown): void {
    this.registered.add(op.id);
    const { metrics, cache, readiness, deadline } = this.deps;
    const count = this.counter(op);
    const answer = async (c: EdgeContext) => {
      count?.(c);
      // The operation's own query schema: its parse is QueryOf<O>.
      const parsed = query(c, op.query ?? noQuerySchema) as QueryOf<O>;
      const page: PageQuery = op.query ? parsed : {};
      const within = deadline(c);
      const call = async () =>
        handler({
          params: pathParams(op, c),
          body: c.get("body"),
          page,
          query: parsed,
          ctx: requestContext(op, c, metrics, within),
        });
      if (op.method === "GET") {
        // A read key's answers are other bodies (secrets redacted): cached apart.
        const key = c.get("keyScope") === "read" ? `${c.req.url} redacted` : c.req.url;
        return respond(c, 200, await cache.json(key, call, within));
      }
      const result = await call();
      readiness.writeSucceeded();
      return op.success.status === 204
        ? respond(c, 204, null)
        : respond(c, op.success.status, JSON.stringify(result));
    };
    const path = honoPath(op.path);
    if (!op.body) this.app.on(op.method, path, answer);
    else {
      const body = op.body.emptyIsObject ? jsonBodyOrEmpty(() => ({})) : jsonBody;
      // Tagged before the body is read, so that a 413 or 415 is counted under its operation.
      if (metrics) this.app.on(op.method, path, this.tag(op), body, answer);
      else this.app.on(op.method, path, body, answer);
    }
  }

  /** Serves `op` with an answer made for each request, never a cached one: probes and metrics. */
  serveLive(op: Operation, answer: (c: EdgeContext) => Response | Promise<Response>): void {
    this.registered.add(op.id);
    const count = this.counter(op);
    this.app.on(op.method, honoPath(op.path), (c) => {
      count?.(c);
      query(c, noQuerySchema);
      return answer(c);
    });
  }

  /** Throws naming every operation of the table not served: the app would answer it 404. */
  assertComplete(): void {
    const missing = ALL_OPERATIONS.filter((op) => !this.registered.has(op.id)).map((op) => op.id);
    if (missing.length > 0) throw new Error(`the service does not serve ${missing.join(", ")}`);
  }
}
