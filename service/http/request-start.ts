/**
 * When the load balancer in front received a request, and so the request's deadline (see
 * Store.requestDeadline): `X-Request-Start: t=<milliseconds since the epoch>`, which
 * deploy/haproxy.cfg sets once per request (`t=%[date(0,ms)]`, replacing any the client sent).
 * HAProxy evaluates its `http-request` rules once, so every attempt it makes of a request, on
 * whichever replica, carries the same time: a replica that gets a request HAProxy repeats after
 * another's deadline sees how much of the client's wait is gone, and the request's database work
 * there takes only what is left (docs/operating.md, "A partition between the replicas and
 * PostgreSQL").
 *
 * The time is the balancer's clock, read against this host's: keep them synchronized (NTP). A
 * replica whose clock runs ahead of the balancer's by more than RETRY_GRACE_MS (0.8 s) gives its
 * requests less than the deadline (the 503's log line says so); one behind gives them the
 * deadline, no more.
 * Any other spelling of the header is not this one, and is ignored (the request then has the
 * store's deadline for each of its transactions, as without a balancer).
 */
import type { Deadline, Store } from "../store/store";
import type { EdgeContext } from "./context";

export const REQUEST_START_HEADER = "x-request-start";

/** `t=` and 13 digits: milliseconds (seconds or microseconds would read as another time). */
const REQUEST_START = /^t=(\d{13})$/;

/** The time a `X-Request-Start` value says, on performance.now()'s clock; undefined when it says none. */
export function balancerReceipt(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const m = REQUEST_START.exec(header.trim());
  if (m === null) return undefined;
  return performance.now() - (Date.now() - Number(m[1]));
}

/**
 * The deadline of the request `c` (undefined: none of its own), read once per request: the
 * auth's read of the keys, the answer cache's change counter and the operation's transactions
 * all end by it.
 */
export function requestDeadline(c: EdgeContext, store: Store): Deadline | undefined {
  let deadline = c.get("deadline");
  if (deadline === undefined) {
    const received = store.requestDeadline && balancerReceipt(c.req.header(REQUEST_START_HEADER));
    deadline = (received === undefined ? undefined : store.requestDeadline?.(received)) ?? null;
    c.set("deadline", deadline);
  }
  return deadline ?? undefined;
}
