/**
 * The storage boundary of the service: one asynchronous, typed interface, two implementations
 * chosen at start-up (see ./store-open): SQLite in a data directory (./store-sqlite, the embedded
 * default) and PostgreSQL (./store-postgres, for several replicas on one database).
 *
 * Every read and write of the service runs inside `Store.read` or `Store.write`, against the
 * transaction handle (`StoreTx`) it is given: a write is all stored or nothing; a read sees one
 * consistent snapshot.
 */

export type EdgeKind = "https" | "tls";
export interface EdgeRow {
  seq: number;
  id: string;
  kind: EdgeKind;
  description: string;
  metadata: string;
  hostports: string[];
  created_at: string;
}
/** Canonical request configuration of each configured module, by module name. */
export type ModuleConfigs = Record<string, unknown>;
export interface RouteRow {
  seq: number;
  id: string;
  edge_id: string;
  match_type: string;
  match: string;
  description: string;
  metadata: string;
  created_at: string;
  /** The configured modules (absent ones are not configured). */
  modules: ModuleConfigs;
}
/** What an update of a route may change. */
export type RouteChanges = Pick<RouteRow, "match_type" | "match" | "description" | "metadata" | "modules">;

/** What a create answered, remembered under its `Idempotency-Key`. */
export interface IdempotentAnswer {
  /** Digest of the request that created it. */
  request: string;
  /** The JSON answer. */
  response: string;
}

/** A write would duplicate a unique key (a route's match on its edge). */
export class UniqueViolation extends Error {}

/** A write refers to a row another transaction deleted meanwhile (a route's edge). */
export class ParentMissing extends Error {}

/**
 * The database cannot be reached right now (restarting, failing over, out of connections): the
 * request changed nothing it acknowledged and may be retried; the service answers 503.
 */
export class StoreUnavailable extends Error {}

/** The data tables, in an order that respects their references (parents first). */
export const DATA_TABLES = [
  "edges",
  "routes",
  "route_saml_keys",
  "tls_ip_restrictions",
  "idempotency_keys",
] as const;
export type DataTable = (typeof DATA_TABLES)[number];
/** Every row of every data table, columns as stored (JSON columns as text). */
export type StoreDump = Record<DataTable, Array<Record<string, string | number>>>;

/** The operations of one transaction. */
export interface StoreTx {
  insertEdge(e: Omit<EdgeRow, "seq">): Promise<void>;
  getEdge(kind: EdgeKind, id: string): Promise<EdgeRow | undefined>;
  /** A page of edges, newest first, strictly older than `beforeSeq` when given. */
  listEdges(kind: EdgeKind, limit: number, beforeSeq?: number): Promise<EdgeRow[]>;
  deleteEdge(kind: EdgeKind, id: string): Promise<boolean>;

  /** Inserts a route; returns its seq (greater than any stored: the newest sorts first). */
  insertRoute(r: Omit<RouteRow, "seq">): Promise<number>;
  /** In a write transaction, also locks the route until the transaction ends. */
  getRoute(edgeId: string, id: string): Promise<RouteRow | undefined>;
  listRoutes(edgeId: string, limit: number, beforeSeq?: number): Promise<RouteRow[]>;
  /** Writes a route's fields and its whole set of modules (one row). */
  updateRoute(id: string, c: RouteChanges): Promise<void>;
  deleteRoute(edgeId: string, id: string): Promise<boolean>;

  getSamlCertificates(routeIds: string[]): Promise<Map<string, string>>;
  /** Stores a route's signing key pair unless it has one. */
  putSamlKey(routeId: string, certificatePem: string, privateKeyPem: string): Promise<void>;

  getTlsRestrictions(edgeIds: string[]): Promise<Map<string, unknown>>;
  putTlsRestriction(edgeId: string, config: unknown): Promise<void>;
  deleteTlsRestriction(edgeId: string): Promise<boolean>;

  /**
   * Holds every other writer of `key` (in any process) off until this transaction ends, so that
   * of two creates with one `Idempotency-Key`, the second sees what the first remembered.
   */
  lockIdempotencyKey(key: string): Promise<void>;
  getIdempotent(key: string): Promise<IdempotentAnswer | undefined>;
  /** Remembers the answer to a create; forgets keys older than `forgetBefore` (ISO time). */
  putIdempotent(
    key: string,
    request: string,
    response: string,
    createdAt: string,
    forgetBefore: string,
  ): Promise<void>;
}

export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** Where the data is, for people: a database file, or a PostgreSQL URL without its password. */
  readonly location: string;
  /** Runs `fn` in one write transaction: all of it is stored, or nothing. */
  write<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** Runs `fn` against one consistent snapshot. */
  read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /**
   * A value that changes whenever committed data may have changed since it was last read, whoever
   * wrote (this process, another process, another replica); compared with `!==`. Read before a
   * render, it is never newer than the data rendered (see ResponseCache).
   */
  changeCounter(): number | string | Promise<number | string>;
  /** Every row of every data table: `edge-service migrate` copies it, tests compare it. */
  dump(): Promise<StoreDump>;
  /**
   * Writes a dump into an empty store in one transaction (`edge-service migrate`); refuses a
   * store that holds data.
   */
  load(dump: StoreDump): Promise<void>;
  close(): void | Promise<void>;
}
