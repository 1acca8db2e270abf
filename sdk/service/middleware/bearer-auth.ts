import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Env } from "../context";
import { ApiError } from "../errors";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** The name logs give the key the service was started with (`--api-key`, `EDGE_API_KEY`). */
export const BOOTSTRAP_KEY_NAME = "bootstrap";

/**
 * Bearer key check (gaps.md "Authentication"). Both sides are hashed first so the comparison is
 * constant-time whatever the lengths. Hono's own bearer-auth middleware answers with its own
 * body shape; ours answers in the API's error shape.
 */
export function bearerAuth(apiKey: string): MiddlewareHandler<Env> {
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
    c.set("keyName", BOOTSTRAP_KEY_NAME);
    await next();
  };
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, token trimmed). */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim();
}
