/**
 * Secrets at rest: the values a client configures as secrets (webhook secrets, OAuth and OIDC
 * client secrets) and the SAML signing keys the service makes are sealed with AES-256-GCM under a
 * key given to the service (`EDGE_SECRETS_KEY`, or `--secrets-key-file PATH`). The row codec
 * (./rows) calls `seal` and `open` on the way into and out of both stores.
 *
 * A sealed value is the text `sealed:v1:<kid>:<iv>:<ciphertext+tag>`:
 * - `kid`: the key id, the first 16 hex digits of SHA-256("edge-secrets-key:" + key), so that a
 *   value says which key sealed it (rotation, a wrong key, a mix of sealed and plaintext rows);
 * - `iv`: 12 random bytes, new for every value; `ciphertext+tag`: the UTF-8 value encrypted, then
 *   GCM's 16-byte tag; both base64url. The additional data is the text `sealed:v1:<kid>`.
 *
 * Without a key nothing is sealed: values are stored as they were before this existed, and
 * plaintext values (written before a key was given) are still read with one.
 *
 * Key rotation without a broken store: a service holds a key ring (several keys), opens a value
 * with the key its `kid` names, and seals under the key the store's meta names, not its own
 * choice; `secrets rotate` changes that key and re-seals every value in one transaction, so
 * replicas given both keys move together, and one lacking the new key answers 503 naming it.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { errorMessage } from "../sdk/contract/errors";

const PREFIX = "sealed:v1:";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Where keys come from, for messages. */
const KEY_SOURCES = "EDGE_SECRETS_KEY or --secrets-key-file";

/** The secrets key cannot open a stored value, or is missing, or does not match the data. */
export class SecretsKeyError extends Error {}

/** A 32-byte AES-256-GCM key and its id. */
export class SecretsKey {
  readonly id: string;
  private constructor(readonly bytes: Buffer) {
    this.id = createHash("sha256").update("edge-secrets-key:").update(bytes).digest("hex").slice(0, 16);
  }

  /**
   * A key as an operator writes it: base64 (or base64url) of 32 bytes, e.g. `openssl rand -base64
   * 32`; a key file may also hold the 32 bytes themselves. `source` names it in errors.
   */
  static parse(value: string | Buffer, source: string): SecretsKey {
    const raw = typeof value === "string" ? Buffer.from(value, "utf8") : value;
    const text = raw.toString("utf8").trim();
    if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
      const decoded = Buffer.from(text, "base64");
      if (decoded.length === KEY_BYTES) return new SecretsKey(decoded);
    }
    if (raw.length === KEY_BYTES) return new SecretsKey(Buffer.from(raw));
    throw new SecretsKeyError(
      `${source} must hold a key of 32 bytes, base64-encoded (make one with: openssl rand -base64 32)`,
    );
  }

  static fromFile(path: string, label = "--secrets-key-file"): SecretsKey {
    let content: Buffer;
    try {
      content = readFileSync(path);
    } catch (e) {
      throw new SecretsKeyError(`${label} ${path} cannot be read: ${errorMessage(e)}`);
    }
    return SecretsKey.parse(content, `${label} ${path}`);
  }
}

/**
 * The keys the service is given, its key ring: every `--secrets-key-file` (repeatable) when one is
 * passed, else `EDGE_SECRETS_KEY` (one key, or several separated by commas), else none (secrets
 * stored unsealed).
 */
export function secretsKeyFrom(
  files: string | readonly string[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): SecretsKey[] {
  const paths = files === undefined ? [] : typeof files === "string" ? [files] : files;
  if (paths.length > 0) return paths.map((f) => SecretsKey.fromFile(f));
  const value = env.EDGE_SECRETS_KEY;
  if (!value) return [];
  return value
    .split(",")
    .map((v) => v.trim())
    .filter((v) => v !== "")
    .map((v) => SecretsKey.parse(v, "EDGE_SECRETS_KEY"));
}

/** The line the service prints at start when it has no key. */
export const UNSEALED_WARNING = `warning: no secrets key (${KEY_SOURCES}): webhook secrets, OAuth/OIDC client secrets and SAML private keys are stored unsealed`;

/**
 * A stored value is sealed under a key this service was not given: a replica left on the old
 * keys while the store moved on (`secrets rotate`). Not the client's fault, and not a wrong
 * answer: the service answers 503 naming the key, and the operator gives it that key.
 */
export class MissingSecretsKey extends SecretsKeyError {
  constructor(
    readonly keyId: string,
    where: string,
    given: readonly SecretsKey[],
    /** Writing (a value to seal under the store's key), not reading one sealed under it. */
    sealing = false,
  ) {
    super(
      `${where} ${sealing ? "must be sealed under" : "is sealed with"} secrets key ${keyId}${sealing ? " (the key the store names)" : ""}, which this service was not given (it has ${describeRing(given)}): restart it with that key as well (--secrets-key-file, repeatable, or EDGE_SECRETS_KEY)`,
    );
  }
}

const describeRing = (keys: readonly SecretsKey[]): string =>
  keys.length === 0 ? "no key" : `key${keys.length > 1 ? "s" : ""} ${keys.map((k) => k.id).join(", ")}`;

/**
 * What a store's meta table says of its secrets: the key new values are sealed under
 * (`secrets_key_id`), and every key stored values may be sealed under (`secrets_key_ids`,
 * comma-separated; undefined when an earlier version wrote the store and it must be scanned).
 */
export interface StoredKeys {
  current?: string;
  inUse: readonly string[];
}

/**
 * Seals and opens stored secrets. It holds a key ring: a value is opened with the key its
 * envelope names (never a guess), and sealed under `key`. A store seals under the key its meta
 * table names (`sealingUnder`), so every replica given the ring seals under the same key, and
 * `secrets rotate` moves them all at once.
 */
export class Secrets {
  /** Every key given: each opens the values sealed under it. */
  readonly keys: readonly SecretsKey[];
  /** The key values are sealed under; none: stored unsealed. */
  readonly key?: SecretsKey;
  private readonly byId: Map<string, SecretsKey>;
  private readonly sealers = new Map<string, Secrets>();

  /** A ring of `keys` sealing under `sealWith` (default: the first key; none given: unsealed). */
  constructor(keys?: SecretsKey | readonly SecretsKey[], sealWith?: SecretsKey | null) {
    this.keys = keys === undefined ? [] : keys instanceof SecretsKey ? [keys] : [...keys];
    this.byId = new Map(this.keys.map((k) => [k.id, k]));
    this.key = sealWith === null ? undefined : (sealWith ?? this.keys[0]);
    if (this.key !== undefined && !this.byId.has(this.key.id)) this.byId.set(this.key.id, this.key);
  }

  /**
   * This ring sealing under the key a store names (`secrets_key_id`; none: the store is not
   * sealed, values stay as they are). A key the ring lacks is MissingSecretsKey: the value must not
   * be written under another key, nor in the clear.
   */
  sealingUnder(keyId: string | undefined, where: string): Secrets {
    const id = keyId ?? "";
    let found = this.sealers.get(id);
    if (found === undefined) {
      if (keyId === undefined) found = new Secrets(this.keys, null);
      else {
        const key = this.byId.get(keyId);
        if (key === undefined) throw new MissingSecretsKey(keyId, `the secrets of ${where}`, this.keys, true);
        found = new Secrets(this.keys, key);
      }
      this.sealers.set(id, found);
    }
    return found;
  }

  /** The value as stored: sealed under the key, or unchanged without one. */
  seal(value: string): string {
    if (this.key === undefined) return value;
    const iv = randomBytes(IV_BYTES);
    const header = `${PREFIX}${this.key.id}`;
    const cipher = createCipheriv("aes-256-gcm", this.key.bytes, iv);
    cipher.setAAD(Buffer.from(header, "utf8"));
    const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${header}:${iv.toString("base64url")}:${body.toString("base64url")}`;
  }

  /**
   * The value a stored one holds: a sealed value opened with the key its envelope names, a
   * plaintext one as it is. `where` names the value in errors.
   */
  open(stored: string, where: string): string {
    if (!isSealed(stored)) return stored;
    const [kid, iv, body] = stored.slice(PREFIX.length).split(":");
    if (kid === undefined || iv === undefined || body === undefined) {
      throw new SecretsKeyError(`${where} holds a sealed value that is not well-formed`);
    }
    const key = this.byId.get(kid);
    if (key === undefined) {
      if (this.keys.length === 0) {
        throw new SecretsKeyError(
          `${where} is sealed with secrets key ${kid}, and this service has no key: give it that key (${KEY_SOURCES})`,
        );
      }
      throw new MissingSecretsKey(kid, where, this.keys);
    }
    const bytes = Buffer.from(body, "base64url");
    try {
      const decipher = createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(`${PREFIX}${kid}`, "utf8"));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      throw new SecretsKeyError(
        `${where} does not open with secrets key ${kid} (the value was altered, or the key is not the one it was sealed with)`,
      );
    }
  }

  /**
   * What a store does at open with what its meta table says (`stored`; `inUse` `scanned` from
   * the rows when the meta did not say: a store of an earlier version): the meta to record (the first start with a key records its
   * first key), nothing, or an error when a key the values are sealed under is not in this ring
   * (refused at start rather than a failed request later), naming the keys and what to pass.
   */
  checkStoredKeys(
    stored: { current?: string; inUse: readonly string[]; scanned: boolean },
    where: string,
  ): StoredKeys | undefined {
    const inUse = new Set(stored.inUse);
    if (stored.current !== undefined) inUse.add(stored.current);
    const missing = [...inUse].filter((id) => !this.byId.has(id)).sort();
    if (missing.length > 0) {
      const them = `secrets key${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`;
      if (this.keys.length === 0) {
        throw new SecretsKeyError(
          `the secrets in ${where} are sealed with ${them}, and no key was given: give that key (${KEY_SOURCES}${missing.length > 1 ? "; --secrets-key-file is repeatable" : ""})`,
        );
      }
      throw new SecretsKeyError(
        `the secrets in ${where} are sealed with ${them}, not with the key given (${this.keys.map((k) => k.id).join(", ")}): give the key they were sealed with (--secrets-key-file, repeatable, or EDGE_SECRETS_KEY); to change keys, run \`edge-service secrets rotate --from-key-file OLD --to-key-file NEW\``,
      );
    }
    const current = stored.current ?? this.key?.id;
    if (current !== undefined) inUse.add(current);
    const ids = [...inUse].sort();
    const same = current === stored.current && sameIds(ids, stored.inUse) && !stored.scanned;
    return same ? undefined : { current, inUse: ids };
  }

  /**
   * Why a server with this ring cannot serve a store whose meta names `current` as the key new
   * values are sealed under and `inUse` (comma-separated) as the keys stored values are under,
   * or undefined when it holds them all: readiness says so, since every
   * request that seals or opens a secret would answer 503 (MissingSecretsKey).
   */
  whyCannotServe(current: string | undefined, inUse: string | undefined): string | undefined {
    const ids = new Set(parseKeyIds(inUse ?? ""));
    if (current !== undefined) ids.add(current);
    const missing = [...ids].filter((id) => !this.byId.has(id)).sort();
    if (missing.length === 0) return undefined;
    const them = `secrets key${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`;
    return `this server was not given ${them}, which the store's secrets are sealed under (secrets rotate moved them; it has ${describeRing(this.keys)}): requests that seal or open a secret answer 503; restart it with that key (--secrets-key-file, repeatable, or EDGE_SECRETS_KEY)`;
  }

  /**
   * A 32-byte key a store keeps in a meta row (the create fingerprints' key, ./fingerprints),
   * opened from `stored`, or made when there is none; with the text to store when it was just
   * made or is not sealed under the store's current key (`current`): sealed under it, or, in a
   * store that seals nothing (no `current`), the key's base64 as it is. Undefined: this ring
   * neither opens nor makes one (see the keys command's).
   */
  metaKey(stored: string | undefined, current: string | undefined, where: string): MetaKey | undefined {
    const bytes =
      stored === undefined ? randomBytes(KEY_BYTES) : Buffer.from(this.open(stored, where), "base64");
    if (bytes.length !== KEY_BYTES) {
      throw new SecretsKeyError(
        `${where} is not a key of ${KEY_BYTES} bytes: was it written by another program? (restore the store from a backup)`,
      );
    }
    if (stored !== undefined && sealedKeyId(stored) === current) return { bytes };
    const text = bytes.toString("base64");
    return { bytes, record: current === undefined ? text : this.sealingUnder(current, where).seal(text) };
  }
}

/** A key kept in a store's meta row (see Secrets.metaKey). */
export interface MetaKey {
  bytes: Buffer;
  /** The row's new text, when it must be written. */
  record?: string;
}

const sameIds = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && [...b].sort().every((id, i) => id === a[i]);

/** The key id a sealed value's envelope names, or undefined for a plaintext one. */
export function sealedKeyId(value: string): string | undefined {
  if (!isSealed(value)) return undefined;
  return value.slice(PREFIX.length).split(":")[0];
}

/** Whether a stored value is sealed (a plaintext SAML private key is a PEM: never this prefix). */
function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** The meta row holding the id of the key new values are sealed under. */
export const SECRETS_KEY_ID = "secrets_key_id";
/** The meta row listing (comma-separated) every key id stored values may be sealed under. */
export const SECRETS_KEY_IDS = "secrets_key_ids";

/** The meta row of SECRETS_KEY_IDS as a list (an empty text: nothing sealed). */
export const parseKeyIds = (text: string): string[] => text.split(",").filter((id) => id !== "");
