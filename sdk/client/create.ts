/**
 * How a client asks for a create made exactly once: the options a create takes, and the
 * `Idempotency-Key` an identity gives.
 */
import { createHash } from "node:crypto";

/** How a create is made exactly once (see the service's `Idempotency-Key`). */
export interface CreateOptions {
  /** The key, as is. */
  idempotencyKey?: string;
  /**
   * Who asks for this object, stably (a Pulumi resource: its stack and URN): the key is derived
   * from it and the request (method, path, body), so the same request from the same asker carries
   * the same key in every run, and a create whose answer was lost is answered by the object it
   * made, even by a later run.
   */
  identity?: string;
  /**
   * With `identity`: the part of the body that names the object (a route's match), when the key
   * should stay the same though the rest of the body changes; default the whole body. The
   * service still compares whole requests: the same key with another body is a 400 naming
   * `Idempotency-Key`, which tells the asker that its earlier create made that object.
   */
  keyedOn?: unknown;
}

/**
 * The `Idempotency-Key` of a request asked for by `identity`: the same for the same identity and
 * request, different for any other (a replacement with another body gets a new object).
 */
export function idempotencyKeyFor(identity: string, method: string, path: string, body: string): string {
  const digest = createHash("sha256").update([identity, method, path, body].join("\n")).digest("base64url");
  return `pe1.${digest}`;
}
