/**
 * Named API keys with a scope (`read`, `write`, `admin`; see the contract's SCOPES): made, listed
 * and revoked by `edge-service keys` on the store, checked by every replica's KeyRing. A key is
 * shown once, when it is made; the store keeps only its SHA-256 (a key is 256 random bits, so a
 * fast hash is as safe as a slow one and costs nothing per request). The key the service is
 * started with (`--api-key`, `EDGE_API_KEY`) is the `bootstrap` key, scope `admin`, never stored.
 */
import { createHash, randomBytes } from "node:crypto";
import { type Scope, SCOPES, UsageError } from "../sdk/contract";
import { auditRecord } from "./audit";
import { SQL } from "./store/statements";
import { type ApiKeyRow, type Store, UniqueViolation } from "./store/store";

/** The name logs give the key the service was started with (`--api-key`, `EDGE_API_KEY`). */
export const BOOTSTRAP_KEY_NAME = "bootstrap";

/** What a key looks like: a prefix secret scanners can match, then 32 random bytes in base64url. */
const KEY_PREFIX = "edge_";

/** A key's name: what logs print, what `keys revoke` takes. */
export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** How old the keys a replica checks against may be: a revocation is in force everywhere this long after it is stored (a new key at once). */
export const KEY_RING_MAX_AGE_MS = 500;

export const hashKey = (key: string): string => createHash("sha256").update(key).digest("hex");

/** A key a request may present: its name and scope. */
export interface KeyHolder {
  readonly name: string;
  readonly scope: Scope;
}

/** What a request's key turns out to be. */
export type KeyCheck =
  | { readonly kind: "valid"; readonly key: KeyHolder }
  | { readonly kind: "revoked"; readonly name: string }
  | { readonly kind: "unknown" };

/** The keys as read at one moment. */
interface Snapshot {
  /** When the read began: a change stored before then is in it. */
  readonly readAt: number;
  readonly byHash: ReadonlyMap<string, ApiKeyRow | KeyHolder>;
  /** Whether a request must present a key: there is a bootstrap key, or a named key was ever made. */
  readonly enforced: boolean;
}

/**
 * The keys a replica checks requests against: read from the store again when older than
 * KEY_RING_MAX_AGE_MS, on demand, so a key made or revoked on any replica (or by the CLI) is in
 * force for every request that arrives that long after it was stored, with no restart and nothing
 * read while requests keep coming faster than that.
 */
export class KeyRing {
  private snapshot?: Snapshot;
  private reading?: Promise<Snapshot>;
  /** The read to start when the one under way ends (see readSince). */
  private next?: Promise<Snapshot>;
  private readingSince = 0;
  private readonly bootstrapHash?: string;

  constructor(
    private readonly store: Store,
    bootstrapKey: string | undefined,
    private readonly maxAgeMs = KEY_RING_MAX_AGE_MS,
  ) {
    this.bootstrapHash = bootstrapKey === undefined ? undefined : hashKey(bootstrapKey);
  }

  /**
   * What `key` is (undefined: the service takes requests without a key: none was ever made). A
   * key the snapshot does not know is looked for again in a read begun after the request arrived,
   * so a key made a moment ago (by the CLI, on another replica) is valid at once; the requests
   * that wait share that read.
   */
  check(key: string | undefined): KeyCheck | undefined | Promise<KeyCheck | undefined> {
    const now = Date.now();
    const fresh = this.snapshot && now - this.snapshot.readAt <= this.maxAgeMs ? this.snapshot : undefined;
    if (!fresh) return this.readSince(now - this.maxAgeMs).then((s) => checkIn(s, key));
    const found = checkIn(fresh, key);
    if (found?.kind !== "unknown" || key === undefined || fresh.readAt >= now) return found;
    return this.readSince(now).then((s) => checkIn(s, key));
  }

  /**
   * A snapshot whose read began at `notBefore` or later. One read at a time: a request that
   * needs a later one than the read under way waits for the next, which starts when that one
   * ends and is shared by every request that arrived meanwhile (a flood of unknown keys costs
   * one read of the keys per round trip to the store, not one per request).
   */
  private readSince(notBefore: number): Promise<Snapshot> {
    if (this.reading && this.readingSince >= notBefore) return this.reading;
    if (!this.reading) return this.startRead();
    const settled = () => undefined;
    this.next ??= this.reading.then(settled, settled).then(() => {
      this.next = undefined;
      return this.startRead();
    });
    return this.next;
  }

  private startRead(): Promise<Snapshot> {
    const readAt = Date.now();
    const reading = apiKeysOf(this.store).then((rows) => {
      const byHash = new Map<string, ApiKeyRow | KeyHolder>(rows.map((r) => [r.hash, r]));
      if (this.bootstrapHash !== undefined) {
        byHash.set(this.bootstrapHash, { name: BOOTSTRAP_KEY_NAME, scope: "admin" });
      }
      const snapshot = { readAt, byHash, enforced: keysRequired(rows, this.bootstrapHash !== undefined) };
      if (!this.snapshot || this.snapshot.readAt < readAt) this.snapshot = snapshot;
      return snapshot;
    });
    this.reading = reading;
    this.readingSince = readAt;
    // A failed read (the database restarting) fails the requests waiting on it (503), not the next.
    const done = () => {
      if (this.reading === reading) this.reading = undefined;
    };
    reading.then(done, done);
    return reading;
  }
}

/**
 * Whether requests must present a key: there is a bootstrap key, or a named key was ever made.
 * Revoked keys count: revoking the last key must not open the service to anyone.
 */
export function keysRequired(rows: readonly ApiKeyRow[], bootstrap: boolean): boolean {
  return bootstrap || rows.length > 0;
}

function checkIn(s: Snapshot, key: string | undefined): KeyCheck | undefined {
  if (!s.enforced) return undefined;
  const found = key === undefined ? undefined : s.byHash.get(hashKey(key));
  if (found === undefined) return { kind: "unknown" };
  if ("revoked_at" in found && found.revoked_at !== null) return { kind: "revoked", name: found.name };
  return { kind: "valid", key: { name: found.name, scope: found.scope } };
}

/** Every named key of the store, revoked ones included, oldest first: the one read of them. */
export const apiKeysOf = (store: Store): Promise<ApiKeyRow[]> =>
  store.read((tx) => tx.query(SQL.apiKeys, []));

/**
 * A new key's name and scope, checked before anything is opened or written (a UsageError saying
 * what to give instead); the scope as the contract names it.
 */
export function checkNewKey(name: string, scope: string): Scope {
  if (!KEY_NAME_PATTERN.test(name)) {
    throw new UsageError(
      `a key name is 1 to 63 letters, digits, ".", "_" or "-", starting with a letter or digit; got "${name.slice(0, 80)}"`,
    );
  }
  if (name === BOOTSTRAP_KEY_NAME) {
    throw new UsageError(
      `"${BOOTSTRAP_KEY_NAME}" names the key the service is started with; choose another name`,
    );
  }
  const known = SCOPES.find((s) => s === scope);
  if (known === undefined) throw new UsageError(`--scope must be ${SCOPES.join(", ")}; got "${scope}"`);
  return known;
}

/** Makes a key named `name` with `scope`; returns the key, which is never shown again. */
export async function createKey(store: Store, name: string, scope: string): Promise<string> {
  const known = checkNewKey(name, scope);
  const key = KEY_PREFIX + randomBytes(32).toString("base64url");
  try {
    // Its audit event names the key and its scope, never the key or its hash.
    const event = auditRecord("create_api_key", { kind: "api_key", id: name }, undefined, {
      name: { after: name },
      scope: { after: known },
    });
    // One transaction: the key and its event are stored together or not at all; a name or hash
    // already stored (revoked keys included) is a UniqueViolation.
    await store.write(async (tx) => {
      await tx.run(SQL.apiKeyInsert, [name, known, hashKey(key), new Date().toISOString(), null]);
      await tx.insertAuditEvent(event);
    });
  } catch (e) {
    if (e instanceof UniqueViolation) {
      throw new UsageError(
        `a key named "${name}" exists already (revoked keys keep their names, so logs stay unambiguous); choose another name`,
      );
    }
    throw e;
  }
  return key;
}

/** Revokes the key named `name`: refused, from `KEY_RING_MAX_AGE_MS` on, by every replica. */
export async function revokeKey(store: Store, name: string): Promise<void> {
  const at = new Date().toISOString();
  const event = auditRecord("revoke_api_key", { kind: "api_key", id: name }, undefined, {
    revoked_at: { before: null, after: at },
  });
  const revoked = await store.write(async (tx) => {
    if ((await tx.run(SQL.apiKeyRevoke, [at, name])) === 0) return false;
    await tx.insertAuditEvent(event);
    return true;
  });
  if (revoked) return;
  const row = (await apiKeysOf(store)).find((r) => r.name === name);
  throw new UsageError(
    row
      ? `the key "${name}" was revoked already, at ${row.revoked_at}`
      : `no key is named "${name}": \`edge-service keys list\` shows the names`,
  );
}
