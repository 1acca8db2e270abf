import type { MiddlewareHandler } from "hono";
import { type Env, operationId } from "../context";

/** One line per request: method, path, status, time, operation id (never bodies or keys). */
export function requestLog(log: (line: string) => void): MiddlewareHandler<Env> {
  return async (c, next) => {
    const id = operationId(c);
    const started = performance.now();
    await next();
    log(
      `${c.req.method} ${new URL(c.req.url).pathname} ${c.res.status} ${(performance.now() - started).toFixed(1)}ms ${id}`,
    );
  };
}
