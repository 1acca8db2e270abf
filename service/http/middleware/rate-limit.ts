import type { MiddlewareHandler } from "hono";
import type { Env } from "../context";
import { ApiError } from "../../errors";

/**
 * Fixed one-minute windows per API key (docs/decisions.md#operations-beyond-the-contract: 429 with
 * `Retry-After`). The window is keyed on the name of the key the auth middleware verified, never on
 * the raw header (rewriting the header must not open a new window); without keys the header proves
 * nothing, so every caller shares one.
 */
export function rateLimit(perMinute: number): MiddlewareHandler<Env> {
  const windows = new Map<string, { start: number; count: number }>();
  return async (c, next) => {
    const now = Date.now();
    const start = now - (now % 60_000);
    const key = c.get("keyName") ?? "anonymous";
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
        { headers: { "Retry-After": String(retryAfter) } },
      );
    }
    await next();
  };
}
