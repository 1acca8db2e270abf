/**
 * The rows of both stores, decoded and encoded in one place: what a database hands back (columns
 * as plain values, JSON columns as text) → typed rows, and typed values → the columns written.
 * SQLite and PostgreSQL differ in their statements, not in their rows.
 *
 * Secrets are sealed and opened here too (see ./secrets), with the `Secrets` of the store: the
 * secret fields of a route's modules (the contract's ROUTE_SECRET_PATHS) and a route's SAML
 * private key. A sealed field of the modules JSON holds `{"sealed": "sealed:v1:…"}` in place of its string, so a
 * client's secret that happens to start with "sealed:" stays a plain string, never mistaken for a
 * sealed one; the private key column holds the sealed text itself (a PEM never starts so).
 */
import {
  type AuditEvent,
  auditEventSchema,
  canonicalHostport,
  isRouteModuleName,
  MATCH_TYPES,
  mapPaths,
  readStored,
  ROUTE_MODULES,
  ROUTE_SECRET_PATHS,
  SCOPES,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";
import { type Secrets, sealedKeyId } from "../secrets";
import {
  auditEventId,
  type ApiKeyRow,
  CreatedObject,
  CreatedTable,
  DumpRow,
  EdgeKind,
  EdgeRow,
  LiveServer,
  RouteRow,
  StoredIpPolicy,
  StoredModules,
} from "./store";

/** A row as a database driver returns it: an object of columns, read only through `column`. */
export type Raw = object;

/** One column of a row, whatever the driver typed it as. */
const column = (raw: Raw, name: string): unknown => Reflect.get(raw, name);

class BrokenRow extends Error {
  constructor(column: string, want: string) {
    super(`the database holds a ${column} that is not ${want}: was it written by another program?`);
  }
}

/** A column the store wrote as text. */
function text(raw: Raw, name: string): string {
  const value = column(raw, name);
  if (typeof value !== "string") throw new BrokenRow(name, "text");
  return value;
}

/** A column the store wrote as an integer (SQLite's rowid, PostgreSQL's BIGSERIAL read as a number). */
function int(raw: Raw, name: string): number {
  const value = column(raw, name);
  if (typeof value !== "number" || !Number.isInteger(value)) throw new BrokenRow(name, "an integer");
  return value;
}

/**
 * A JSON column. Only the service writes these, from values the contract parsed, so what comes
 * back is what went in: one trusted decode, here and nowhere else.
 */
function json<T>(raw: Raw, column: string): T {
  return JSON.parse(text(raw, column)) as T;
}

/** A row a driver typed as unknown (libsql does): an object of columns, or a broken database. */
export function rawRow(row: unknown): Raw {
  if (typeof row !== "object" || row === null) throw new BrokenRow("row", "an object of columns");
  return row;
}

const EDGE_KINDS: readonly EdgeKind[] = ["https", "tls"];
const TABLES: readonly CreatedTable[] = ["edges", "routes", "tls_ip_restrictions"];
const oneOf = <T extends string>(values: readonly T[], raw: Raw, column: string): T => {
  const value = text(raw, column);
  const known = values.find((v) => v === value);
  if (known === undefined) throw new BrokenRow(column, values.join(" or "));
  return known;
};

export function edgeRow(raw: Raw): EdgeRow {
  return {
    seq: int(raw, "seq"),
    id: text(raw, "id"),
    kind: oneOf(EDGE_KINDS, raw, "kind"),
    description: text(raw, "description"),
    metadata: text(raw, "metadata"),
    // In their one spelling: rows written before hostports were taken so are answered so too.
    hostports: json<string[]>(raw, "hostports").map(canonicalHostport),
    created_at: text(raw, "created_at"),
  };
}

export function routeRow(raw: Raw, secrets: Secrets): RouteRow {
  const id = text(raw, "id");
  return {
    seq: int(raw, "seq"),
    id: text(raw, "id"),
    edge_id: text(raw, "edge_id"),
    match_type: oneOf(MATCH_TYPES, raw, "match_type"),
    match: text(raw, "match"),
    description: text(raw, "description"),
    metadata: text(raw, "metadata"),
    created_at: text(raw, "created_at"),
    modules: openModules(text(raw, "modules"), secrets, id),
  };
}

/** A sealed field of the modules JSON: `{"sealed": "sealed:v1:…"}`. */
const SEALED_KEY = "sealed";
const SEALED_MARK = `{"${SEALED_KEY}":"sealed:`;

/** Every secret field of a route's modules mapped by `f` (`where` names it in errors). */
const mapSecrets = (
  modules: unknown,
  routeId: string,
  f: (leaf: unknown, where: string) => unknown,
): unknown =>
  mapPaths(modules, ROUTE_SECRET_PATHS, (leaf, at) => f(leaf, `route ${routeId}: modules.${at.join(".")}`));

/** The plaintext of a stored secret field: a string as it is, a sealed one opened. */
function openField(secrets: Secrets, leaf: unknown, where: string): unknown {
  if (typeof leaf !== "object" || leaf === null) return leaf;
  const sealed: unknown = Reflect.get(leaf, SEALED_KEY);
  if (typeof sealed !== "string") throw new BrokenRow(where, "a string or a sealed value");
  return secrets.open(sealed, where);
}

/** A secret field as stored: sealed when there is a key and a secret (an empty one is none). */
function sealField(secrets: Secrets, leaf: unknown): unknown {
  if (typeof leaf !== "string" || leaf === "" || secrets.key === undefined) return leaf;
  return { [SEALED_KEY]: secrets.seal(leaf) };
}

/**
 * A stored module configuration read through this version's contract: a row written before a
 * defaulted field existed gets its default, so old rows answer the same total shape as new ones.
 * What the contract now refuses is reported, never answered half-parsed.
 */
function canonicalModule(name: string, config: unknown, where: string): unknown {
  if (!isRouteModuleName(name)) throw new BrokenRow(where, "a route module this version knows");
  const parsed = readStored(() => ROUTE_MODULES[name].request.safeParse(config));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const at = [where, ...(issue?.path ?? []).map(String)].join(".");
  throw new StaleRow(at, issue?.message ?? "is refused by the contract");
}

/** A stored value this version's contract refuses (a rule tightened since it was written). */
class StaleRow extends Error {
  constructor(at: string, message: string) {
    super(
      `the database holds ${at} that ${message}: it was stored under an earlier rule; fix it with a PUT of that module (or restore the version that wrote it)`,
    );
  }
}

/** A route's modules column read: its sealed fields opened, each module in its canonical form. */
function openModules(stored: string, secrets: Secrets, routeId: string): StoredModules {
  const parsed: unknown = JSON.parse(stored);
  // Most rows hold nothing sealed: only those are walked for secrets.
  const opened = stored.includes(SEALED_MARK)
    ? mapSecrets(parsed, routeId, (leaf, where) => openField(secrets, leaf, where))
    : parsed;
  if (typeof opened !== "object" || opened === null || Array.isArray(opened)) {
    throw new BrokenRow(`route ${routeId}: modules`, "an object of modules");
  }
  const out: Record<string, unknown> = {};
  for (const [name, config] of Object.entries(opened)) {
    out[name] = canonicalModule(name, config, `route ${routeId}: modules.${name}`);
  }
  return out;
}

/** Whether a route's modules may hold a secret: one of them is a module that has secret fields. */
export const mayHoldSecrets = (modules: StoredModules): boolean =>
  ROUTE_SECRET_PATHS.some(([module]) => modules[module] !== undefined);

/** A route's modules as the column stores them: JSON, its secret fields sealed. */
export function encodeModules(modules: StoredModules, secrets: Secrets, routeId: string): string {
  if (secrets.key === undefined) return JSON.stringify(modules);
  return JSON.stringify(mapSecrets(modules, routeId, (leaf) => sealField(secrets, leaf)));
}

/** A route's SAML private key as stored: sealed when there is a key. */
export const encodeSamlPrivateKey = (privateKeyPem: string, secrets: Secrets): string =>
  secrets.seal(privateKeyPem);

/**
 * A row of `id, modules` from routes, re-sealed: every secret opened with `from` (a value it does
 * not open is an error) and sealed with `to`. The new column, and how many secrets it holds.
 */
export function resealRouteModules(
  raw: Raw,
  from: Secrets,
  to: Secrets,
): [routeId: string, modules: string, secrets: number] {
  const id = text(raw, "id");
  let count = 0;
  const opened = mapSecrets(JSON.parse(text(raw, "modules")), id, (leaf, where) => {
    const plain = openField(from, leaf, where);
    if (typeof plain === "string" && plain !== "") count++;
    return plain;
  }) as StoredModules;
  return [id, encodeModules(opened, to, id), count];
}

/** A LIKE pattern of the modules columns that may hold a sealed field (the others hold none). */
export const SEALED_MODULES_LIKE = `%${SEALED_MARK}%`;

/** Adds to `into` the key ids the sealed secrets of a row of `id, modules` (routes) name. */
export function routeSealedKeyIds(raw: Raw, into: Set<string>): void {
  mapSecrets(JSON.parse(text(raw, "modules")), text(raw, "id"), (leaf) => {
    const sealed: unknown =
      typeof leaf === "object" && leaf !== null ? Reflect.get(leaf, SEALED_KEY) : undefined;
    const kid = typeof sealed === "string" ? sealedKeyId(sealed) : undefined;
    if (kid !== undefined) into.add(kid);
    return leaf;
  });
}

/** A row of `route_id, private_key_pem` from route_saml_keys, re-sealed from `from` to `to`. */
export function resealSamlKey(raw: Raw, from: Secrets, to: Secrets): [routeId: string, privateKey: string] {
  const routeId = text(raw, "route_id");
  const plain = from.open(text(raw, "private_key_pem"), `route ${routeId}: SAML private key`);
  return [routeId, encodeSamlPrivateKey(plain, to)];
}

/** A TLS edge's IP restriction, read through the contract like a route's modules (its defaults filled). */
function ipPolicyOf(raw: Raw): StoredIpPolicy {
  const parsed = readStored(() => tlsIpRestrictionMutateSchema.safeParse(json<unknown>(raw, "config")));
  if (parsed.success) return parsed.data;
  throw new StaleRow("a TLS IP restriction", parsed.error.issues[0]?.message ?? "is refused by the contract");
}

/** A row of `edge_id, config` from tls_ip_restrictions. */
export const tlsRestrictionRow = (raw: Raw): [edgeId: string, config: StoredIpPolicy] => [
  text(raw, "edge_id"),
  ipPolicyOf(raw),
];

/** A row of `route_id, certificate_pem` from route_saml_keys. */
export const samlCertificateRow = (raw: Raw): [routeId: string, certificatePem: string] => [
  text(raw, "route_id"),
  text(raw, "certificate_pem"),
];

/** The `seq` an INSERT … RETURNING seq answered. */
export const seqOf = (raw: Raw | undefined): number => int(raw ?? {}, "seq");

/** The text value of a one-column row (`SELECT value FROM meta …`). */
export const textValue = (raw: Raw): string => text(raw, "value");

/** The row of FIND_CREATED (see the stores): which table, which object, the request's fingerprint. */
export function createdObject(raw: Raw): CreatedObject {
  const table = oneOf(TABLES, raw, "table");
  return {
    table,
    id: text(raw, "id"),
    request: text(raw, "request"),
    ...(column(raw, "edge_id") != null ? { edge_id: text(raw, "edge_id") } : {}),
    ...(column(raw, "kind") != null ? { kind: oneOf(EDGE_KINDS, raw, "kind") } : {}),
  };
}

/** Columns written as JSON text (a route's modules: encodeModules). */
export const encodeJson = (value: string[] | StoredIpPolicy): string => JSON.stringify(value);

/** A row of SQL.serversLive (see ./presence). */
export function liveServerRow(raw: Raw): LiveServer {
  return {
    host: text(raw, "host"),
    pid: int(raw, "pid"),
    url: text(raw, "url"),
    started_at: text(raw, "started_at"),
    key_ids: text(raw, "key_ids")
      .split(",")
      .filter((id) => id !== ""),
    age_ms: Math.max(0, int(raw, "age_ms")),
  };
}

/** A row of a data table as a dump carries it (see StoreDump): its columns as stored. */
export function dumpRow(raw: Raw): DumpRow {
  const out: DumpRow = {};
  for (const name of Object.keys(raw)) {
    const value = column(raw, name);
    if (value !== null && typeof value !== "string" && typeof value !== "number") {
      throw new BrokenRow(name, "text, an integer or null");
    }
    out[name] = value;
  }
  return out;
}

/** A row of the audit table → the event on the wire (checked against the contract: a broken row is an error). */
export function auditEventOf(raw: Raw): AuditEvent {
  const changes = column(raw, "changes");
  return auditEventSchema.parse({
    id: auditEventId(int(raw, "seq")),
    time: column(raw, "time"),
    operation: column(raw, "operation"),
    object_kind: column(raw, "object_kind"),
    object_id: column(raw, "object_id"),
    edge_id: column(raw, "edge_id") ?? null,
    key: column(raw, "key_name") ?? null,
    request_id: column(raw, "request_id") ?? null,
    changes: typeof changes === "string" ? (JSON.parse(changes) as unknown) : changes,
    truncated: Number(column(raw, "truncated")) === 1,
  });
}

/** A named API key's row (the same columns on both stores). */
export function apiKeyRow(raw: Raw): ApiKeyRow {
  const revoked = column(raw, "revoked_at");
  return {
    name: text(raw, "name"),
    scope: oneOf(SCOPES, raw, "scope"),
    hash: text(raw, "hash"),
    created_at: text(raw, "created_at"),
    revoked_at: revoked === null || revoked === undefined ? null : text(raw, "revoked_at"),
  };
}
