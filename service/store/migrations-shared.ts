/**
 * The DDL both stores' migrations share, written once: each store's list of migrations
 * (MIGRATIONS in ./store-sqlite, PG_MIGRATIONS in ./store-postgres) holds these statements as
 * its own steps. A migration is never edited once released: a change is a new one.
 */

export type Dialect = "sqlite" | "postgres";

/** The meta key of the highest seq a SQLite store has numbered or pruned (see SQL.auditInsert). */
export const AUDIT_SEQ_FLOOR = "audit_seq_floor";

/** The store's own metadata (schema version, secrets keys, …): made before any migration runs. */
export const META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

/**
 * The column types of a store's first tables: the seq that orders a table's rows (newest last),
 * and the text a client chooses (BYTEA, its UTF-8 bytes, on PostgreSQL, whose TEXT refused
 * U+0000 before the API refused it too).
 */
export interface FirstColumns {
  readonly seq: string;
  readonly clientText: string;
}

/** The edges table of schema 1 (both stores), and its index by kind. */
const edgesTable = (c: FirstColumns): string => `CREATE TABLE edges (
     seq ${c.seq},
     id TEXT NOT NULL UNIQUE,
     kind TEXT NOT NULL CHECK (kind IN ('https', 'tls')),
     description ${c.clientText} NOT NULL,
     metadata ${c.clientText} NOT NULL,
     hostports TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX edges_by_kind ON edges (kind, seq);`;

/** A routes table (`name`), with its modules column or without (SQLite's schema 1 kept them apart). */
export const routesTable = (
  name: string,
  c: FirstColumns,
  modules: boolean,
): string => `CREATE TABLE ${name} (
     seq ${c.seq},
     id TEXT NOT NULL UNIQUE,
     edge_id TEXT NOT NULL REFERENCES edges (id) ON DELETE CASCADE,
     match_type TEXT NOT NULL,
     match ${c.clientText} NOT NULL,
     description ${c.clientText} NOT NULL,
     metadata ${c.clientText} NOT NULL,
     created_at TEXT NOT NULL,${modules ? "\n     modules TEXT NOT NULL," : ""}
     UNIQUE (edge_id, match_type, match)
   );`;

/** The edges and routes tables of schema 1, and their indexes. */
export const firstTables = (c: FirstColumns, modules: boolean): string => `${edgesTable(c)}
   ${routesTable("routes", c, modules)}
   CREATE INDEX routes_by_edge ON routes (edge_id, seq);`;

/** A route's SAML signing key pair and a TLS edge's IP restriction: schema 1 of both stores. */
export const MODULE_TABLES = `CREATE TABLE route_saml_keys (
     route_id TEXT PRIMARY KEY REFERENCES routes (id) ON DELETE CASCADE,
     certificate_pem TEXT NOT NULL,
     private_key_pem TEXT NOT NULL
   );
   CREATE TABLE tls_ip_restrictions (
     edge_id TEXT PRIMARY KEY REFERENCES edges (id) ON DELETE CASCADE,
     config TEXT NOT NULL
   );`;

/** Idempotency keys of creates, until schema 4 (SQLite) and 2 (PostgreSQL) moved them onto the objects. */
export const IDEMPOTENCY_KEYS_TABLE = `CREATE TABLE idempotency_keys (
     key TEXT PRIMARY KEY,
     request TEXT NOT NULL,
     response TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);`;

/**
 * The columns of a keyed create's mark (see CreateMark in ./store) on `table`, and the index
 * that finds an object by its key. SQLite adds one column per ALTER TABLE.
 */
export function createMarkColumns(store: Dialect, table: string): string {
  const index = `CREATE UNIQUE INDEX ${table}_by_create_key ON ${table} (create_key) WHERE create_key IS NOT NULL;`;
  return store === "sqlite"
    ? `ALTER TABLE ${table} ADD COLUMN create_key TEXT;
   ALTER TABLE ${table} ADD COLUMN create_request TEXT;
   ${index}`
    : `ALTER TABLE ${table} ADD COLUMN create_key TEXT, ADD COLUMN create_request TEXT;
   ${index}`;
}

/**
 * The table of named API keys, the same statement on both stores (a migration of each). A key's
 * hash is unique too: two keys with one secret would be one key with two names.
 */
export const API_KEYS_TABLE = `CREATE TABLE api_keys (
     name TEXT PRIMARY KEY,
     scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
     hash TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     revoked_at TEXT
   );`;

/**
 * The servers running on the store, each as it records itself (./presence): who it is, which
 * secrets keys it holds, and when it last said it was alive, by the database's clock (ms since
 * the epoch: replicas on several hosts compare one clock). The same statement on both stores.
 */
export const SERVERS_TABLE = `CREATE TABLE servers (
     id TEXT PRIMARY KEY,
     host TEXT NOT NULL,
     pid INTEGER NOT NULL,
     url TEXT NOT NULL,
     started_at TEXT NOT NULL,
     key_ids TEXT NOT NULL,
     beat_ms INTEGER NOT NULL,
     seen_ms BIGINT NOT NULL
   );`;

/**
 * The audit table as schema 6 (SQLite) and 4 (PostgreSQL) made it: one statement for both stores
 * (the seq column's type is each store's: SQLite's AUTOINCREMENT never reuses a pruned id,
 * PostgreSQL's BIGSERIAL neither). Its index by object is dropped by the next migration
 * (auditObjectIndex). A migration of its own on each store, self-contained. Never edit it.
 */
export function auditTable(seq: string): string {
  return `${auditEventsTable("audit_events", seq)}
   CREATE INDEX audit_events_by_object ON audit_events (object_id, seq);`;
}

function auditEventsTable(name: string, seq: string): string {
  return `CREATE TABLE ${name} (
     seq ${seq},
     time TEXT NOT NULL,
     operation TEXT NOT NULL,
     object_kind TEXT NOT NULL,
     object_id TEXT NOT NULL,
     edge_id TEXT,
     key_name TEXT,
     request_id TEXT,
     changes TEXT NOT NULL,
     truncated INTEGER NOT NULL
   );`;
}

/**
 * The index by object (what a refresh's attribution asks: one object's events), moved off the
 * request path. A secondary index on the audit table cost every write a random leaf page of its
 * own (+10 to +22 % CPU per route POST or PATCH on SQLite: BENCHMARKS.md, "Audit trail"); the
 * table alone, appended in seq order, costs a few percent. So the object's events are found
 * through `audit_by_object` (seq → object), filled in batches in the background (auditIndexer),
 * plus a scan of the events after the last one it holds: the tail the indexer has not reached,
 * seconds of writes, found by the table's own key. A lookup is complete whether the indexer ran
 * or not; it only gets slower the longer the tail.
 *
 * Keyed by seq, so that pruning deletes its oldest rows by range like the events'. A dump
 * carries the events (DATA_TABLES), never this table: a load empties it and the indexer rebuilds it.
 */
export function auditObjectIndex(store: "sqlite" | "postgres"): string {
  const index = `CREATE TABLE audit_by_object (
     seq ${store === "sqlite" ? "INTEGER" : "BIGINT"} PRIMARY KEY,
     object_id TEXT NOT NULL
   );
   CREATE INDEX audit_by_object_id ON audit_by_object (object_id, seq);`;
  if (store === "postgres") return `DROP INDEX audit_events_by_object;\n   ${index}`;
  // SQLite: the table rebuilt on the plain rowid. AUTOINCREMENT wrote its counter's page of
  // sqlite_sequence at every commit; an insert now numbers max + 1, never below the floor kept in
  // meta (SQL.auditInsert), which starts at AUTOINCREMENT's counter: no seq is ever reused.
  // Dropping the old table drops its index and its counter.
  return `${auditEventsTable("audit_events_v2", "INTEGER PRIMARY KEY")}
   INSERT INTO meta (key, value) SELECT '${AUDIT_SEQ_FLOOR}', CAST(seq AS TEXT) FROM sqlite_sequence WHERE name = 'audit_events';
   INSERT INTO audit_events_v2 SELECT * FROM audit_events;
   DROP TABLE audit_events;
   ALTER TABLE audit_events_v2 RENAME TO audit_events;
   ${index}`;
}

/** The migration that marks the keyed creates' digests rewritten under the store's key, in code. */
export const KEYED_FINGERPRINTS = "-- create_request rewritten by openFingerprints";

/**
 * The migrations both stores took alike since named API keys, in order: the tail of each store's
 * list (SQLite's 5 to 9, PostgreSQL's 3 to 7).
 */
export function sharedMigrations(store: Dialect): string[] {
  return [
    // Named API keys with a scope (edge-service keys): only a hash of each key is kept.
    API_KEYS_TABLE,
    // The audit trail (GET /audit_events): one event per change, written in the change's transaction.
    auditTable(store === "sqlite" ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"),
    // The audit trail's index by object, off the request path (./audit, auditObjectIndex).
    auditObjectIndex(store),
    // Keyed creates' requests kept as an HMAC under the store's key, not a plain SHA-256, which
    // answers a guess of their secrets (./fingerprints). SQL has no HMAC: the rows are rewritten
    // in code, in this same transaction, once the secrets key is checked (see migrate in
    // ./store-steps).
    KEYED_FINGERPRINTS,
    // The servers running on the store, each alive and with which secrets keys (./presence).
    SERVERS_TABLE,
  ];
}
