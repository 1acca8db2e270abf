/**
 * The PostgreSQL store: several `edge-service serve` replicas on one database. node-postgres
 * (`pg`, pure JavaScript) with a connection pool; every write one transaction (READ COMMITTED,
 * the rows it reads to change locked), every read one REPEATABLE READ snapshot. This file holds
 * what is PostgreSQL's own (the seam of ./store-driver): the pool, how each kind of transaction
 * starts and which locks it takes, the DDL, snapshots and VACUUM; ./store-postgres-conn how a
 * transaction's statements go over the wire. What a store does is ./store-sql's, for both stores.
 *
 * - Schema: versioned migrations, run at start-up under a transaction-level advisory lock, so
 *   replicas starting together migrate once and the others wait and see it done.
 * - A PATCH reads its route FOR UPDATE (the edge is read without a lock): concurrent PATCHes of one route, through any replicas,
 *   take turns, and each sees the other's change (no lost module).
 * - Two creates of one (edge, match_type, match) race on the unique key: one commits, the other
 *   gets 23505, which becomes UniqueViolation (409).
 * - Creates with one `Idempotency-Key` take an advisory lock on the key: the second waits for the
 *   first's commit and then reads what it remembered.
 * - A database whose text is not UTF-8 (LATIN1, SQL_ASCII) is refused at open, and readiness
 *   says so (encodingProblem in ./store-steps): it could not keep every character a client sends.
 * - The change counter of the GET answer cache is the database's snapshot
 *   (`pg_current_snapshot()`): it moves at every commit of any writer, whichever replica.
 * - A database that cannot be reached (restart, failover, no free connection within 5 s) is
 *   StoreUnavailable: the service answers 503 with Retry-After, and recovers by itself when the
 *   database is back (the pool opens new connections).
 */
import pg from "pg";
import { errorField, errorMessage } from "../../sdk/contract";
import {
  createMarkColumns,
  firstTables,
  IDEMPOTENCY_KEYS_TABLE,
  KEYED_FINGERPRINTS,
  MODULE_TABLES,
  sharedMigrations,
} from "./migrations-shared";
import type { Raw } from "./rows";
import { Secrets } from "../secrets";
import { type PoolStats, type SqlValue, type Statement, StoreUnavailable } from "./store";
import { type Conn, runSteps, type StoreDriver, type StoreSchema, type TxMode } from "./store-driver";
import {
  LOCK_CLASS_SCHEMA,
  LOCK_CLASS_SECRETS,
  type Opening,
  PgConn,
  translate,
  type Value,
} from "./store-postgres-conn";
import { SqlStore } from "./store-sql";
import { migrate } from "./store-steps";

/**
 * Ordered schema migrations of the PostgreSQL store; index + 1 is the version. Never edit one.
 * The strings a client chooses (descriptions, metadata, a route's match) are BYTEA, their UTF-8
 * bytes (see FirstColumns); JSON columns are TEXT.
 */
export const PG_MIGRATIONS: readonly string[] = [
  `${firstTables({ seq: "BIGSERIAL PRIMARY KEY", clientText: "BYTEA" }, true)}
   ${MODULE_TABLES}
   ${IDEMPOTENCY_KEYS_TABLE}`,
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
  // As SQLite's 5 to 9.
  ...sharedMigrations("postgres"),
];
/** The schema whose upgrade keys the keyed creates' digests (see openFingerprints in ./store-steps). */
export const PG_KEYED_FINGERPRINTS_SCHEMA = PG_MIGRATIONS.indexOf(KEYED_FINGERPRINTS) + 1;
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

const SCHEMA: StoreSchema = { migrations: PG_MIGRATIONS, keyedFingerprints: PG_KEYED_FINGERPRINTS_SCHEMA };

/**
 * A write transaction's start: the secrets lock taken shared, so that it is always taken before
 * any table lock (no deadlock with `secrets rotate`, which takes it exclusive first). The key new
 * secrets are sealed under is read after it, in the transaction, by a write that seals something
 * (SqlTx.sealer; READ COMMITTED: each statement its own snapshot), so that a rotation is either
 * wholly before this transaction or wholly after. Sent with the transaction's first statement
 * (see PgConn).
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
/**
 * `secrets rotate`'s start: the secrets lock taken exclusive first (writers wait at their start,
 * then seal under the new key), the tables it rewrites locked against any other writer.
 */
const ROTATE_OPENING: Opening = {
  begin: `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS_SECRETS}, 0); LOCK TABLE routes, route_saml_keys, meta IN EXCLUSIVE MODE`,
  steps: [],
};
/** A migration's start: replicas starting together take turns, the first migrates, the others find it done. */
const MIGRATE_OPENING: Opening = {
  begin: `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS_SCHEMA}, 0)`,
  steps: [],
};
const OPENINGS: Record<TxMode, Opening> = {
  read: READ_OPENING,
  write: WRITE_OPENING,
  rotate: ROTATE_OPENING,
};

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

const types = { getTypeParser: textParser };
/**
 * A probe's query, given up after 2 s and its connection dropped: node-postgres reads
 * `query_timeout` from a query's config too (its types name it only for a client's).
 */
const bounded = (config: pg.QueryConfig): pg.QueryConfig => Object.assign(config, { query_timeout: 2000 });

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

/** A transaction may be retried whole: deadlock, serialization failure. */
const RETRYABLE: ReadonlySet<string> = new Set(["40P01", "40001"]);

/** The pool of a PostgreSQL store, and every transaction on it (the seam of ./store-driver). */
class PgDriver implements StoreDriver {
  readonly dialect = "postgres";
  readonly schema = SCHEMA;
  readonly location: string;
  readonly place: string;
  /** The change-counter query in flight, and the one queued behind it (see changeCounter). */
  private counterNow?: Promise<string>;
  private counterNext?: Promise<string>;
  /** The index by object's next bound, and the seq it holds every settled event through (see auditIndexBound). */
  private indexBound?: { seq: number; snapshot: string };
  private indexedThrough = 0;
  /** Signs met that the database may be gone (see unavailableSeen). */
  private unavailable = 0;

  constructor(
    private readonly pool: pg.Pool,
    url: string,
    private readonly poolMax: number,
  ) {
    this.location = redactUrl(url);
    this.place = `the database at ${this.location}`;
  }

  /** A pool of connections to `url` (none is opened before the first query). */
  static connect(url: string, opts: PostgresStoreOptions): PgDriver {
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
    const driver = new PgDriver(pool, url, max);
    pool.on("connect", (client) => client.on("error", () => driver.unavailable++));
    pool.on("error", (e) => {
      driver.unavailable++;
      opts.log?.(`postgres: idle connection lost (${e.message}); reconnecting on demand`);
    });
    return driver;
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

  private async client(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (e) {
      throw this.translated(e);
    }
  }

  /** Runs `fn` in a transaction started by `opening` on one connection; a broken connection is dropped from the pool. */
  private async once<T>(opening: Opening, locking: boolean, fn: (conn: Conn) => Promise<T>): Promise<T> {
    const client = await this.client();
    const conn = new PgConn(client, opening, locking);
    let broken = false;
    try {
      const result = await fn(conn);
      if (conn.open) await client.query("COMMIT");
      return result;
    } catch (e) {
      const err = this.translated(e);
      broken = err instanceof StoreUnavailable;
      if (!broken && conn.open) await client.query("ROLLBACK").catch(() => (broken = true));
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** A write that deadlocked or failed to serialize is run again whole (at most five times). */
  async transaction<T>(mode: TxMode, fn: (conn: Conn) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(OPENINGS[mode], mode !== "read", fn);
      } catch (e) {
        const code = errorField(e, "code");
        if (mode === "read" || typeof code !== "string" || !RETRYABLE.has(code) || attempt >= 5) throw e;
      }
    }
  }

  /** The migration's transaction (see MIGRATE_OPENING). */
  migrating<T>(fn: (conn: Conn) => Promise<T>): Promise<T> {
    return this.once(MIGRATE_OPENING, true, fn);
  }

  /**
   * One statement on a pooled connection, bounded: the connection wait is the pool's, and a query
   * that gets no answer is given up after 2 s and its connection dropped.
   */
  async alone(st: Statement<unknown>, args: readonly SqlValue[]): Promise<Raw[]> {
    try {
      const { rows } = await this.pool.query<Raw>(
        bounded({ name: st.name, text: st.postgres, values: st.values.postgres(args) }),
      );
      return rows;
    } catch (e) {
      throw this.translated(e);
    }
  }

  unreachable(e: unknown): string {
    this.unavailable++;
    return `PostgreSQL at ${this.location} cannot be reached (${errorMessage(e)}); the service answers 503 until it is back`;
  }

  /**
   * Whether the database takes writes: a standby (a failover's new primary a moment before its
   * promotion completes, or a URL that names a replica) answers reads and refuses every write
   * with 25006. Whether it answers at all is what readiness' read finds.
   */
  async whyNotUsable(): Promise<string | undefined> {
    let readOnly: string | undefined;
    try {
      const { rows } = await this.pool.query<{ v: string }>(
        bounded({
          name: "readiness_read_only",
          text: "SELECT current_setting('transaction_read_only') AS v",
        }),
      );
      readOnly = rows[0]?.v;
    } catch (e) {
      return this.unreachable(e);
    }
    return readOnly === "on"
      ? `${this.place} accepts no writes (a standby, or default_transaction_read_only on): the service is ready again once it takes writes (point it at the primary)`
      : undefined;
  }

  /** The database's own: a full disk fails the probe's write itself. */
  checkRoomToWrite(): void {}

  /**
   * VACUUM of the two tables a rotation rewrites, outside any transaction (VACUUM refuses to run
   * in one): the old values' dead tuples are removed and their space freed for reuse (their bytes
   * stay in the files until overwritten, and in WAL segments until recycled: see the README). A
   * replica's open snapshot older than the commit keeps the dead tuples it may still see.
   */
  async purgeFreedBytes(): Promise<string> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.client();
      await client.query("VACUUM routes, route_saml_keys");
      return "VACUUM of routes and route_saml_keys: the old values' dead tuples removed; their bytes remain on disk until the space is reused, and in WAL segments and backups until they expire";
    } catch (e) {
      return `re-sealed, but VACUUM failed (${errorMessage(e)}): run VACUUM routes, route_saml_keys yourself`;
    } finally {
      client?.release();
    }
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
  async auditIndexBound(): Promise<number | undefined> {
    const bound = this.indexBound;
    if (bound === undefined || bound.seq <= this.indexedThrough) {
      this.indexBound = await this.allocatedBound();
      return undefined;
    }
    return (await this.settled(bound.snapshot)) ? bound.seq : undefined;
  }

  async auditIndexedThrough(seq: number): Promise<void> {
    this.indexedThrough = seq;
    this.indexBound = await this.allocatedBound();
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

  poolStats(): PoolStats {
    const { totalCount, idleCount, waitingCount } = this.pool;
    return { inUse: totalCount - idleCount, idle: idleCount, waiting: waitingCount, max: this.poolMax };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

export class PostgresStore extends SqlStore {
  private constructor(
    private readonly pg: PgDriver,
    secrets: Secrets,
  ) {
    super(pg, secrets);
  }

  /** Connects (a pool), and brings the schema up to date (once, whoever starts at the same time). */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const driver = PgDriver.connect(url, opts);
    const store = new PostgresStore(driver, opts.secrets ?? new Secrets());
    let fingerprints;
    try {
      fingerprints = await driver.migrating((conn) =>
        runSteps(migrate(SCHEMA, store.ring, driver.place), conn),
      );
    } catch (e) {
      await driver.close().catch(() => undefined);
      if (e instanceof StoreUnavailable) {
        throw new Error(
          `cannot reach PostgreSQL at ${driver.location}: ${errorMessage(e.cause ?? e)}. Is the server running, and the URL (host, port, database, user, password) right?`,
        );
      }
      throw e;
    }
    store.opened(fingerprints, opts.auditIndexEveryMs, (e) =>
      opts.log?.(`audit trail: indexing by object failed (${errorMessage(e)}); retried at the next round`),
    );
    return store;
  }

  poolStats(): PoolStats {
    return this.pg.poolStats();
  }
}
