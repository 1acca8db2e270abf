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
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { errorMessage } from "../contract/errors";

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
 * The key the service is given: `--secrets-key-file` when passed, else `EDGE_SECRETS_KEY`, else
 * none (secrets stored unsealed).
 */
export function secretsKeyFrom(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): SecretsKey | undefined {
  if (file !== undefined) return SecretsKey.fromFile(file);
  const value = env.EDGE_SECRETS_KEY;
  return value ? SecretsKey.parse(value, "EDGE_SECRETS_KEY") : undefined;
}

/** The line the service prints at start when it has no key. */
export const UNSEALED_WARNING = `warning: no secrets key (${KEY_SOURCES}): webhook secrets, OAuth/OIDC client secrets and SAML private keys are stored unsealed`;

/** Seals and opens stored secrets with one key, or passes them through without one. */
export class Secrets {
  constructor(readonly key?: SecretsKey) {}

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
   * The value a stored one holds: a sealed value opened with the key (its key id must be this
   * key's), a plaintext one as it is. `where` names the value in errors.
   */
  open(stored: string, where: string): string {
    if (!isSealed(stored)) return stored;
    const [kid, iv, body] = stored.slice(PREFIX.length).split(":");
    if (kid === undefined || iv === undefined || body === undefined) {
      throw new SecretsKeyError(`${where} holds a sealed value that is not well-formed`);
    }
    if (this.key === undefined) {
      throw new SecretsKeyError(
        `${where} is sealed with secrets key ${kid}, and this service has no key: give it that key (${KEY_SOURCES})`,
      );
    }
    if (kid !== this.key.id) {
      throw new SecretsKeyError(
        `${where} is sealed with secrets key ${kid}, not with the key given (${this.key.id}): give the key it was sealed with (${KEY_SOURCES}), or re-seal with \`edge-service secrets rotate\``,
      );
    }
    const bytes = Buffer.from(body, "base64url");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key.bytes, Buffer.from(iv, "base64url"));
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
   * What a store does at open with the id of the key its data is sealed under (kept in its meta
   * table as `secrets_key_id`): the id to record (the first start with a key), nothing (the same
   * key, or no key and nothing sealed), or an error that says which key to give.
   */
  checkStoredKeyId(stored: string | undefined, where: string): string | undefined {
    if (this.key === undefined) {
      if (stored === undefined) return undefined;
      throw new SecretsKeyError(
        `the secrets in ${where} are sealed with secrets key ${stored}, and no key was given: give that key (${KEY_SOURCES})`,
      );
    }
    if (stored === undefined) return this.key.id;
    if (stored === this.key.id) return undefined;
    throw new SecretsKeyError(
      `the secrets in ${where} are sealed with secrets key ${stored}, not with the key given (${this.key.id}): give the key they were sealed with (${KEY_SOURCES}); to change keys, run \`edge-service secrets rotate --from-key-file OLD --to-key-file NEW\``,
    );
  }
}

/** Whether a stored value is sealed (a plaintext SAML private key is a PEM: never this prefix). */
function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** The meta row holding the id of the key the data is sealed under. */
export const SECRETS_KEY_ID = "secrets_key_id";
