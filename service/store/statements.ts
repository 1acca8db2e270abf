/**
 * The SQL of both stores, each statement stated once. A statement is written in PostgreSQL's
 * placeholder style (`$1`, `$2`, … each may repeat) and becomes SQLite's numbered `?1`, `?2`, …
 * when the list is loaded: both texts are made once, and each store prepares each statement once
 * per connection (SQLite's statement cache; PostgreSQL's named statements).
 *
 * Where the dialects differ, a statement says so through a small hook, never a second text:
 *  - `d.forUpdate`: ` FOR UPDATE` on PostgreSQL (a write locks the rows it reads to change), empty
 *    on SQLite (a write transaction is BEGIN IMMEDIATE: writers already take turns);
 *  - `d.anyOf(column, n)`: the column is one of the list parameter `$n` (`= ANY($n)`; SQLite reads
 *    the list as a JSON array with json_each: one statement whatever the list's length);
 *  - `bytes`: the parameters PostgreSQL stores as BYTEA (its TEXT cannot hold U+0000), sent as
 *    UTF-8 bytes; SQLite stores the text;
 *  - `returning`: an insert that answers its integer key (PostgreSQL: RETURNING; SQLite: the rowid);
 *  - `row`: how a row is decoded (./rows), the same for both.
 * `ON CONFLICT … DO UPDATE/NOTHING` and `excluded.` are spelled alike by both.
 *
 * Adding a query: one entry here, called through `StoreTx.query` / `StoreTx.run` from the service.
 * What stays per store: each one's migrations (the column types differ), transaction control,
 * PostgreSQL's advisory locks and snapshots, SQLite's pragmas, dump/load (built per table).
 */
import type { AuditEvent } from "../../sdk/contract";
import { type AuditRecord, changesText } from "../audit";
import { AUDIT_SEQ_FLOOR } from "./migrations-shared";
import { FINGERPRINT_PREFIX } from "./fingerprints";
import { type Secrets, SECRETS_KEY_ID, SECRETS_KEY_IDS } from "../secrets";
import {
  apiKeyRow,
  auditEventOf,
  createdObject,
  dumpRow,
  edgeRow,
  liveServerRow,
  type Raw,
  routeRow,
  samlCertificateRow,
  seqOf,
  textValue,
  tlsRestrictionRow,
} from "./rows";
import type {
  ApiKeyRow,
  AuditFilter,
  CreatedObject,
  CreatedTable,
  DataTable,
  Dialect,
  DumpRow,
  EdgeRow,
  LiveServer,
  RouteRow,
  SqlValue,
  Statement,
  StoredIpPolicy,
} from "./store";

interface Hooks {
  readonly forUpdate: string;
  /** The database's clock, in integer milliseconds since the epoch. */
  readonly nowMs: string;
  anyOf(column: string, n: number): string;
  /** The seq of a new audit event (see SQL.auditInsert). */
  readonly auditSeq: string;
  /** A row of `key, value`: the encoding the database keeps its text in (see TEXT_ENCODING). */
  readonly encoding: string;
  /** The references a migration broke (see SQL.brokenReferences). */
  readonly brokenReferences: string;
  /** After rows were written with their seqs (a load): the next new row numbers after them. */
  continueSequence(table: string): string;
}

/** The key of the row that says the encoding of a database's text (SQL.metaReadiness). */
export const TEXT_ENCODING = "text_encoding";

const HOOKS: Record<Dialect, Hooks> = {
  sqlite: {
    forUpdate: "",
    nowMs: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    anyOf: (column, n) => `${column} IN (SELECT value FROM json_each($${n}))`,
    // The rowid's own rule (max + 1), but never below the last seq pruned, so that an id is never
    // reused once pruning emptied the table: AUTOINCREMENT's guarantee without its counter page
    // written at every commit.
    auditSeq: `COALESCE((SELECT max(seq) FROM audit_events), (SELECT CAST(value AS INTEGER) FROM meta WHERE key = '${AUDIT_SEQ_FLOOR}'), 0) + 1`,
    // Whatever the file's encoding (UTF-8 unless another program chose UTF-16), the driver
    // converts every string to it and back: nothing is lost.
    encoding: `SELECT '${TEXT_ENCODING}' AS key, 'UTF8' AS value`,
    // Foreign keys are off while migrations rebuild tables (SQLite's documented procedure).
    brokenReferences: "PRAGMA foreign_key_check",
    // A rowid is max + 1 (AUTOINCREMENT's counter follows the rows inserted): nothing to set.
    continueSequence: (table) => `SELECT max(seq) AS seq FROM ${table}`,
  },
  postgres: {
    forUpdate: " FOR UPDATE",
    nowMs: "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)",
    anyOf: (column, n) => `${column} = ANY($${n})`,
    auditSeq: "DEFAULT", // BIGSERIAL: a sequence never goes back
    // The connection speaks UTF-8 whatever the database's or role's client_encoding: node-postgres
    // asks for UTF8 in its startup packet, which takes precedence.
    encoding: `SELECT '${TEXT_ENCODING}' AS key, current_setting('server_encoding') AS value`,
    // Every reference is checked as it is written, DDL or not.
    brokenReferences: "SELECT NULL AS broken WHERE false",
    continueSequence: (table) =>
      `SELECT setval(pg_get_serial_sequence('${table}', 'seq'), (SELECT max(seq) FROM ${table})) AS seq`,
  },
};

const asIs = (args: readonly SqlValue[]) => args as unknown[];
const utf8 = (v: SqlValue): unknown => (typeof v === "string" ? Buffer.from(v, "utf8") : v);

function statement<Row = Raw>(
  name: string,
  text: string | ((d: Hooks) => string),
  opts: { bytes?: readonly number[]; row?: (raw: Raw, secrets: Secrets) => Row; returning?: string } = {},
): Statement<Row> {
  const returning = opts.returning === undefined ? "" : ` RETURNING ${opts.returning}`;
  const of = (d: Dialect) =>
    (typeof text === "string" ? text : text(HOOKS[d])) + (d === "postgres" ? returning : "");
  const bytes = new Set((opts.bytes ?? []).map((n) => n - 1));
  const lists = typeof text === "string" ? false : text(HOOKS.postgres).includes("ANY(");
  return {
    name,
    sqlite: of("sqlite").replace(/\$(\d+)/g, "?$1"),
    postgres: of("postgres"),
    values: {
      sqlite: lists ? (args) => args.map((v) => (Array.isArray(v) ? JSON.stringify(v) : v)) : asIs,
      postgres: bytes.size > 0 ? (args) => args.map((v, i) => (bytes.has(i) ? utf8(v) : v)) : asIs,
    },
    row: opts.row ?? ((raw) => raw as Row),
    returning: opts.returning,
  };
}

const CREATE_MARK = "create_key, create_request";
/** A keyed create's request kept in an earlier version's form (see ./fingerprints). */
const UNKEYED = `create_request IS NOT NULL AND create_request NOT LIKE '${FINGERPRINT_PREFIX}%'`;

/** The highest seq the index by object holds (0 when empty): the tail after it is scanned. */
const INDEXED_UP_TO = "SELECT COALESCE(max(seq), 0) FROM audit_by_object";

/** The audit table's columns an insert writes, each with its value from the event. */
const AUDIT_VALUES: ReadonlyArray<readonly [string, (e: AuditRecord) => SqlValue]> = [
  ["time", (e) => e.time],
  ["operation", (e) => e.operation],
  ["object_kind", (e) => e.object_kind],
  ["object_id", (e) => e.object_id],
  ["edge_id", (e) => e.edge_id],
  ["key_name", (e) => e.key],
  ["request_id", (e) => e.request_id],
  ["changes", (e) => changesText(e.changes)],
  ["truncated", (e) => (e.truncated ? 1 : 0)],
];

/** A row of `key, value` (the meta table's, and the like). */
const keyValue = (raw: Raw): [string, string] => [String(Reflect.get(raw, "key")), textValue(raw)];

/** Every statement of the data paths, by what it does. */
export const SQL = {
  // ---------------------------------------------------------------- edges
  edgeInsert: statement(
    "edge_insert",
    `INSERT INTO edges (id, kind, description, metadata, hostports, created_at, ${CREATE_MARK}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    { bytes: [3, 4] },
  ),
  edgeGet: statement<EdgeRow>("edge_get", "SELECT * FROM edges WHERE id = $1 AND kind = $2", {
    row: edgeRow,
  }),
  edgeList: statement<EdgeRow>(
    "edge_list",
    "SELECT * FROM edges WHERE kind = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
    { row: edgeRow },
  ),
  edgeDelete: statement("edge_delete", "DELETE FROM edges WHERE id = $1 AND kind = $2"),

  // ---------------------------------------------------------------- routes
  routeInsert: statement<number>(
    "route_insert",
    `INSERT INTO routes (id, edge_id, match_type, match, description, metadata, created_at, modules, ${CREATE_MARK}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    { bytes: [4, 5, 6], row: seqOf, returning: "seq" },
  ),
  routeGet: statement<RouteRow>("route_get", "SELECT * FROM routes WHERE id = $1 AND edge_id = $2", {
    row: routeRow,
  }),
  /** In a write: concurrent writers of this route take turns, each reading the last commit. */
  routeGetLocked: statement<RouteRow>(
    "route_get_locked",
    (d) => `SELECT * FROM routes WHERE id = $1 AND edge_id = $2${d.forUpdate}`,
    { row: routeRow },
  ),
  routeList: statement<RouteRow>(
    "route_list",
    "SELECT * FROM routes WHERE edge_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
    { row: routeRow },
  ),
  routeUpdate: statement(
    "route_update",
    "UPDATE routes SET match_type = $1, match = $2, description = $3, metadata = $4, modules = $5 WHERE id = $6",
    { bytes: [2, 3, 4] },
  ),
  routeDelete: statement("route_delete", "DELETE FROM routes WHERE id = $1 AND edge_id = $2"),

  // ---------------------------------------------------------------- SAML signing keys
  samlGet: statement<[string, string]>(
    "saml_get",
    (d) => `SELECT route_id, certificate_pem FROM route_saml_keys WHERE ${d.anyOf("route_id", 1)}`,
    { row: samlCertificateRow },
  ),
  samlPut: statement(
    "saml_put",
    "INSERT INTO route_saml_keys (route_id, certificate_pem, private_key_pem) VALUES ($1, $2, $3) ON CONFLICT (route_id) DO NOTHING",
  ),

  // ---------------------------------------------------------------- TLS IP restriction
  tlsGet: statement<[string, StoredIpPolicy]>(
    "tls_get",
    (d) => `SELECT edge_id, config FROM tls_ip_restrictions WHERE ${d.anyOf("edge_id", 1)}`,
    { row: tlsRestrictionRow },
  ),
  /** An existing module keeps the mark of the create that made it. */
  tlsPut: statement(
    "tls_put",
    `INSERT INTO tls_ip_restrictions (edge_id, config, ${CREATE_MARK}) VALUES ($1, $2, $3, $4) ON CONFLICT (edge_id) DO UPDATE SET config = excluded.config`,
  ),
  tlsDelete: statement("tls_delete", "DELETE FROM tls_ip_restrictions WHERE edge_id = $1"),

  // ---------------------------------------------------------------- keyed creates
  /** The object a keyed create made, in whichever table (a key names one request). */
  findCreated: statement<CreatedObject>(
    "find_created",
    `SELECT 'edges' AS "table", id, NULL AS edge_id, kind, create_request AS request FROM edges WHERE create_key = $1
  UNION ALL
  SELECT 'routes', id, edge_id, NULL, create_request FROM routes WHERE create_key = $1
  UNION ALL
  SELECT 'tls_ip_restrictions', edge_id, edge_id, NULL, create_request FROM tls_ip_restrictions WHERE create_key = $1`,
    { row: createdObject },
  ),
  /**
   * The keyed creates whose request is kept as an earlier version's digest, not yet a keyed
   * fingerprint (./fingerprints): what the upgrade to it rewrites.
   */
  unkeyedCreates: statement<CreatedObject>(
    "unkeyed_creates",
    `SELECT 'edges' AS "table", id, create_request AS request FROM edges WHERE ${UNKEYED}
  UNION ALL
  SELECT 'routes', id, create_request FROM routes WHERE ${UNKEYED}
  UNION ALL
  SELECT 'tls_ip_restrictions', edge_id, create_request FROM tls_ip_restrictions WHERE ${UNKEYED}`,
    { row: createdObject },
  ),
  edgeCreateRequestSet: statement(
    "edge_create_request_set",
    "UPDATE edges SET create_request = $1 WHERE id = $2",
  ),
  routeCreateRequestSet: statement(
    "route_create_request_set",
    "UPDATE routes SET create_request = $1 WHERE id = $2",
  ),
  tlsCreateRequestSet: statement(
    "tls_create_request_set",
    "UPDATE tls_ip_restrictions SET create_request = $1 WHERE edge_id = $2",
  ),

  // ---------------------------------------------------------------- API keys
  apiKeys: statement<ApiKeyRow>("api_keys", "SELECT * FROM api_keys ORDER BY created_at, name", {
    row: apiKeyRow,
  }),
  apiKeyInsert: statement(
    "api_key_insert",
    "INSERT INTO api_keys (name, scope, hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5)",
  ),
  apiKeyRevoke: statement(
    "api_key_revoke",
    "UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
  ),

  // ---------------------------------------------------------------- audit trail (./audit)
  auditInsert: statement(
    "audit_insert",
    (d) =>
      `INSERT INTO audit_events (seq, ${AUDIT_VALUES.map(([column]) => column).join(", ")}) VALUES (${d.auditSeq}, ${AUDIT_VALUES.map((_, i) => `$${i + 1}`).join(", ")})`,
  ),
  /**
   * Up to $2 events into the index by object, the lowest seqs after the last it holds, none
   * above $1 (on PostgreSQL, the highest seq known to be settled: see auditIndexBound there).
   * What the index holds stays a prefix of the trail: every event up to its highest seq.
   */
  auditIndex: statement(
    "audit_index",
    `INSERT INTO audit_by_object (seq, object_id)
  SELECT seq, object_id FROM audit_events WHERE seq > (${INDEXED_UP_TO}) AND seq <= $1 ORDER BY seq LIMIT $2
  ON CONFLICT (seq) DO NOTHING`,
  ),
  /** Whether any event is not in the index by object yet (read first: an idle round writes nothing). */
  auditUnindexed: statement<boolean>(
    "audit_unindexed",
    `SELECT count(*) AS n FROM (SELECT 1 FROM audit_events WHERE seq > (${INDEXED_UP_TO}) LIMIT 1) AS t`,
    { row: (raw) => Number(Reflect.get(raw, "n")) > 0 },
  ),
  /**
   * Deletes the oldest events past the retention, a bounded batch: the $2 lowest seqs, those of
   * them older than $1 (seq follows time, so the old ones are the lowest; a batch never scans more
   * than $2 rows, with or without anything to delete).
   */
  auditPrune: statement(
    "audit_prune",
    "DELETE FROM audit_events WHERE seq IN (SELECT seq FROM audit_events ORDER BY seq LIMIT $2) AND time < $1",
  ),
  /** Before a prune on SQLite: the highest seq so far, below which no new event is numbered (auditSeq). */
  auditSeqFloor: statement(
    "audit_seq_floor",
    `INSERT INTO meta (key, value)
  SELECT '${AUDIT_SEQ_FLOOR}', CAST(max(seq) AS TEXT) FROM audit_events WHERE seq > 0 HAVING max(seq) IS NOT NULL
  ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  ),
  /** Before a load: the index by object is derived from the events, and rebuilt from those copied. */
  auditIndexClear: statement("audit_index_clear", "DELETE FROM audit_by_object"),
  /** Then the index's rows below the oldest event left, a bounded batch of $1. */
  auditPruneIndex: statement(
    "audit_prune_index",
    `DELETE FROM audit_by_object WHERE seq IN (SELECT seq FROM audit_by_object ORDER BY seq LIMIT $1)
  AND seq < (SELECT COALESCE(min(seq), ${Number.MAX_SAFE_INTEGER}) FROM audit_events)`,
  ),

  // ---------------------------------------------------------------- servers alive (./presence)
  /** A server says it is alive (its row made again if it was pruned meanwhile). */
  serverBeat: statement(
    "server_beat",
    (d) =>
      `INSERT INTO servers (id, host, pid, url, started_at, key_ids, beat_ms, seen_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, ${d.nowMs})
  ON CONFLICT (id) DO UPDATE SET key_ids = excluded.key_ids, seen_ms = excluded.seen_ms`,
  ),
  serverGone: statement("server_gone", "DELETE FROM servers WHERE id = $1"),
  /** The rows of servers not heard of for $1 ms (crashed: a clean stop deletes its row). */
  serversPrune: statement("servers_prune", (d) => `DELETE FROM servers WHERE seen_ms < ${d.nowMs} - $1`),
  /** The servers heard of within three of their beats and $1 ms more, oldest first. */
  serversLive: statement<LiveServer>(
    "servers_live",
    (d) =>
      `SELECT host, pid, url, started_at, key_ids, ${d.nowMs} - seen_ms AS age_ms FROM servers
  WHERE seen_ms > ${d.nowMs} - (3 * beat_ms + $1) ORDER BY started_at, id`,
    { row: liveServerRow },
  ),

  // ---------------------------------------------------------------- metadata and secrets
  metaGet: statement<string>("meta_get", "SELECT value FROM meta WHERE key = $1", { row: textValue }),
  metaSet: statement(
    "meta_set",
    "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  ),
  metaDelete: statement("meta_delete", "DELETE FROM meta WHERE key = $1"),
  schemaVersion: statement<string>("schema_version", "SELECT value FROM meta WHERE key = 'schema_version'", {
    row: textValue,
  }),
  /**
   * What readiness reads: the schema, the keys the secrets are sealed under (meta rows), and the
   * encoding of the database's text (see TEXT_ENCODING).
   */
  metaReadiness: statement<[string, string]>(
    "meta_readiness",
    (d) =>
      `SELECT key, value FROM meta WHERE key IN ('schema_version', '${SECRETS_KEY_ID}', '${SECRETS_KEY_IDS}')
  UNION ALL ${d.encoding}`,
    { row: keyValue },
  ),
  /** The encoding of the database's text (see encodingProblem in ./store-steps). */
  encoding: statement<[string, string]>("encoding", (d) => d.encoding, { row: keyValue }),
  /** After migrations: the rows whose references they broke (none, or the migration is refused). */
  brokenReferences: statement("broken_references", (d) => d.brokenReferences),
  /** The routes whose modules hold a sealed secret (their key ids scanned). */
  sealedRoutes: statement("sealed_routes", "SELECT id, modules FROM routes WHERE modules LIKE $1"),
  samlKeyValues: statement<string>(
    "saml_key_values",
    "SELECT private_key_pem AS value FROM route_saml_keys",
    { row: textValue },
  ),
  routeModulesAll: statement("route_modules_all", "SELECT id, modules FROM routes"),
  routeModulesSet: statement("route_modules_set", "UPDATE routes SET modules = $1 WHERE id = $2"),
  samlKeysAll: statement("saml_keys_all", "SELECT route_id, private_key_pem FROM route_saml_keys"),
  samlKeySet: statement(
    "saml_key_set",
    "UPDATE route_saml_keys SET private_key_pem = $1 WHERE route_id = $2",
  ),
} as const;

/** The columns of text a client chooses, stored as BYTEA on PostgreSQL (see `bytes`), by table. */
const CLIENT_TEXT: ReadonlyMap<DataTable, readonly string[]> = new Map([
  ["edges", ["description", "metadata"]],
  ["routes", ["match", "description", "metadata"]],
]);

/** `make` of each key made once (a statement is prepared once per connection under its name). */
function once<K, V>(make: (key: K) => V): (key: K) => V {
  const made = new Map<K, V>();
  return (key) => {
    let found = made.get(key);
    if (found === undefined) made.set(key, (found = make(key)));
    return found;
  };
}

/** Every row of a data table, as stored (what a dump carries). */
export const tableRows = once((table: DataTable): Statement<DumpRow> =>
  statement(`dump_${table}`, `SELECT * FROM ${table} ORDER BY 1, 2`, { row: dumpRow }),
);

/** One row of a data table, if it holds any. */
export const anyRow = once((table: DataTable): Statement =>
  statement(`any_${table}`, `SELECT 1 AS found FROM ${table} LIMIT 1`),
);

const inserts = new Map<string, Statement>();

/** An insert of `count` rows of `columns` into `table` (a load), their values row after row. */
export function insertRows(table: DataTable, columns: readonly string[], count: number): Statement {
  const shape = `${table} (${columns.join(", ")}) × ${count}`;
  let found = inserts.get(shape);
  if (found === undefined) {
    const bytes: number[] = [];
    const tuples = Array.from({ length: count }, (_, row) => {
      const marks = columns.map((column, i) => {
        const at = row * columns.length + i + 1;
        if (CLIENT_TEXT.get(table)?.includes(column)) bytes.push(at);
        return `$${at}`;
      });
      return `(${marks.join(", ")})`;
    });
    const text = `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${tuples.join(", ")}`;
    found = statement(`load_${table}_${inserts.size}`, text, { bytes });
    inserts.set(shape, found);
  }
  return found;
}

/** After a load wrote `table`'s rows with their seqs: the next new row numbers after them. */
export const continueSequence = once((table: DataTable): Statement =>
  statement(`sequence_${table}`, (d) => d.continueSequence(table)),
);

/** The statement that rewrites a keyed create's stored request, by its object's table. */
export const createRequestSet = (table: CreatedTable): Statement =>
  ({
    edges: SQL.edgeCreateRequestSet,
    routes: SQL.routeCreateRequestSet,
    tls_ip_restrictions: SQL.tlsCreateRequestSet,
  })[table];

/** An event's values for SQL.auditInsert. */
export const auditInsertValues = (e: AuditRecord): SqlValue[] => AUDIT_VALUES.map(([, value]) => value(e));

const withEvents = new Map<string, Statement<unknown>>();

/**
 * `st`, a write of one row, and the change's audit event as one statement (PostgreSQL; its values
 * after `st`'s, those of SQL.auditInsert): the event is inserted by a data-modifying CTE over the
 * row the write answers, so a change and its event cost one round trip, not two, and the event is
 * written only with the row. Its seq is taken after the row is written, once the transaction has
 * its xid (what PostgresStore.indexAuditEvents relies on): the event reads the written row. SQLite
 * has no data-modifying CTE, and no round trip to save: it runs `st`, then SQL.auditInsert.
 */
export function withAuditEvent<Row>(st: Statement<Row>): Statement<Row> {
  let found = withEvents.get(st.name);
  if (found === undefined) {
    const params = Math.max(0, ...[...st.postgres.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    const columns = AUDIT_VALUES.map(([column]) => column).join(", ");
    const values = AUDIT_VALUES.map((_, i) => `$${params + i + 1}`).join(", ");
    const written = st.returning === undefined ? `${st.postgres} RETURNING 1 AS written` : st.postgres;
    found = {
      ...st,
      name: `${st.name}_with_event`,
      sqlite: "-- SQLite runs the write, then SQL.auditInsert (see withAuditEvent)",
      postgres: `WITH written AS (${written}), event AS (INSERT INTO audit_events (${columns}) SELECT ${values} FROM written) SELECT * FROM written`,
    };
    withEvents.set(st.name, found);
  }
  return found as Statement<Row>;
}

/** The list statements, one per combination of filters (PostgreSQL prepares each once per connection). */
const auditLists = new Map<string, Statement<AuditEvent>>();

/**
 * A page of the trail, newest first: the statement for the filters given, and its values.
 * By object: the events the index by object has, and those of the tail after it (see
 * auditObjectIndex in ./audit), merged in seq order; by key or time alone, a scan newest first.
 */
export function auditList(f: AuditFilter): { st: Statement<AuditEvent>; args: SqlValue[] } {
  const args: SqlValue[] = [];
  const param = (value: SqlValue) => {
    args.push(value);
    return `$${args.length}`;
  };
  const before = param(f.beforeSeq ?? Number.MAX_SAFE_INTEGER);
  const where: string[] = [];
  let name = "audit_list";
  let from = "audit_events";
  if (f.objectId !== undefined) {
    const object = param(f.objectId);
    from = `(SELECT e.* FROM audit_by_object i JOIN audit_events e ON e.seq = i.seq
    WHERE i.object_id = ${object} AND i.seq < ${before}
  UNION ALL
  SELECT * FROM audit_events
    WHERE seq > (${INDEXED_UP_TO}) AND object_id = ${object} AND seq < ${before}) AS t`;
    name += "_o";
  } else where.push(`seq < ${before}`);
  if (f.key !== undefined) {
    where.push(`key_name = ${param(f.key)}`);
    name += "_k";
  }
  // Stored times are toISOString's: the filter compares as text in the same form.
  if (f.since !== undefined) {
    where.push(`time >= ${param(new Date(f.since).toISOString())}`);
    name += "_s";
  }
  const limit = param(f.limit);
  let st = auditLists.get(name);
  if (st === undefined) {
    const filter = where.length > 0 ? ` WHERE ${where.join(" AND ")}` : "";
    st = statement<AuditEvent>(name, `SELECT * FROM ${from}${filter} ORDER BY seq DESC LIMIT ${limit}`, {
      row: auditEventOf,
    });
    auditLists.set(name, st);
  }
  return { st, args };
}
