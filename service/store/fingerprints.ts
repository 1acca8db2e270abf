/**
 * What an object made by a keyed create keeps of that create's request (`create_request`): enough
 * to tell a repeat of the request (answered with the object) from another request under the same
 * `Idempotency-Key` (refused), and nothing that answers a guess of the request.
 *
 * The request holds the secrets of its body in plaintext (a webhook secret, a client secret), and
 * the value is kept for the object's life. An unkeyed digest of it, as earlier versions kept
 * (SHA-256, base64), lets anyone with a copy of the database test guesses offline: the SHA-256 of
 * `POST /edges/https/<edge>/routes ` + a guessed body either matches or not. So the value is an
 * HMAC-SHA256 under a random key of the store's, and a copy of the database without that key
 * answers no guess:
 * - one key per store, 32 random bytes in its meta table (`create_fingerprint_key`), made by the
 *   first process to open the store (under the migration's lock: every PostgreSQL replica reads
 *   the one the first made), never changed: a fingerprint cannot be made again without its request;
 * - sealed under the store's secrets key like any secret (see Secrets.metaKey; `secrets rotate`
 *   re-seals it with the others), and kept in plaintext only in a store that seals nothing, where
 *   the secrets themselves lie in plaintext beside it (the oracle would add nothing);
 * - not derived from the secrets key: that changes at every rotation, and every keyed create would
 *   be forgotten with it;
 * - of the request's SHA-256, not of the request: the upgrade turns an earlier version's digest
 *   into this form without the request, which nobody kept (SHA-256 resists second preimages, so
 *   nothing is lost by hashing first);
 * - a salt per row would not do: stored beside the digest, it still lets a guess be tested.
 * `edge-service migrate` (and any dump and load) carries the key, so copied objects still answer
 * their creates' repeats.
 */
import { createHash, createHmac } from "node:crypto";

/** The meta row holding the key (see Secrets.metaKey for how it is stored). */
export const FINGERPRINT_KEY = "create_fingerprint_key";

/** What starts a keyed fingerprint; an earlier version's digest (base64) never does. */
export const FINGERPRINT_PREFIX = "hmac:v1:";

/** Fingerprints under one store's key. */
export class CreateFingerprints {
  constructor(private readonly key: Buffer) {}

  /** The fingerprint of a create's request (method, path, body as sent). */
  of(request: string): string {
    return this.ofDigest(createHash("sha256").update(request).digest());
  }

  /**
   * A stored value in this form: an earlier version's (the request's SHA-256, base64) keyed,
   * one already keyed as it is.
   */
  upgraded(stored: string): string {
    return stored.startsWith(FINGERPRINT_PREFIX) ? stored : this.ofDigest(Buffer.from(stored, "base64"));
  }

  private ofDigest(sha256: Buffer): string {
    return FINGERPRINT_PREFIX + createHmac("sha256", this.key).update(sha256).digest("base64url");
  }
}

/** `fingerprints.of(request)`, for a store that may have been opened without its key. */
export function fingerprintWith(fingerprints: CreateFingerprints | undefined, request: string): string {
  if (fingerprints === undefined) {
    throw new Error(
      "this store was opened without its create fingerprint key (by edge-service keys), so it makes no keyed create: please report this",
    );
  }
  return fingerprints.of(request);
}

/**
 * The upgrade of `where` must key its keyed creates' digests, and this process cannot open or
 * make the key (edge-service keys holds no secrets key).
 */
export const keyNeededToUpgrade = (where: string): Error =>
  new Error(
    `upgrading ${where} rewrites its keyed creates' request digests under a key sealed with the store's secrets key, which edge-service keys is not given: start edge-service serve on it with its secrets key once (or run edge-service secrets rotate), then run this again`,
  );
