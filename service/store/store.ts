/**
 * The storage boundary of the service: one asynchronous, typed interface, two implementations
 * chosen at start-up (see ./store-open): SQLite in a data directory (./store-sqlite, the embedded
 * default) and PostgreSQL (./store-postgres, for several replicas on one database).
 *
 * Every read and write of the service runs inside `Store.read` or `Store.write`, against the
 * transaction handle (`StoreTx`) it is given: a write is all stored or nothing; a read sees one
 * consistent snapshot.
 */

import type {
  AuditEvent,
  MatchType,
  ModuleRequest,
  RouteModuleName,
  Scope,
  TlsIpRestrictionMutate,
} from "../../sdk/contract";
import type { Secrets, SecretsKey } from "../secrets";

/** A module configuration as a route stores it: the request shape, canonical (parsed by the contract). */
export type StoredModules = { [M in RouteModuleName]?: ModuleRequest<M> };

/** The configuration a TLS edge's IP restriction module stores: its request shape, canonical. */
export type StoredIpPolicy = Required<TlsIpRestrictionMutate>;

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
export type ModuleConfigs = StoredModules;
export interface RouteRow {
  seq: number;
  id: string;
  edge_id: string;
  match_type: MatchType;
  match: string;
  description: string;
  metadata: string;
  created_at: string;
  /** The configured modules (absent ones are not configured). */
  modules: ModuleConfigs;
}
/** What an update of a route may change. */
export type RouteChanges = Pick<RouteRow, "match_type" | "match" | "description" | "metadata" | "modules">;

/**
 * The `Idempotency-Key` of the create that made an object, and the fingerprint of that create's request (./fingerprints):
 * kept on the object's own row, so it lives exactly as long as the object (deleting the object
 * forgets it) and a repeated create finds the object as it is now.
 */
export interface CreateMark {
  key: string;
  request: string;
}

/** The tables whose rows a keyed create makes. */
export type CreatedTable = "edges" | "routes" | "tls_ip_restrictions";

/** An object a keyed create made: its id (a TLS restriction's is its edge's) and the create's request fingerprint. */
export interface CreatedObject {
  table: CreatedTable;
  id: string;
  /** The route's edge (routes only). */
  edge_id?: string;
  /** The edge's kind (edges only). */
  kind?: EdgeKind;
  request: string;
}

/**
 * A named API key as stored (see ./api-keys): never the key itself, only its SHA-256. Revoked keys
 * stay, so that a name once used is never given to another key (logs name keys).
 */
export interface ApiKeyRow {
  name: string;
  scope: Scope;
  /** SHA-256 of the key, hex. */
  hash: string;
  created_at: string;
  /** When it was revoked; null while it is in force. */
  revoked_at: string | null;
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

/**
 * When database work must be over (performance.now()'s clock), and how to say which bound that
 * is ("the 5 s database deadline"): past it, the work is given up and its request answered 503.
 */
export interface Deadline {
  readonly at: number;
  readonly what: string;
}

/**
 * `shared` (a read that other requests wait on too: one query serves them all), waited for until
 * `deadline` at most; then StoreUnavailable, while the read goes on for those with more time.
 * Only a read may be left so: nothing a request waits on this way can commit after it gave up.
 */
export function waitWithin<T>(shared: Promise<T>, deadline: Deadline | undefined, what: string): Promise<T> {
  if (deadline === undefined) return shared;
  const passed = () =>
    new StoreUnavailable(
      `the database did not answer within ${deadline.what} (waiting for ${what}); nothing was changed: retry shortly`,
    );
  const left = deadline.at - performance.now();
  if (left <= 0) return Promise.reject(passed());
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    shared,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(passed()), left);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The PostgreSQL store's deadline in a server (`serve --database-deadline`): below HAProxy's
 * `timeout server` (deploy/haproxy.cfg), with room for its retries on other replicas; above the
 * time a replica's checks take to find a silent database (2 s), so that a request retried after
 * its deadline is answered at once by a replica that knows.
 */
export const DEFAULT_DATABASE_DEADLINE_MS = 5_000;

/** A server that recorded itself alive lately (see ./presence). */
export interface LiveServer {
  host: string;
  pid: number;
  /** Where it listens. */
  url: string;
  started_at: string;
  /** The ids of the secrets keys it was given (its ring). */
  key_ids: string[];
  /** Since it last said it was alive, by the database's clock. */
  age_ms: number;
}

/** How long past three of its beats a server still counts as alive (the database's clock). */
export const LIVE_SLACK_MS = 2000;

/** A live server, for people: where it runs, since when, with which keys, when it was last heard of. */
export const describeServer = (s: LiveServer): string =>
  `${s.host} pid ${s.pid} (${s.url}), started ${s.started_at}, secrets keys ${s.key_ids.join(", ") || "none"}, last heard of ${(s.age_ms / 1000).toFixed(1)} s ago`;

/**
 * Why a load refuses a target a server runs on: that server keeps what it read of the store at
 * its start (the create fingerprint key the load replaces, among others).
 */
export function serversOnTarget(live: readonly LiveServer[], store: Dialect): Error {
  const where = store === "postgres" ? "database" : "data directory";
  return new Error(
    `a server is running on the target ${where} (${live.map(describeServer).join("; ")}): stop it, load, then start the servers`,
  );
}

/** An audit event as a store writes it: the wire event without its id (the store numbers it). */
export type AuditRecord = Omit<AuditEvent, "id">;

/** What `GET /audit_events` asks the store for: filters, a page size, and where the page starts. */
export interface AuditFilter {
  objectId?: string;
  /** RFC 3339: events at or after it. */
  since?: string;
  key?: string;
  limit: number;
  /** Strictly older than this seq (the `before_id`'s). */
  beforeSeq?: number;
}

/** An event's id on the wire: its seq, which orders the trail (newest first), behind a prefix. */
export const auditEventId = (seq: number): string => `aud_${seq}`;
/** The seq of an event id, or undefined when it is not one. */
export function auditSeqOf(id: string): number | undefined {
  const m = /^aud_([1-9][0-9]{0,15})$/.exec(id);
  return m ? Number(m[1]) : undefined;
}

/**
 * The data tables, in an order that respects their references (parents first): what a dump
 * carries and a load writes (`edge-service migrate`). The audit trail is one of them, its seqs
 * (the events' ids) kept; its index by object (`audit_by_object`) is not: it is derived, and a
 * loaded store rebuilds it (see auditObjectIndex).
 */
export const DATA_TABLES = [
  "edges",
  "routes",
  "route_saml_keys",
  "tls_ip_restrictions",
  "api_keys",
  "audit_events",
] as const;
export type DataTable = (typeof DATA_TABLES)[number];
/**
 * Why a load refuses its target: one rule for every data table, the audit trail's included. A
 * load never merges: a database where a server ran or `edge-service keys` made a key holds that
 * key, or those changes' events, and copied seqs would collide with them.
 */
export function targetNotEmpty(table: DataTable, store: Dialect): Error {
  const empty =
    store === "postgres"
      ? "load into an empty database (a new one: createdb NAME), not one a server or `edge-service keys` already wrote to"
      : "load into an empty store (a new data directory)";
  return new Error(`the target already holds data (table ${table}); ${empty}`);
}

/**
 * Every row of every data table, columns as stored (JSON columns as text), and the key of the
 * keyed creates' fingerprints as its meta row holds it (see ./fingerprints; null when none was
 * made): without it, the copied objects would no longer know their creates' repeats.
 */
export type StoreDump = Record<DataTable, DumpRow[]> & {
  create_fingerprint_key: string | null;
};
/** A row as a dump carries it: each column as stored (text, an integer, or null). */
export type DumpRow = Record<string, string | number | null>;

/** The operations of one transaction. */
export type Dialect = "sqlite" | "postgres";

/** A parameter's value, as the service hands it to a statement (a list: see `anyOf` in ./statements). */
export type SqlValue = string | number | null | readonly string[];

/** One statement of ./statements, in both dialects, with the decoding of its rows. */
export interface Statement<Row = object> {
  /** PostgreSQL's name of the prepared statement (unique in the list). */
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
  /** The values as each driver takes them (the arguments as given when nothing needs converting). */
  readonly values: Record<Dialect, (args: readonly SqlValue[]) => unknown[]>;
  /** A row decoded (the store's secrets open a sealed one). */
  readonly row: (raw: object, secrets: Secrets) => Row;
  /**
   * An insert that answers its integer key: PostgreSQL's text ends `RETURNING <column>`, SQLite
   * reads the insert's rowid (which that column is) instead of a RETURNING row (~10 µs cheaper).
   */
  readonly returning?: string;
}

/** How a write stands in its transaction. */
export interface WriteEnd {
  /**
   * Nothing follows this write in its transaction: no statement, and nothing that can fail (the
   * answer is rendered from what the request holds). A store may commit with it: PostgreSQL sends
   * the COMMIT with the write's statement, one round trip less; a statement after it is refused.
   */
  last: boolean;
}

export interface StoreTx {
  /** The rows of a statement of ./statements, decoded: what a new read needs of a store. */
  query<Row>(st: Statement<Row>, args: readonly SqlValue[]): Promise<Row[]>;
  /** Runs a statement of ./statements; the number of rows it changed. */
  run(st: Statement<unknown>, args: readonly SqlValue[]): Promise<number>;

  /** Inserts an edge; `made` marks it as made by a keyed create. */
  insertEdge(e: Omit<EdgeRow, "seq">, made?: CreateMark): Promise<void>;
  getEdge(kind: EdgeKind, id: string): Promise<EdgeRow | undefined>;
  /** A page of edges, newest first, strictly older than `beforeSeq` when given. */
  listEdges(kind: EdgeKind, limit: number, beforeSeq?: number): Promise<EdgeRow[]>;
  deleteEdge(kind: EdgeKind, id: string): Promise<boolean>;

  /**
   * Inserts a route; returns its seq (greater than any stored: the newest sorts first). `made`
   * marks it as made by a keyed create; `event` is the change's audit event, written with it
   * (as insertAuditEvent would: one statement on PostgreSQL).
   */
  insertRoute(
    r: Omit<RouteRow, "seq">,
    made?: CreateMark,
    event?: AuditRecord,
    end?: WriteEnd,
  ): Promise<number>;
  /** In a write transaction, also locks the route until the transaction ends. */
  getRoute(edgeId: string, id: string): Promise<RouteRow | undefined>;
  listRoutes(edgeId: string, limit: number, beforeSeq?: number): Promise<RouteRow[]>;
  /** Writes a route's fields and its whole set of modules (one row), and `event` with them (see insertRoute). */
  updateRoute(id: string, c: RouteChanges, event?: AuditRecord, end?: WriteEnd): Promise<void>;
  deleteRoute(edgeId: string, id: string): Promise<boolean>;

  getSamlCertificates(routeIds: string[]): Promise<Map<string, string>>;
  /** Stores a route's signing key pair unless it has one. */
  putSamlKey(routeId: string, certificatePem: string, privateKeyPem: string): Promise<void>;

  getTlsRestrictions(edgeIds: string[]): Promise<Map<string, StoredIpPolicy>>;
  /** Sets the module; `made` marks a module that did not exist as made by a keyed create. */
  putTlsRestriction(edgeId: string, config: StoredIpPolicy, made?: CreateMark): Promise<void>;
  deleteTlsRestriction(edgeId: string): Promise<boolean>;

  /**
   * Holds every other writer of `key` (in any process, on any replica) off until this transaction
   * ends, so that of two creates with one `Idempotency-Key`, the second sees what the first made.
   */
  lockCreateKey(key: string): Promise<void>;
  /** The object that a create with `key` made (keys are unique across tables), while it exists. */
  findCreated(key: string): Promise<CreatedObject | undefined>;

  /**
   * Writes the audit event of this transaction's change (see ./audit): committed with it, or not
   * at all; `end` as for insertRoute.
   */
  insertAuditEvent(e: AuditRecord, end?: WriteEnd): Promise<void>;
  /** A page of the audit trail, newest first. */
  listAuditEvents(f: AuditFilter): Promise<AuditEvent[]>;
}

/** A connection pool's occupancy, as a metrics scrape reads it. */
export interface PoolStats {
  /** Connections checked out by a request. */
  inUse: number;
  /** Open connections waiting in the pool. */
  idle: number;
  /** Requests waiting for a connection (all are in use, none can be opened). */
  waiting: number;
  /** The most connections the pool opens. */
  max: number;
}

/** What `Store.resealSecrets` did. */
export interface Resealed {
  /** Secrets re-sealed (plaintext ones included). */
  secrets: number;
  /** The servers alive at the commit (see ./presence): which of them hold the new key. */
  servers: LiveServer[];
  /** What was done to erase the old values' bytes, and what is left, for the operator. */
  purge: string;
}

export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** Where the data is, for people: a database file, or a PostgreSQL URL without its password. */
  readonly location: string;
  /**
   * Runs `fn` in one write transaction: all of it is stored, or nothing. `within`: a request's
   * deadline (see requestDeadline), when it comes before the store's own.
   */
  write<T>(fn: (tx: StoreTx) => Promise<T>, within?: Deadline): Promise<T>;
  /** Runs `fn` against one consistent snapshot; `within` as for write. */
  read<T>(fn: (tx: StoreTx) => Promise<T>, within?: Deadline): Promise<T>;
  /**
   * The deadline of a request that a load balancer received at `receivedAt` (performance.now()'s
   * clock), the same on each replica the balancer tries it on: its database work there ends by
   * then, so that a client's wait, retries included, has a bound (PostgreSQL: the database
   * deadline and RETRY_GRACE_MS after `receivedAt`; see ./store-postgres). Absent, or undefined:
   * the store gives no request a deadline (SQLite's file answers or fails, it does not go silent).
   */
  requestDeadline?(receivedAt: number): Deadline | undefined;
  /**
   * What an object made by a keyed create keeps of the create's request (method, path, body as
   * sent): a fingerprint under the store's key (see ./fingerprints), which answers no guess.
   */
  createFingerprint(request: string): string;
  /**
   * A value that changes whenever committed data may have changed since it was last read, whoever
   * wrote (this process, another process, another replica); compared with `!==`. Read before a
   * render, it is never newer than the data rendered (see ResponseCache). `within` as for write.
   */
  changeCounter(within?: Deadline): number | string | Promise<number | string>;
  /**
   * Why the store cannot serve requests now, or undefined when it can: the database answers and
   * holds the schema version this code expects. Words for the operator's log: `GET /readyz` says
   * only "not ready".
   */
  whyNotReady(): Promise<string | undefined>;
  /**
   * How many signs that the database may be gone the store has met since it opened (a pooled
   * connection lost, an operation that could not reach it): readiness reuses a "ready" answer
   * only while this count stands still, so that the next probe after such a sign asks again.
   * Absent: the store meets none (SQLite's file does not go away under it that way).
   */
  unavailableSeen?(): number;
  /**
   * A small write that reaches the storage (a row of the store's own metadata): it fails as a
   * request's write would while the disk is full or the storage read-only. Readiness makes it
   * after such a failure, to see the fault is over.
   */
  probeWrite(): Promise<void>;
  /** The connection pool now (PostgreSQL; SQLite has one connection and no pool). */
  poolStats?(): PoolStats;
  /** Every row of every data table: `edge-service migrate` copies it, tests compare it. */
  dump(): Promise<StoreDump>;
  /**
   * Writes a dump into an empty store in one transaction (`edge-service migrate`); refuses a
   * store that holds data.
   */
  load(dump: StoreDump): Promise<void>;
  /**
   * Re-seals every stored secret under `to` in one transaction (`edge-service secrets rotate`),
   * writers held off meanwhile: each opened with the store's key ring (or `to`: a store left
   * mixed by a rotation under load is repaired), plaintext ones taken as they are; a value the
   * ring does not open aborts it all, changing nothing. Records `to` as the key every writer seals
   * under from then on, and as the only key in use. Then erases what the old values left behind
   * in the store's files (SQLite) or dead tuples (PostgreSQL), as far as the store can.
   * `check` is told the servers alive (./presence) inside that transaction, before anything is
   * re-sealed: what it throws aborts it all, changing nothing.
   */
  resealSecrets(to: SecretsKey, check?: (live: LiveServer[]) => void): Promise<Resealed>;
  /** Deletes up to `limit` of the oldest audit events older than `before` (RFC 3339); how many it deleted. */
  pruneAuditEvents(before: string, limit: number): Promise<number>;
  /** Adds up to `limit` events to the audit trail's index by object (see ./audit); how many it added. */
  indexAuditEvents(limit: number): Promise<number>;
  close(): void | Promise<void>;
}
