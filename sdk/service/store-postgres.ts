/**
 * The PostgreSQL store: several `edge-service serve` replicas on one database. node-postgres
 * (`pg`, pure JavaScript) with a connection pool; every write one transaction (READ COMMITTED,
 * the rows it reads to change locked), every read one REPEATABLE READ snapshot.
 *
 * - Schema: versioned migrations, run at start-up under a transaction-level advisory lock, so
 *   replicas starting together migrate once and the others wait and see it done.
 * - A PATCH reads its route FOR UPDATE (the edge is read without a lock): concurrent PATCHes of one route, through any replicas,
 *   take turns, and each sees the other's change (no lost module).
 * - Two creates of one (edge, match_type, match) race on the unique key: one commits, the other
 *   gets 23505, which becomes UniqueViolation (409).
 * - Creates with one `Idempotency-Key` take an advisory lock on the key: the second waits for the
 *   first's commit and then reads what it remembered.
 * - The change counter of the GET answer cache is the database's snapshot
 *   (`pg_current_snapshot()`): it moves at every commit of any writer, whichever replica; and
 *   with the server's start time, at a failover to another server.
 * - A database that cannot be reached (restart, failover, no free connection within 5 s) is
 *   StoreUnavailable: the service answers 503 with Retry-After, and recovers by itself when the
 *   database is back (the pool opens new connections).
 */
import pg from "pg";
import { CreateFingerprints, FINGERPRINT_KEY, fingerprintWith, keyNeededToUpgrade } from "./fingerprints";
import { SqlTx } from "./sql-tx";
import { createRequestSet, SQL } from "./statements";
import { errorField, errorMessage } from "../contract";
import { auditIndexer, INDEX_EVERY_MS } from "./audit";
import type { BatchRounds } from "./batch-rounds";
import {
  API_KEYS_TABLE,
  auditObjectIndex,
  auditTable,
  createMarkColumns,
  SERVERS_TABLE,
} from "./migrations-shared";
import {
  DATA_TABLES,
  LIVE_SLACK_MS,
  type LiveServer,
  serversOnTarget,
  targetNotEmpty,
  type PoolStats,
  type Resealed,
  type Store,
  type StoreDump,
  type StoreTx,
  type SqlValue,
  type Statement,
  ParentMissing,
  StoreUnavailable,
  UniqueViolation,
} from "./store";
import {
  createdObject,
  resealRouteModules,
  resealSamlKey,
  routeSealedKeyIds,
  SEALED_MODULES_LIKE,
  type Raw,
} from "./rows";
import {
  parseKeyIds,
  SECRETS_KEY_ID,
  SECRETS_KEY_IDS,
  Secrets,
  type SecretsKey,
  sealedKeyId,
} from "./secrets";

/**
 * Ordered schema migrations of the PostgreSQL store; index + 1 is the version. Never edit one.
 * The strings a client chooses (descriptions, metadata, a route's match) are BYTEA, their UTF-8
 * bytes: PostgreSQL's TEXT cannot hold U+0000, which the API accepts (and SQLite stores). JSON
 * columns are TEXT: JSON.stringify escapes U+0000.
 */
const PG_MIGRATIONS: readonly string[] = [
  `CREATE TABLE edges (
     seq BIGSERIAL PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     kind TEXT NOT NULL CHECK (kind IN ('https', 'tls')),
     description BYTEA NOT NULL,
     metadata BYTEA NOT NULL,
     hostports TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX edges_by_kind ON edges (kind, seq);
   CREATE TABLE routes (
     seq BIGSERIAL PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     edge_id TEXT NOT NULL REFERENCES edges (id) ON DELETE CASCADE,
     match_type TEXT NOT NULL,
     match BYTEA NOT NULL,
     description BYTEA NOT NULL,
     metadata BYTEA NOT NULL,
     created_at TEXT NOT NULL,
     modules TEXT NOT NULL,
     UNIQUE (edge_id, match_type, match)
   );
   CREATE INDEX routes_by_edge ON routes (edge_id, seq);
   CREATE TABLE route_saml_keys (
     route_id TEXT PRIMARY KEY REFERENCES routes (id) ON DELETE CASCADE,
     certificate_pem TEXT NOT NULL,
     private_key_pem TEXT NOT NULL
   );
   CREATE TABLE tls_ip_restrictions (
     edge_id TEXT PRIMARY KEY REFERENCES edges (id) ON DELETE CASCADE,
     config TEXT NOT NULL
   );
   CREATE TABLE idempotency_keys (
     key TEXT PRIMARY KEY,
     request TEXT NOT NULL,
     response TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);`,
  // A create's Idempotency-Key moves onto the object it made, for the object's lifetime (as in
  // SQLite's schema 4): the keys remembered so far move with it.
  `${createMarkColumns("postgres", "edges")}
   ${createMarkColumns("postgres", "routes")}
   ${createMarkColumns("postgres", "tls_ip_restrictions")}
   UPDATE edges SET create_key = k.key, create_request = k.request
     FROM idempotency_keys k WHERE (k.response::json ->> 'id') = edges.id;
   UPDATE routes SET create_key = k.key, create_request = k.request
     FROM idempotency_keys k WHERE (k.response::json ->> 'id') = routes.id;
   DROP TABLE idempotency_keys;`,
  // Named API keys with a scope (edge-service keys), as in SQLite's schema 5.
  API_KEYS_TABLE,
  // The audit trail (GET /audit_events), as in SQLite's schema 6.
  auditTable("BIGSERIAL PRIMARY KEY"),
  // Its index by object, off the request path, as in SQLite's schema 7.
  auditObjectIndex("postgres"),
  // Keyed creates' requests as an HMAC under the store's key, as in SQLite's schema 8: rewritten
  // in code, in this same transaction, once the secrets key is checked (openFingerprints).
  `-- create_request rewritten by openFingerprints`,
  // The servers running on the database, as in SQLite's schema 9.
  SERVERS_TABLE,
];
/** The schema whose upgrade keys the keyed creates' digests (see openFingerprints). */
export const PG_KEYED_FINGERPRINTS_SCHEMA = 6;
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/** Advisory lock keys: (class, key) pairs of pg_advisory_xact_lock(int4, int4). */
const LOCK_CLASS_SCHEMA = 0x65646765; // "edge"
const LOCK_CLASS_CREATE_KEY = 0x65646769;
/** Shared by every write transaction, exclusive for `secrets rotate` (see WRITE_OPENING). */
const LOCK_CLASS_SECRETS = 0x65646773;

/** A statement sent in a simple query (see PgTx): its values written in as literals. */
interface InlineStep {
  readonly name: string;
  readonly text: string;
  /** The values as SQL literals (sqlLiterals): "" for none. */
  readonly literals: string;
}

/** A transaction's start: BEGIN, then statements taken first (locks), run before any other. */
interface Opening {
  readonly begin: string;
  readonly steps: readonly InlineStep[];
}

/**
 * A write transaction's start: the secrets lock taken shared, so that it is always taken before
 * any table lock (no deadlock with `secrets rotate`, which takes it exclusive first). The key new
 * secrets are sealed under is read after it, in the transaction, by a write that seals something
 * (PgTx.sealer; READ COMMITTED: each statement its own snapshot), so that a rotation is either
 * wholly before this transaction or wholly after. Sent with the transaction's first statement
 * (see PgTx).
 */
const WRITE_OPENING: Opening = {
  begin: "BEGIN",
  steps: [
    {
      name: "inline_secrets_lock_shared",
      text: `SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS_SECRETS}, 0)`,
      literals: "",
    },
  ],
};
/** A read transaction's start: one snapshot for all its statements. */
const READ_OPENING: Opening = { begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", steps: [] };
/** What a keyed create locks (see PgTx.lockCreateKey). */
const CREATE_KEY_LOCK = { name: "create_key_lock", text: "SELECT pg_advisory_xact_lock($1, hashtext($2))" };

const TYPE_INT8 = 20;
const TYPE_BYTEA = 17;
const parseBytea = pg.types.getTypeParser(TYPE_BYTEA, "text") as (value: string) => Buffer;
/** BIGINT (the seq columns) as a JavaScript number (seqs stay far below 2^53); BYTEA as UTF-8 text. */
const textParser = (oid: number): ((value: string) => unknown) =>
  oid === TYPE_INT8
    ? Number
    : oid === TYPE_BYTEA
      ? (value: string) => parseBytea(value).toString("utf8")
      : (pg.types.getTypeParser(oid, "text") as (value: string) => unknown);

/** The BYTEA columns of each table (see PG_MIGRATIONS): written as UTF-8 bytes. */
const BYTEA_COLUMNS: Record<string, readonly string[]> = {
  edges: ["description", "metadata"],
  routes: ["match", "description", "metadata"],
};
const bytes = (s: string): Buffer => Buffer.from(s, "utf8");
/**
 * A probe's query, given up after 2 s and its connection dropped: node-postgres reads
 * `query_timeout` from a query's config too (its types name it only for a client's).
 */
const bounded = (config: pg.QueryConfig): pg.QueryConfig => Object.assign(config, { query_timeout: 2000 });
const types = { getTypeParser: textParser };

export interface PostgresStoreOptions {
  /** Connections of this replica's pool. Default 10. */
  poolSize?: number;
  /** Wait for a free (or new) connection before answering 503. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Told about errors of idle connections (a database restart); default: ignored. */
  log?: (line: string) => void;
  /** Seals the secrets written, opens those read (see ./secrets); default: no key, unsealed. */
  secrets?: Secrets;
  /** How often the audit trail's index by object catches up (see ./audit); 0: never (lookups scan). */
  auditIndexEveryMs?: number;
}

type Value = string | number | Buffer | null;

/** The URL without its password, for logs and messages. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}

const UNAVAILABLE_CODES = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

function isUnavailable(e: unknown): boolean {
  const found = errorField(e, "code");
  const code = typeof found === "string" ? found : "";
  if (code.startsWith("08") || UNAVAILABLE_CODES.has(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed/i.test(
    errorMessage(e),
  );
}

/** A pg error as the store's own: unique key → UniqueViolation, lost database → StoreUnavailable. */
function translate(e: unknown): unknown {
  if (e instanceof StoreUnavailable || e instanceof UniqueViolation || e instanceof ParentMissing) return e;
  const code = errorField(e, "code");
  if (code === "23505") return new UniqueViolation(errorMessage(e));
  if (code === "23503") return new ParentMissing(errorMessage(e));
  if (isUnavailable(e)) {
    return new StoreUnavailable(
      `PostgreSQL cannot be reached (${errorMessage(e)}); the request was not acknowledged: retry shortly`,
    );
  }
  return e;
}

/** A transaction may be retried whole: deadlock, serialization failure. */
const RETRYABLE = new Set(["40P01", "40001"]);

/**
 * A string as an SQL literal, read the same whatever standard_conforming_strings says (the rule
 * of the driver's escapeLiteral, with native replaces: a route's modules are kilobytes of JSON):
 * quotes doubled; with a backslash, an E'' literal with backslashes doubled. Undefined for a NUL.
 */
function stringLiteral(v: string): string | undefined {
  if (v.includes("\0")) return undefined;
  const quoted = v.includes("'") ? v.replaceAll("'", "''") : v;
  return v.includes("\\") ? ` E'${quoted.replaceAll("\\", "\\\\")}'` : `'${quoted}'`;
}

/**
 * A statement's values as the arguments of an EXECUTE, `(v1, v2, ...)` ("" for none), written so
 * that the prepared statement's parameters get what the driver would have bound (see PgTx):
 * strings and numbers quoted as the driver sends them, as text (the driver's escapeLiteral, or as
 * they are when they hold nothing to escape), so each parameter's type reads them alike; a Buffer
 * (a BYTEA column's, which the driver binds as bytes) in BYTEA's hex form, ` E'\\x<hex>'` (a
 * constant, unlike a call of decode()). Undefined when a value cannot be written: a string with a
 * NUL (no SQL text holds one; PostgreSQL refuses it as a bound value too), a number that is not
 * finite.
 */
export function sqlLiterals(values: readonly Value[]): string | undefined {
  const out: string[] = [];
  for (const v of values) {
    if (v === null) out.push("NULL");
    else if (typeof v === "string") {
      const literal = stringLiteral(v);
      if (literal === undefined) return undefined;
      out.push(literal);
    } else if (typeof v === "number" && Number.isFinite(v)) out.push(pg.escapeLiteral(String(v)));
    else if (Buffer.isBuffer(v)) out.push(` E'\\\\x${v.toString("hex")}'`);
    else return undefined;
  }
  return out.length === 0 ? "" : `(${out.join(", ")})`;
}

/**
 * A statement sent in a simple query: PREPAREd under a name of its own, apart from the driver's
 * protocol-level name for it (one namespace per session).
 */
const inlineStep = (name: string, text: string, literals: string): InlineStep => ({
  name: `inline_${name}`,
  text,
  literals,
});

/** The statements each connection has PREPAREd for simple queries (see PgTx). */
const preparedInline = new WeakMap<pg.PoolClient, Set<string>>();
const STATEMENT_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * The statements of one transaction on one pooled connection.
 *
 * Neither the transaction's start (BEGIN, and a write's locks) nor its COMMIT costs a round trip
 * of its own (issue 36: a PATCH made 4, now 2; a keyed create 6, now 3):
 * - the start goes with the first statement, in one simple query: `BEGIN; EXECUTE
 *   inline_secrets_lock_shared; EXECUTE inline_route_get_locked('edghtsrt_...', 'edghts_...')`,
 *   a keyed create's key lock along;
 * - a write the service says is the transaction's last (WriteEnd) takes the COMMIT along:
 *   `EXECUTE inline_route_update_with_event(...); COMMIT`. If it fails, PostgreSQL runs nothing
 *   after it in the query: the COMMIT never runs, and transaction() rolls back as before.
 * node-postgres sends one statement per round trip and binds values only in the extended protocol,
 * so these run as statements PREPAREd once per connection, their values written in (sqlLiterals);
 * a value that cannot be written sends the start, or the COMMIT, on its own, as before.
 * Each statement of a simple query has its own snapshot under READ COMMITTED (the transaction's
 * first under REPEATABLE READ), taken after the locks before it: the same order as one round trip
 * each. A transaction that sends no statement is never opened, and needs no COMMIT.
 */
export class PgTx extends SqlTx implements StoreTx {
  /** The ring sealing under the store's key, once read (see sealer). */
  private sealing?: Promise<Secrets>;
  /** The transaction's start while it is not sent: it goes with the first statement (see send). */
  private opening?: Opening;
  /** Committed with its last write (see WriteEnd): transaction() sends no COMMIT. */
  private committed = false;

  constructor(
    private readonly client: pg.PoolClient,
    /** Write transactions lock the rows they read to change. */
    private readonly writing: boolean,
    private readonly secrets: Secrets,
    opening: Opening,
  ) {
    super();
    this.opening = opening;
  }

  /** Whether the transaction was opened on its connection and is not over: it needs COMMIT or ROLLBACK. */
  get open(): boolean {
    return this.opening === undefined && !this.committed;
  }

  /**
   * The ring sealing under the key the store names, read once per transaction, after
   * WRITE_OPENING took the secrets lock; a key this replica lacks is MissingSecretsKey (503).
   */
  protected sealer(where: string): Promise<Secrets> {
    this.sealing ??= this.query(SQL.metaGet, [SECRETS_KEY_ID]).then(([keyId]) =>
      this.secrets.sealingUnder(keyId, where),
    );
    return this.sealing;
  }

  /**
   * A named statement (prepared once per connection). The first also opens the transaction; one
   * sent `last` (see WriteEnd) also commits it: each in the same round trip, when its values can
   * be literals (sqlLiterals), and apart otherwise.
   */
  private async send(
    name: string,
    text: string,
    values: Value[],
    last = false,
  ): Promise<pg.QueryResult<Raw>> {
    if (this.committed) {
      throw new Error(
        `statement ${name} after the transaction's last write (see WriteEnd): please report this`,
      );
    }
    try {
      const opening = this.opening;
      if (opening === undefined && !last) return await this.client.query<Raw>({ name, text, values });
      const literals = STATEMENT_NAME.test(name) ? sqlLiterals(values) : undefined;
      if (literals === undefined) {
        if (opening !== undefined) await this.batch(opening, [], false);
        return await this.client.query<Raw>({ name, text, values }); // transaction() commits
      }
      const results = await this.batch(opening, [inlineStep(name, text, literals)], last);
      return results[results.length - (last ? 2 : 1)]!;
    } catch (e) {
      throw translate(e);
    }
  }

  /**
   * One simple query: the transaction's start when it is not sent yet, `steps` (PREPAREd on this
   * connection first, once), and COMMIT when `commit`; the results of each statement.
   */
  private async batch(
    opening: Opening | undefined,
    steps: InlineStep[],
    commit: boolean,
  ): Promise<pg.QueryResult<Raw>[]> {
    const all = opening === undefined ? steps : [...opening.steps, ...steps];
    let prepared = preparedInline.get(this.client);
    if (prepared === undefined) preparedInline.set(this.client, (prepared = new Set()));
    const sql: string[] = opening === undefined ? [] : [opening.begin];
    for (const step of all) {
      if (!prepared.has(step.name)) {
        // Not transactional: a PREPARE stays when the transaction it ran in rolls back.
        await this.client.query(`PREPARE ${step.name} AS ${step.text}`);
        prepared.add(step.name);
      }
      sql.push(`EXECUTE ${step.name}${step.literals}`);
    }
    if (commit) sql.push("COMMIT");
    this.opening = undefined;
    // node-postgres answers a simple query of several statements with a list of their results
    // (its types say one result), and one of a single statement (BEGIN alone) with its result.
    // When one fails, PostgreSQL runs none after it (COMMIT included): the transaction is left
    // aborted, and transaction() rolls it back.
    const answered: pg.QueryResult<Raw> | pg.QueryResult<Raw>[] = await this.client.query<Raw>(
      sql.join("; "),
    );
    if (commit) this.committed = true;
    return Array.isArray(answered) ? answered : [answered];
  }

  protected async rows(st: Statement<unknown>, args: readonly SqlValue[], last?: boolean): Promise<Raw[]> {
    return (await this.send(st.name, st.postgres, st.values.postgres(args) as Value[], last)).rows;
  }

  protected async changes(
    st: Statement<unknown>,
    args: readonly SqlValue[],
    last?: boolean,
  ): Promise<number> {
    const result = await this.send(st.name, st.postgres, st.values.postgres(args) as Value[], last);
    return result.rowCount ?? 0;
  }

  protected ring(): Secrets {
    return this.secrets;
  }

  protected locking(): boolean {
    return this.writing;
  }

  /** A change and its audit event in one statement: one round trip less per change. */
  protected eventsInWrites(): boolean {
    return true;
  }

  /** The key's lock, taken with the transaction's start when that is not sent yet. */
  async lockCreateKey(key: string): Promise<void> {
    const values = [LOCK_CLASS_CREATE_KEY, key];
    const literals = sqlLiterals(values);
    if (this.opening !== undefined && literals !== undefined) {
      this.opening = {
        ...this.opening,
        steps: [...this.opening.steps, inlineStep(CREATE_KEY_LOCK.name, CREATE_KEY_LOCK.text, literals)],
      };
      return;
    }
    await this.send(CREATE_KEY_LOCK.name, CREATE_KEY_LOCK.text, values);
  }
}

export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly location: string;
  private readonly pool: pg.Pool;
  private readonly poolMax: number;
  /** The change-counter query in flight, and the one queued behind it (see changeCounter). */
  private counterNow?: Promise<string>;
  /** The index by object's next bound, and the seq it holds every settled event through (see indexAuditEvents). */
  private indexBound?: { seq: number; snapshot: string };
  private indexedThrough = 0;
  private indexer?: BatchRounds;
  private counterNext?: Promise<string>;
  /** Signs met that the database may be gone (see unavailableSeen). */
  private unavailable = 0;
  /** Keyed creates' fingerprints under the store's key (none: opened by edge-service keys). */
  private fingerprints?: CreateFingerprints;

  private constructor(
    pool: pg.Pool,
    url: string,
    poolMax: number,
    private secrets: Secrets,
  ) {
    this.pool = pool;
    this.poolMax = poolMax;
    this.location = redactUrl(url);
  }

  /** Connects (a pool), and brings the schema up to date (once, whoever starts at the same time). */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const max = opts.poolSize ?? 10;
    const pool = new pg.Pool({
      connectionString: url,
      max,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      idleTimeoutMillis: 30_000,
      types,
      application_name: "edge-service",
    });
    // An idle connection's error (the database restarting) must not crash the process: the pool
    // drops that connection and opens a new one on demand.
    // A connection that breaks while checked out (between the statements of a transaction) emits
    // 'error' too: the statement in flight fails (503), and without a listener the process would.
    // Either is a sign the database may be gone: readiness asks again at the next probe.
    const store = new PostgresStore(pool, url, max, opts.secrets ?? new Secrets());
    pool.on("connect", (client) => client.on("error", () => store.unavailable++));
    pool.on("error", (e) => {
      store.unavailable++;
      opts.log?.(`postgres: idle connection lost (${e.message}); reconnecting on demand`);
    });
    try {
      await store.migrate();
    } catch (e) {
      await pool.end().catch(() => undefined);
      const err = translate(e);
      if (err instanceof StoreUnavailable) {
        throw new Error(
          `cannot reach PostgreSQL at ${store.location}: ${errorMessage(e)}. Is the server running, and the URL (host, port, database, user, password) right?`,
        );
      }
      throw err;
    }
    const every = opts.auditIndexEveryMs ?? INDEX_EVERY_MS;
    if (every > 0) {
      store.indexer = auditIndexer(store, (e) =>
        opts.log?.(`audit trail: indexing by object failed (${errorMessage(e)}); retried at the next round`),
      ).start(every);
    }
    return store;
  }

  /**
   * Runs the missing migrations in one transaction under an advisory lock: a replica starting
   * while another migrates waits for it, then finds the schema current. In the same transaction,
   * the key the secrets are sealed under is checked against this replica's (see
   * Secrets.checkStoredKeyId): replicas starting together with different keys cannot both record
   * theirs.
   */
  private async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1, 0)", [LOCK_CLASS_SCHEMA]);
      await client.query("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      const { rows } = await client.query<{ value: string }>(
        "SELECT value FROM meta WHERE key = 'schema_version'",
      );
      const current = rows[0] ? Number(rows[0].value) : 0;
      if (current > PG_SCHEMA_VERSION) {
        throw new Error(
          `the database was written by a newer edge-service (schema ${current} > ${PG_SCHEMA_VERSION}); upgrade pulumi-edge`,
        );
      }
      for (let v = current; v < PG_SCHEMA_VERSION; v++) await client.query(PG_MIGRATIONS[v]!);
      if (current < PG_SCHEMA_VERSION) {
        await client.query(
          "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          [String(PG_SCHEMA_VERSION)],
        );
      }
      await this.checkSecretsKey(client);
      await this.openFingerprints(client, current < PG_KEYED_FINGERPRINTS_SCHEMA);
      await client.query("COMMIT");
      client.release();
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(true);
      throw e;
    }
  }

  /**
   * The create fingerprint key (./fingerprints): opened, or made by the first replica to open the
   * database. This runs under the migration's advisory lock, which every replica's open takes: the
   * first makes the key and commits it before the next reads, so every replica holds the same one.
   * Sealed under the store's current key; on the upgrade to schema 6, every keyed create's earlier
   * digest is rewritten under it, in the upgrade's transaction.
   */
  private async openFingerprints(client: pg.PoolClient, upgrading: boolean): Promise<void> {
    const key = this.secrets.metaKey(
      await metaOf(client, FINGERPRINT_KEY),
      await metaOf(client, SECRETS_KEY_ID),
      `the create fingerprint key of ${this.location}`,
    );
    if (key?.record !== undefined) await setMeta(client, FINGERPRINT_KEY, key.record);
    this.fingerprints = key && new CreateFingerprints(key.bytes);
    if (!upgrading) return;
    const unkeyed = (await client.query<Raw>(SQL.unkeyedCreates.postgres)).rows.map(createdObject);
    if (unkeyed.length === 0) return;
    if (this.fingerprints === undefined) throw keyNeededToUpgrade(this.location);
    for (const o of unkeyed) {
      await client.query(createRequestSet(o.table).postgres, [this.fingerprints.upgraded(o.request), o.id]);
    }
  }

  createFingerprint(request: string): string {
    return fingerprintWith(this.fingerprints, request);
  }

  /**
   * Refuses a key ring that lacks a key the stored values are sealed under (see
   * Secrets.checkStoredKeys); records the first key on the first start with one, and the keys in
   * use after scanning a database of an earlier version (which recorded only one).
   */
  private async checkSecretsKey(client: pg.PoolClient): Promise<void> {
    const current = await metaOf(client, SECRETS_KEY_ID);
    const recorded = await metaOf(client, SECRETS_KEY_IDS);
    let inUse: string[];
    if (recorded === undefined) {
      const found = new Set<string>();
      const fingerprintKey = sealedKeyId((await metaOf(client, FINGERPRINT_KEY)) ?? "");
      if (fingerprintKey !== undefined) found.add(fingerprintKey);
      const routes = await client.query<Raw>(SQL.sealedRoutes.postgres, [SEALED_MODULES_LIKE]);
      for (const raw of routes.rows) routeSealedKeyIds(raw, found);
      const keys = await client.query<{ value: string }>(SQL.samlKeyValues.postgres);
      for (const { value } of keys.rows) {
        const kid = sealedKeyId(value);
        if (kid !== undefined) found.add(kid);
      }
      inUse = [...found];
    } else inUse = parseKeyIds(recorded);
    const record = this.secrets.checkStoredKeys(
      { current, inUse, scanned: recorded === undefined },
      this.location,
    );
    if (record === undefined) return;
    await setMeta(client, SECRETS_KEY_ID, record.current);
    await setMeta(client, SECRETS_KEY_IDS, record.inUse.join(","));
  }

  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (e) {
      throw this.translated(e);
    }
  }

  /** Runs `fn` in a transaction on one connection; a broken connection is dropped from the pool. */
  private async transaction<T>(
    opening: Opening,
    writing: boolean,
    fn: (tx: StoreTx) => Promise<T>,
  ): Promise<T> {
    const client = await this.connect();
    const tx = new PgTx(client, writing, this.secrets, opening);
    let broken = false;
    try {
      const result = await fn(tx);
      if (tx.open) await client.query("COMMIT");
      return result;
    } catch (e) {
      const err = this.translated(e);
      broken = err instanceof StoreUnavailable;
      if (!broken && tx.open) await client.query("ROLLBACK").catch(() => (broken = true));
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async write<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transaction(WRITE_OPENING, true, fn);
      } catch (e) {
        const code = errorField(e, "code");
        if (typeof code !== "string" || !RETRYABLE.has(code) || attempt >= 5) throw e;
      }
    }
  }

  read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.transaction(READ_OPENING, false, fn);
  }

  /**
   * The database's current snapshot as text (xmin:xmax:in-progress xids): it changes whenever any
   * transaction that wrote commits or aborts, on any replica. One query is shared by the GETs that
   * arrive while it runs; a GET arriving after a query was sent waits for the next one, so the
   * value it sees was read after it arrived (never older than a write acknowledged before it).
   * Preceded by the server's start time: after a failover (or a crash and restart) the server is
   * another, whose snapshot may read as the old one's did over other rows (the transaction ids
   * the old primary gave out but never replicated are given out again).
   */
  changeCounter(): Promise<string> {
    if (this.counterNext) return this.counterNext;
    if (!this.counterNow) {
      const now = this.readCounter().finally(() => (this.counterNow = undefined));
      this.counterNow = now;
      return now;
    }
    const next = this.counterNow
      .catch(() => undefined)
      .then(() => {
        this.counterNext = undefined;
        return this.changeCounter();
      });
    this.counterNext = next;
    return next;
  }

  private async readCounter(): Promise<string> {
    const text = "SELECT pg_postmaster_start_time()::text || ' ' || pg_current_snapshot()::text AS v";
    return String(await this.poolValue("change_counter", text, []));
  }

  private async readSnapshot(): Promise<string> {
    return String(await this.poolValue("current_snapshot", "SELECT pg_current_snapshot()::text AS v", []));
  }

  /**
   * Two queries on a pooled connection: whether the database takes writes, and the schema version
   * it holds. Bounded (the connection wait is the pool's; a query that gets no answer is given up
   * after 2 s and its connection dropped), so a probe always hears back.
   */
  async whyNotReady(): Promise<string | undefined> {
    try {
      // A standby (a failover's new primary a moment before its promotion completes, or a URL
      // that names a replica) answers reads and refuses every write with 25006.
      const readOnly = await this.pool.query<{ v: string }>(
        bounded({
          name: "readiness_read_only",
          text: "SELECT current_setting('transaction_read_only') AS v",
        }),
      );
      if (readOnly.rows[0]?.v === "on") {
        return `the database at ${this.location} accepts no writes (a standby, or default_transaction_read_only on): the service is ready again once it takes writes (point it at the primary)`;
      }
      const { rows } = await this.pool.query<Raw>(
        bounded({ name: SQL.metaReadiness.name, text: SQL.metaReadiness.postgres }),
      );
      const meta = new Map(rows.map((r) => SQL.metaReadiness.row(r, this.secrets)));
      const version = Number(meta.get("schema_version") ?? 0);
      // Every request that seals or opens a secret would answer 503 (issue 35, finding 7).
      if (version === PG_SCHEMA_VERSION) {
        return this.secrets.whyCannotServe(meta.get(SECRETS_KEY_ID), meta.get(SECRETS_KEY_IDS));
      }
      return version > PG_SCHEMA_VERSION
        ? `the database at ${this.location} was upgraded to schema ${version} by a newer edge-service (this one runs schema ${PG_SCHEMA_VERSION}): upgrade this replica`
        : `the database at ${this.location} holds schema ${version}, this edge-service runs ${PG_SCHEMA_VERSION}: restart the replica to migrate it`;
    } catch (e) {
      this.unavailable++;
      return `PostgreSQL at ${this.location} cannot be reached (${errorMessage(e)}); the service answers 503 until it is back`;
    }
  }

  unavailableSeen(): number {
    return this.unavailable;
  }

  /** A pg error as the store's own (see translate); a lost database counted (see unavailableSeen). */
  private translated(e: unknown): unknown {
    const err = translate(e);
    if (err instanceof StoreUnavailable) this.unavailable++;
    return err;
  }

  /** Rewrites one row of the store's metadata (see Store.probeWrite), bounded like whyNotReady. */
  async probeWrite(): Promise<void> {
    try {
      await this.pool.query(
        bounded({ text: SQL.metaSet.postgres, values: ["write_probe", new Date().toISOString()] }),
      );
    } catch (e) {
      throw this.translated(e);
    }
  }

  poolStats(): PoolStats {
    const { totalCount, idleCount, waitingCount } = this.pool;
    return { inUse: totalCount - idleCount, idle: idleCount, waiting: waitingCount, max: this.poolMax };
  }

  async dump(): Promise<StoreDump> {
    const client = await this.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const out = {} as StoreDump;
      for (const t of DATA_TABLES) {
        out[t] = (
          await client.query<Record<string, string | number>>(`SELECT * FROM ${t} ORDER BY 1, 2`)
        ).rows;
      }
      out.create_fingerprint_key = (await metaOf(client, FINGERPRINT_KEY)) ?? null;
      await client.query("COMMIT");
      return out;
    } finally {
      client.release();
    }
  }

  async load(dump: StoreDump): Promise<void> {
    const client = await this.connect();
    try {
      await client.query("BEGIN");
      const live = await client.query<Raw>(SQL.serversLive.postgres, [LIVE_SLACK_MS]);
      if (live.rows.length > 0) {
        throw serversOnTarget(
          live.rows.map((r) => SQL.serversLive.row(r, this.secrets)),
          "postgres",
        );
      }
      for (const t of DATA_TABLES) {
        const { rows } = await client.query(`SELECT 1 FROM ${t} LIMIT 1`);
        if (rows.length > 0) throw targetNotEmpty(t, "postgres");
      }
      // Derived from the events (none here): emptied, the indexer rebuilds it from the copied ones.
      await client.query("DELETE FROM audit_by_object");
      for (const t of DATA_TABLES) {
        const rows = dump[t];
        if (rows.length === 0) continue;
        const cols = Object.keys(rows[0]!);
        // Batches of rows per INSERT, under PostgreSQL's 65,535 parameters per statement.
        const batch = Math.max(1, Math.floor(30_000 / cols.length));
        for (let i = 0; i < rows.length; i += batch) {
          const slice = rows.slice(i, i + batch);
          const values: Value[] = [];
          const tuples = slice.map((row) => {
            const marks = cols.map((c) => {
              const v = row[c] ?? null;
              values.push(typeof v === "string" && BYTEA_COLUMNS[t]?.includes(c) ? bytes(v) : v);
              return `$${values.length}`;
            });
            return `(${marks.join(", ")})`;
          });
          await client.query(`INSERT INTO ${t} (${cols.join(", ")}) VALUES ${tuples.join(", ")}`, values);
        }
        // Seqs copied as they were (routes' order, audit events' ids): the sequence continues after
        // the highest, so a new row (event) on the target sorts after every copied one.
        if (cols.includes("seq")) {
          await client.query(
            `SELECT setval(pg_get_serial_sequence('${t}', 'seq'), (SELECT max(seq) FROM ${t}))`,
          );
        }
      }
      // The copied values' keys, scanned: a key the ring lacks refuses the whole copy.
      await setMeta(client, SECRETS_KEY_IDS, undefined);
      await this.checkSecretsKey(client);
      // The copied objects' create fingerprint key replaces this database's own (./fingerprints),
      // sealed under its current key.
      const copied = dump.create_fingerprint_key;
      const key =
        copied === null
          ? undefined
          : this.secrets.metaKey(
              copied,
              await metaOf(client, SECRETS_KEY_ID),
              `the create fingerprint key copied into ${this.location}`,
            );
      if (key !== undefined) await setMeta(client, FINGERPRINT_KEY, key.record ?? copied!);
      await client.query("COMMIT");
      if (key !== undefined) this.fingerprints = new CreateFingerprints(key.bytes);
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw this.translated(e);
    } finally {
      client.release();
    }
  }

  /**
   * Re-seals every secret under `to` in one transaction (`edge-service secrets rotate`; see
   * Store.resealSecrets): the secrets lock taken exclusive first (writers wait at their start,
   * then seal under `to`), the tables locked against any other writer. Then VACUUM of the two
   * tables: the old values' dead tuples are removed and their space freed for reuse (their bytes
   * stay in the files until overwritten, and in WAL segments until recycled: see the README).
   */
  async resealSecrets(to: SecretsKey, check?: (live: LiveServer[]) => void): Promise<Resealed> {
    const ring = new Secrets([...this.secrets.keys, to], to);
    const client = await this.connect();
    let n = 0;
    let servers: LiveServer[];
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1, 0)", [LOCK_CLASS_SECRETS]);
      await client.query("LOCK TABLE routes, route_saml_keys, meta IN EXCLUSIVE MODE");
      // Read once every writer waits: a server's beat is a write, and takes the secrets lock shared.
      servers = (await client.query<Raw>(SQL.serversLive.postgres, [LIVE_SLACK_MS])).rows.map((r) =>
        SQL.serversLive.row(r, ring),
      );
      check?.(servers);
      const routes = await client.query<Raw>(SQL.routeModulesAll.postgres);
      for (const raw of routes.rows) {
        const [id, modules, secrets] = resealRouteModules(raw, ring, ring);
        if (secrets === 0) continue;
        await client.query(SQL.routeModulesSet.postgres, [modules, id]);
        n += secrets;
      }
      const keys = await client.query<Raw>(SQL.samlKeysAll.postgres);
      for (const raw of keys.rows) {
        const [routeId, privateKey] = resealSamlKey(raw, ring, ring);
        await client.query(SQL.samlKeySet.postgres, [privateKey, routeId]);
        n++;
      }
      const fingerprintKey = ring.metaKey(
        await metaOf(client, FINGERPRINT_KEY),
        to.id,
        `the create fingerprint key of ${this.location}`,
      );
      if (fingerprintKey?.record !== undefined) await setMeta(client, FINGERPRINT_KEY, fingerprintKey.record);
      await setMeta(client, SECRETS_KEY_ID, to.id);
      await setMeta(client, SECRETS_KEY_IDS, to.id);
      await client.query("COMMIT");
      this.secrets = ring;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release();
      throw this.translated(e);
    }
    try {
      // Outside any transaction (VACUUM refuses to run in one); a replica's open snapshot older
      // than the commit keeps the dead tuples it may still see: VACUUM VERBOSE would say so.
      await client.query("VACUUM routes, route_saml_keys");
      return {
        secrets: n,
        servers,
        purge:
          "VACUUM of routes and route_saml_keys: the old values' dead tuples removed; their bytes remain on disk until the space is reused, and in WAL segments and backups until they expire",
      };
    } catch (e) {
      return {
        secrets: n,
        servers,
        purge: `re-sealed, but VACUUM failed (${errorMessage(e)}): run VACUUM routes, route_saml_keys yourself`,
      };
    } finally {
      client.release();
    }
  }

  async pruneAuditEvents(before: string, limit: number): Promise<number> {
    return this.write(async (tx) => {
      const pruned = await tx.run(SQL.auditPrune, [before, limit]);
      await tx.run(SQL.auditPruneIndex, [limit]);
      return pruned;
    });
  }

  /**
   * PostgreSQL commits events out of seq order (a transaction takes its seq at its insert and may
   * commit after one that took a later seq), so the index by object only takes seqs no
   * transaction can still commit. The bound: the highest seq allocated, read first, then a
   * snapshot, read after it; once every transaction running at that snapshot has ended (the
   * current snapshot's xmin has reached its xmax), every seq up to the one read is committed or
   * never will be. That holds because a transaction has its xid before it takes its event's seq:
   * an event is written after its change, and a write takes the xid (in one statement with the
   * change, the event reads the row written: see withAuditEvent).
   * A round waits for its bound to settle (about one round), so the tail a lookup scans is about
   * two rounds of writes. Replicas may index at once: the inserts skip a seq already there.
   */
  async indexAuditEvents(limit: number): Promise<number> {
    const bound = this.indexBound;
    if (bound === undefined || bound.seq <= this.indexedThrough) {
      this.indexBound = await this.allocatedBound();
      return 0;
    }
    if (!(await this.settled(bound.snapshot))) return 0;
    const n = await this.write((tx) => tx.run(SQL.auditIndex, [bound.seq, limit]));
    if (n < limit) {
      this.indexedThrough = bound.seq;
      this.indexBound = await this.allocatedBound();
    }
    return n;
  }

  private async allocatedBound(): Promise<{ seq: number; snapshot: string }> {
    const seq = await this.poolValue(
      "audit_allocated",
      "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('audit_events', 'seq')::regclass), 0) AS v",
      [],
    );
    // A statement after the sequence's read: its snapshot is later than every seq read.
    return { seq: Number(seq), snapshot: await this.readSnapshot() };
  }

  private async settled(snapshot: string): Promise<boolean> {
    const v = await this.poolValue(
      "audit_settled",
      "SELECT pg_snapshot_xmin(pg_current_snapshot()) >= pg_snapshot_xmax($1::pg_snapshot) AS v",
      [snapshot],
    );
    return v === true;
  }

  /** The column `v` of a one-row query on a pooled connection. */
  private async poolValue(name: string, text: string, values: Value[]): Promise<unknown> {
    try {
      const { rows } = await this.pool.query<{ v: unknown }>({ name, text, values });
      return rows[0]?.v;
    } catch (e) {
      throw this.translated(e);
    }
  }

  async close(): Promise<void> {
    this.indexer?.stop();
    await this.pool.end();
  }
}

/** A row of the meta table, read on `client`. */
async function metaOf(client: pg.PoolClient, key: string): Promise<string | undefined> {
  return (await client.query<{ value: string }>(SQL.metaGet.postgres, [key])).rows[0]?.value;
}

/** Sets (or, with no value, removes) a row of the meta table. */
async function setMeta(client: pg.PoolClient, key: string, value: string | undefined): Promise<void> {
  if (value === undefined) await client.query(SQL.metaDelete.postgres, [key]);
  else await client.query(SQL.metaSet.postgres, [key, value]);
}
