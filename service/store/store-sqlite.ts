/**
 * The SQLite store: one database file (libsql, prebuilt binaries), WAL mode so that a standalone
 * server and an in-process provider can share one data directory. This file holds what is
 * SQLite's own (the seam of ./store-driver): the connection and its pragmas, the data directory's
 * files, transactions queued on the one connection (a write group commits several writes), the
 * DDL, and the WAL's upkeep. What a store does is ./store-sql's, for both stores.
 *
 * The statements are synchronous: the asynchronous `Store` methods only queue transactions on the
 * one connection (one at a time, so in-process requests never interleave inside one); BEGIN
 * IMMEDIATE serialises writers across processes. Its open is synchronous too (the procedures of
 * ./store-steps run to the end on it at once).
 */
import { join, resolve } from "node:path";
import Database from "libsql";
import { errorField, errorMessage } from "../../sdk/contract";
import {
  createMarkColumns,
  firstTables,
  IDEMPOTENCY_KEYS_TABLE,
  KEYED_FINGERPRINTS,
  MODULE_TABLES,
  routesTable,
  sharedMigrations,
} from "./migrations-shared";
import { type Raw, rawRow } from "./rows";
import { Secrets } from "../secrets";
import { SQL } from "./statements";
import { type SqlValue, type Statement, StoreUnavailable, UniqueViolation } from "./store";
import type { Conn, StoreDriver, StoreSchema, SyncConn, TxMode } from "./store-driver";
import { runNow } from "./store-driver";
import { SqlStore } from "./store-sql";
import { migrate } from "./store-steps";
import { DatabaseFile, secureDatabaseFiles, secureDataDir } from "./store-sqlite-files";
import { type QueuedConnection, TransactionQueue } from "./store-sqlite-queue";
import { WalIndexWatch } from "./wal-index";
import { WalMaintenance } from "./wal-maintenance";

/** The first tables' column types (see FirstColumns). */
const FIRST = { seq: "INTEGER PRIMARY KEY AUTOINCREMENT", clientText: "TEXT" };

/** Ordered schema migrations; the index + 1 is the schema version it produces. Never edit one. */
export const MIGRATIONS: readonly string[] = [
  `${firstTables(FIRST, false)}
   CREATE TABLE route_modules (
     route_id TEXT NOT NULL REFERENCES routes (id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     config TEXT NOT NULL,
     PRIMARY KEY (route_id, name)
   );
   ${MODULE_TABLES}`,
  // Idempotency keys of creates: a retried POST answers what the first one created (reliability).
  IDEMPOTENCY_KEYS_TABLE,
  // A route's modules move into its row (one JSON object), and its seq is the plain rowid: a
  // create wrote 13–14 pages (AUTOINCREMENT's sqlite_sequence, route_modules and its key index
  // over scattered pages), now 6 (BENCHMARKS.md, fix 9). The rowid is still max + 1, so the newest
  // route still sorts first.
  `${routesTable("routes_v3", { ...FIRST, seq: "INTEGER PRIMARY KEY" }, true)}
   INSERT INTO routes_v3 (seq, id, edge_id, match_type, match, description, metadata, created_at, modules)
     SELECT seq, id, edge_id, match_type, match, description, metadata, created_at,
       COALESCE((SELECT json_group_object(name, json(config)) FROM route_modules WHERE route_id = routes.id), '{}')
     FROM routes;
   DROP TABLE route_modules;
   DROP TABLE routes;
   ALTER TABLE routes_v3 RENAME TO routes;
   CREATE INDEX routes_by_edge ON routes (edge_id, seq);`,
  // A create's Idempotency-Key moves onto the object it made, for the object's lifetime (exactly-once
  // creates across Pulumi runs: a key is derived again by the next run, days later). The keys
  // remembered so far move with it; answers to keys whose object is gone are dropped.
  `${createMarkColumns("sqlite", "edges")}
   ${createMarkColumns("sqlite", "routes")}
   ${createMarkColumns("sqlite", "tls_ip_restrictions")}
   UPDATE edges SET (create_key, create_request) =
     (SELECT key, request FROM idempotency_keys WHERE json_extract(response, '$.id') = edges.id)
     WHERE id IN (SELECT json_extract(response, '$.id') FROM idempotency_keys);
   UPDATE routes SET (create_key, create_request) =
     (SELECT key, request FROM idempotency_keys WHERE json_extract(response, '$.id') = routes.id)
     WHERE id IN (SELECT json_extract(response, '$.id') FROM idempotency_keys);
   DROP TABLE idempotency_keys;`,
  ...sharedMigrations("sqlite"),
];
/** The schema whose upgrade keys the keyed creates' digests (see openFingerprints in ./store-steps). */
export const KEYED_FINGERPRINTS_SCHEMA = MIGRATIONS.indexOf(KEYED_FINGERPRINTS) + 1;
export const SCHEMA_VERSION = MIGRATIONS.length;

const SCHEMA: StoreSchema = { migrations: MIGRATIONS, keyedFingerprints: KEYED_FINGERPRINTS_SCHEMA };

export interface StoreOptions {
  /** Checkpoint from a worker thread (servers); default: SQLite's automatic checkpoints. */
  backgroundCheckpoints?: boolean;
  /** With background checkpoints: WAL length in pages past which it is started over. */
  rewindWalAbovePages?: number;
  /** Seals the secrets written, opens those read (see ./secrets); default: no key, unsealed. */
  secrets?: Secrets;
  /** How often the audit trail's index by object catches up (see ./audit); 0: never (lookups scan). */
  auditIndexEveryMs?: number;
}

/** The one connection of a SQLite store, and every transaction on it (the seam of ./store-driver). */
class SqliteDriver implements StoreDriver, SyncConn, QueuedConnection {
  readonly dialect = "sqlite";
  readonly schema = SCHEMA;
  /** Never: a write transaction is BEGIN IMMEDIATE, writers already take turns. */
  readonly locking = false;
  /** In process, a statement costs no round trip: an event is a statement of its own. */
  readonly eventsInWrites = false;
  readonly place: string;
  private readonly statements = new Map<string, Database.Statement>();
  /** Write transactions run on this connection (SQLite's data_version does not count them). */
  private localWrites = 0;
  /** Commits by any connection, read from the WAL index (file databases in WAL mode). */
  private walWatch?: WalIndexWatch;
  /** The fallback: `PRAGMA data_version` (commits by other connections). */
  private dataVersion?: Database.Statement;
  /** A server's checkpoints off the request path (see WalMaintenance). */
  private wal?: WalMaintenance;
  /** The database file the connection opened (none in memory). */
  private readonly file?: DatabaseFile;
  /** The transactions of the connection, one at a time (writes grouped). */
  private readonly queue: TransactionQueue;
  /** Set by close(): libsql aborts the process (a Rust panic) on a statement run after it. */
  private closed = false;

  private constructor(
    private readonly db: Database.Database,
    readonly location: string,
    private readonly dataDir: string | undefined,
  ) {
    this.place = dataDir === undefined ? "the in-memory store" : `the data directory ${dataDir}`;
    if (dataDir !== undefined) this.file = new DatabaseFile(location);
    this.queue = new TransactionQueue(this, (writes) => {
      this.localWrites += writes; // counted even when rolled back: a spurious change only costs a re-render
      try {
        this.wal?.afterWrite(); // once per commit: commits are what grow the WAL
      } catch {
        // A checkpoint on this connection failed: the writes are committed all the same, and the
        // next commit (or the worker) checkpoints again.
      }
    });
  }

  /** The connection to the database of a data directory (made and tightened as needed), or ":memory:". */
  static open(dataDir: string): SqliteDriver {
    const dir = dataDir === ":memory:" ? undefined : resolve(dataDir);
    if (dir !== undefined) {
      secureDataDir(dir);
      secureDatabaseFiles(dir);
    }
    const location = dir === undefined ? ":memory:" : join(dir, "edge.db");
    const db = new Database(location);
    db.pragma("busy_timeout = 10000");
    if (dir !== undefined) {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
    }
    db.pragma("foreign_keys = ON");
    // 16 MiB of page cache (SQLite's default is 2): with 10,000 routes, a PATCH of a random one
    // otherwise reads its pages from the OS, 1.6× the time it takes among 100 (BENCHMARKS.md).
    db.pragma("cache_size = -16384");
    return new SqliteDriver(db, location, dir);
  }

  /**
   * Runs `fn` in the one transaction that brings the schema up to date. A migration may rebuild a
   * table (SQLite's documented procedure): foreign keys must be off while it does, or dropping the
   * old table would cascade into its children, and the pragma only takes effect outside a
   * transaction. So they are off for the whole of it (the references are checked before the
   * commit: SQL.brokenReferences).
   */
  migrating<T>(fn: (conn: SyncConn) => T): T {
    this.db.pragma("foreign_keys = OFF");
    try {
      return this.db.transaction(() => fn(this)).immediate();
    } finally {
      this.db.pragma("foreign_keys = ON");
    }
  }

  /**
   * After the migration: the -wal and -shm files exist now (an older version's are tightened
   * too, and the WAL index is read from the -shm file); a server checkpoints off the request path.
   */
  started(opts: StoreOptions): void {
    if (this.dataDir === undefined) return;
    secureDatabaseFiles(this.dataDir);
    this.walWatch = WalIndexWatch.open(this.location);
    if (opts.backgroundCheckpoints) {
      this.wal = new WalMaintenance(this.db, this.location, {
        rewindWalAbovePages: opts.rewindWalAbovePages,
      });
    }
  }

  // ------------------------------------------------------------------ statements (see Conn)

  rows(st: Statement<unknown>, args: readonly SqlValue[]): Raw[] {
    try {
      if (st.returning !== undefined) {
        const { lastInsertRowid } = this.sql(st.sqlite).run(...st.values.sqlite(args));
        return [{ [st.returning]: Number(lastInsertRowid) }];
      }
      return this.sql(st.sqlite)
        .all(...st.values.sqlite(args))
        .map(rawRow);
    } catch (e) {
      throw isUniqueViolation(e) ? new UniqueViolation() : e;
    }
  }

  changes(st: Statement<unknown>, args: readonly SqlValue[]): number {
    try {
      return this.sql(st.sqlite).run(...st.values.sqlite(args)).changes;
    } catch (e) {
      throw isUniqueViolation(e) ? new UniqueViolation() : e;
    }
  }

  first(st: Statement<unknown>, args: readonly SqlValue[]): Raw | undefined {
    const row: unknown = this.sql(st.sqlite).get(...st.values.sqlite(args));
    return row === undefined ? undefined : rawRow(row);
  }

  exec(ddl: string): void {
    this.db.exec(ddl);
  }

  /** Nothing to do: transactions on this connection run one at a time, writers across processes too. */
  lockCreateKey(_key: string): Promise<void> {
    return Promise.resolve();
  }

  /**
   * The statement for `source`, prepared once per connection and reused: preparing costs several
   * times more than running these small queries, and every statement left to the garbage
   * collector holds native memory until it is finalized.
   */
  private sql(source: string): Database.Statement {
    this.assertOpen();
    let statement = this.statements.get(source);
    if (statement === undefined) {
      statement = this.db.prepare(source);
      this.statements.set(source, statement);
    }
    return statement;
  }

  /**
   * A statement on a closed connection would abort the process (libsql panics): a write queued as
   * the store closes, a transaction waiting on something else meanwhile, fail instead, as a store
   * that cannot be reached.
   */
  assertOpen(): void {
    if (this.closed) throw new StoreUnavailable(`the store at ${this.location} is closed`);
  }

  get inTransaction(): boolean {
    return !this.closed && this.db.inTransaction;
  }

  control(sql: string): void {
    this.sql(sql).run();
  }

  // ------------------------------------------------------------------ transactions

  transaction<T>(mode: TxMode, fn: (conn: Conn) => Promise<T>): Promise<T> {
    if (mode === "read") {
      return this.queue.exclusive(async () => {
        this.control("BEGIN");
        try {
          return await fn(this);
        } finally {
          if (this.inTransaction) this.control("COMMIT");
        }
      });
    }
    // A rotation's freed cells are zeroed (old secrets), and so are those of every write after it.
    if (mode === "rotate") this.db.pragma("secure_delete = ON");
    return this.queue.write(fn);
  }

  /** One statement alone on the connection, in its own implicit transaction. */
  alone(st: Statement<unknown>, args: readonly SqlValue[]): Promise<Raw[]> {
    return this.queue.exclusive(() => Promise.resolve(this.rows(st, args)));
  }

  unreachable(e: unknown): string {
    return `the database ${this.location} cannot be read (${errorMessage(e)})`;
  }

  /**
   * A number that moves whenever committed data may have changed since it was last read, whoever
   * wrote: the WAL index (or, without one, `PRAGMA data_version`) counts the commits of other
   * connections, other processes sharing the data directory included, and `localWrites` those of
   * this one. Both only grow, so their sum changes whenever either does.
   */
  changeCounter(): number {
    return this.externalCommits() + this.localWrites;
  }

  private externalCommits(): number {
    this.assertOpen(); // a GET's cache check comes before its read transaction
    if (this.walWatch) return this.walWatch.generationNow();
    this.dataVersion ??= this.db.prepare("PRAGMA data_version").raw(true);
    const row: unknown = this.dataVersion.get();
    return Array.isArray(row) ? Number(row[0]) : 0;
  }

  whyNotUsable(probeWrite: () => Promise<void>): Promise<string | undefined> {
    return this.file?.whyNotUsable(probeWrite) ?? Promise.resolve(undefined);
  }

  checkRoomToWrite(): void {
    this.file?.checkRoomToWrite();
  }

  /**
   * The old bytes out of every file, once secure_delete zeroed the freed cells (see transaction):
   * a checkpoint that empties and truncates the WAL (retried while another connection, a running
   * server, still reads from it), VACUUM (free pages and the free space of pages hold no old byte
   * after it), and the same checkpoint again for the pages VACUUM wrote through the WAL.
   */
  async purgeFreedBytes(): Promise<string> {
    if (this.file === undefined) return "in memory: nothing on disk";
    const truncate = async (): Promise<boolean> => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const row: unknown = this.db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
        if (typeof row === "object" && row !== null && Number(Reflect.get(row, "busy")) === 0) return true;
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    };
    const first = await truncate();
    await this.queue.exclusive(() => Promise.resolve(this.db.exec("VACUUM")));
    const second = await truncate();
    return first && second
      ? "database rebuilt (VACUUM), WAL emptied"
      : "database rebuilt (VACUUM); the WAL could not be emptied while another process read from it (a running service): its old frames are overwritten as it restarts, or run secrets rotate again with the service stopped";
  }

  /** Writers take turns: every event committed is one of the seqs below the highest. */
  async auditIndexBound(): Promise<number | undefined> {
    const [raw] = await this.alone(SQL.auditUnindexed, []);
    return raw !== undefined && SQL.auditUnindexed.row(raw, NO_SECRETS) ? Number.MAX_SAFE_INTEGER : undefined;
  }

  auditIndexedThrough(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Closes the connection at once; the promise resolves when the checkpoint worker (servers) has
   * closed its own too, before which the process must not exit (see Checkpointer.stop).
   */
  close(): Promise<void> {
    this.closed = true;
    const stopping = this.wal?.stop();
    this.walWatch?.close();
    this.db.close();
    return stopping ?? Promise.resolve();
  }
}

/** Decodes rows that hold no secret. */
const NO_SECRETS = new Secrets();

function isUniqueViolation(e: unknown): boolean {
  return (
    errorField(e, "code") === "SQLITE_CONSTRAINT_UNIQUE" || /UNIQUE constraint failed/.test(errorMessage(e))
  );
}

export class SqliteStore extends SqlStore {
  /**
   * Opens (creating and migrating as needed) the database of a data directory, or ":memory:".
   * `backgroundCheckpoints` is for long-lived servers: WAL checkpoints run on a worker thread
   * instead of inside the commits that cross SQLite's threshold (see Checkpointer).
   */
  static open(dataDir: string, opts: StoreOptions = {}): SqliteStore {
    const driver = SqliteDriver.open(dataDir);
    const store = new SqliteStore(driver, opts.secrets ?? new Secrets());
    let fingerprints;
    try {
      fingerprints = driver.migrating((conn) => runNow(migrate(SCHEMA, store.ring, driver.place), conn));
    } catch (e) {
      void driver.close();
      throw e;
    }
    driver.started(opts);
    store.opened(fingerprints, opts.auditIndexEveryMs);
    return store;
  }
}
