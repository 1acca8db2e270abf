/**
 * The DDL both stores' migrations share, written once: each store's list of migrations
 * (MIGRATIONS in ./store-sqlite, PG_MIGRATIONS in ./store-postgres) holds these statements as
 * its own steps. A migration is never edited once released: a change is a new one.
 */
import { AUDIT_SEQ_FLOOR } from "./audit";

export type Dialect = "sqlite" | "postgres";

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
