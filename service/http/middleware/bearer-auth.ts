import type { MiddlewareHandler } from "hono";
import { requiredScope, scopeCovers } from "../../../sdk/contract";
import type { KeyRing } from "../../api-keys";
import type { EdgeContext, Env } from "../context";
import { type Deadline, waitWithin } from "../../store/store";
import { ApiError } from "../../errors";

/**
 * Bearer key check (docs/decisions.md#authentication), then scope: a key whose scope does not cover
 * the operation (a `read` key asking for a change) is a 403, before the body is read or anything is
 * done. Hono's own bearer-auth middleware answers with its own body shape; ours answers in the
 * API's error shape. A request that matched no operation (a 404 or 405 to come) needs a valid key
 * of any scope.
 */
export function bearerAuth(
  keys: KeyRing,
  /**
   * The request's deadline (see ../request-start): a read of the keys, shared by the requests
   * that wait, is waited for until then at most.
   */
  deadline: (c: EdgeContext) => Deadline | undefined,
): MiddlewareHandler<Env> {
  return async (c, next) => {
    const token = bearerToken(c.req.header("authorization"));
    // Awaited only when the keys are being read again (at most every 500 ms): a GET answered from
    // the cache would otherwise pay a turn of the microtask queue for nothing.
    const checking = keys.check(token);
    const check =
      checking instanceof Promise
        ? await waitWithin(checking, deadline(c), "the API keys, read again for the requests")
        : checking;
    if (check === undefined) return next(); // no key was ever made: the service is open (loopback only)
    if (check.kind !== "valid") {
      throw new ApiError(
        "unauthorized",
        check.kind === "revoked"
          ? `the API key "${check.name}" was revoked: ask the service's operator for another (edge-service keys create)`
          : token !== undefined
            ? "the API key is not valid"
            : "missing API key: send 'Authorization: Bearer <api key>'",
        { headers: { "WWW-Authenticate": "Bearer" } },
      );
    }
    const { name, scope } = check.key;
    c.set("keyName", name);
    c.set("keyScope", scope);
    const op = c.get("operation");
    const needed = op && requiredScope(op);
    if (op && needed && !scopeCovers(scope, needed)) {
      throw new ApiError(
        "forbidden",
        `the API key "${name}" has scope ${scope}, and ${op.id} needs ${needed}: nothing was changed. Use a key with scope ${needed} (edge-service keys create NAME --scope ${needed})`,
        { headers: { "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${needed}"` } },
      );
    }
    await next();
  };
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, token trimmed). */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim();
}
