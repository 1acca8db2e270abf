/**
 * The rows of both stores, decoded and encoded in one place: what a database hands back (columns
 * as plain values, JSON columns as text) → typed rows, and typed values → the columns written.
 * SQLite and PostgreSQL differ in their statements, not in their rows.
 */
import {
  MATCH_TYPES,
  type ModuleRequest,
  type RouteModuleName,
  type TlsIpRestrictionMutate,
} from "../contract";
import type { CreatedObject, CreatedTable, EdgeKind, EdgeRow, RouteRow } from "./store";

/** A row as a database driver returns it: an object of columns, read only through `column`. */
export type Raw = object;

/** One column of a row, whatever the driver typed it as. */
const column = (raw: Raw, name: string): unknown => Reflect.get(raw, name);

/** A module configuration as a route stores it: the request shape, canonical (parsed by the contract). */
export type StoredModules = { [M in RouteModuleName]?: ModuleRequest<M> };

/** The configuration a TLS edge's IP restriction module stores: its request shape, canonical. */
export type StoredIpPolicy = Required<TlsIpRestrictionMutate>;

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
    hostports: json<string[]>(raw, "hostports"),
    created_at: text(raw, "created_at"),
  };
}

export function routeRow(raw: Raw): RouteRow {
  return {
    seq: int(raw, "seq"),
    id: text(raw, "id"),
    edge_id: text(raw, "edge_id"),
    match_type: oneOf(MATCH_TYPES, raw, "match_type"),
    match: text(raw, "match"),
    description: text(raw, "description"),
    metadata: text(raw, "metadata"),
    created_at: text(raw, "created_at"),
    modules: json<StoredModules>(raw, "modules"),
  };
}

const ipPolicyOf = (raw: Raw): StoredIpPolicy => json<StoredIpPolicy>(raw, "config");

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

/** The row of FIND_CREATED (see the stores): which table, which object, the request's digest. */
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

/** Columns written as JSON text. */
export const encodeJson = (value: string[] | StoredModules | StoredIpPolicy): string => JSON.stringify(value);
