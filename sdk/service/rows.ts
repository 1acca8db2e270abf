/**
 * The rows of both stores, decoded and encoded in one place: what a database hands back (columns
 * as plain values, JSON columns as text) → typed rows, and typed values → the columns written.
 * SQLite and PostgreSQL differ in their statements, not in their rows.
 */
import {
  MATCH_TYPES as MATCH_TYPE_LIST,
  type MatchType,
  type ModuleRequest,
  type RouteModuleName,
  type TlsIpRestrictionMutate,
} from "../contract";
import type { CreatedObject, CreatedTable, EdgeKind, EdgeRow, RouteRow } from "./store";

/** A row as a database driver returns it. */
export type Raw = Readonly<Record<string, unknown>>;

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
function text(raw: Raw, column: string): string {
  const value = raw[column];
  if (typeof value !== "string") throw new BrokenRow(column, "text");
  return value;
}

/** A column the store wrote as an integer (SQLite's rowid, PostgreSQL's BIGSERIAL read as a number). */
function int(raw: Raw, column: string): number {
  const value = raw[column];
  if (typeof value !== "number" || !Number.isInteger(value)) throw new BrokenRow(column, "an integer");
  return value;
}

/**
 * A JSON column. Only the service writes these, from values the contract parsed, so what comes
 * back is what went in: one trusted decode, here and nowhere else.
 */
function json<T>(raw: Raw, column: string): T {
  return JSON.parse(text(raw, column)) as T;
}

const EDGE_KINDS: ReadonlySet<string> = new Set(["https", "tls"]);
const MATCH_TYPES: ReadonlySet<string> = new Set(MATCH_TYPE_LIST);
const TABLES: ReadonlySet<string> = new Set(["edges", "routes", "tls_ip_restrictions"]);
const oneOf = <T extends string>(set: ReadonlySet<string>, raw: Raw, column: string): T => {
  const value = text(raw, column);
  if (!set.has(value)) throw new BrokenRow(column, [...set].join(" or "));
  return value as T;
};

export function edgeRow(raw: Raw): EdgeRow {
  return {
    seq: int(raw, "seq"),
    id: text(raw, "id"),
    kind: oneOf<EdgeKind>(EDGE_KINDS, raw, "kind"),
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
    match_type: oneOf<MatchType>(MATCH_TYPES, raw, "match_type"),
    match: text(raw, "match"),
    description: text(raw, "description"),
    metadata: text(raw, "metadata"),
    created_at: text(raw, "created_at"),
    modules: json<StoredModules>(raw, "modules"),
  };
}

export const ipPolicyOf = (raw: Raw): StoredIpPolicy => json<StoredIpPolicy>(raw, "config");

/** The row of FIND_CREATED (see the stores): which table, which object, the request's digest. */
export function createdObject(raw: Raw): CreatedObject {
  const table = oneOf<CreatedTable>(TABLES, raw, "table");
  return {
    table,
    id: text(raw, "id"),
    request: text(raw, "request"),
    ...(raw.edge_id != null ? { edge_id: text(raw, "edge_id") } : {}),
    ...(raw.kind != null ? { kind: oneOf<EdgeKind>(EDGE_KINDS, raw, "kind") } : {}),
  };
}

/** Columns written as JSON text. */
export const encodeJson = (value: string[] | StoredModules | StoredIpPolicy): string => JSON.stringify(value);
