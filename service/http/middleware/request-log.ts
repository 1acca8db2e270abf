import type { MiddlewareHandler } from "hono";
import { CLIENT_CLOSED_REQUEST, clientGone, type Env, operationId } from "../context";
import type { ServiceLog } from "../log";

/**
 * One record per request: its id, operation, method, path, status, time and key name (see
 * ServiceLog). Never a body, a query, a header value or a key.
 */
export function requestLog(log: ServiceLog): MiddlewareHandler<Env> {
  return async (c, next) => {
    const requestId = operationId(c);
    const started = performance.now();
    await next();
    log.request({
      requestId,
      operation: c.get("operation")?.id,
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      // A client gone before its answer: 499, whatever the handler came to (see clientGone).
      status: clientGone(c.env) ? CLIENT_CLOSED_REQUEST : c.res.status,
      durationMs: performance.now() - started,
      keyName: c.get("keyName"),
    });
  };
}
