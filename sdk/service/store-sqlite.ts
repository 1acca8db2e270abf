/**
 * The SQLite store: one database file (libsql, prebuilt binaries), WAL mode so that a standalone
 * server and an in-process provider can share one data directory. The statements are synchronous:
 * the asynchronous `Store` methods only queue transactions on the one connection (one at a time,
 * so in-process requests never interleave inside one); BEGIN IMMEDIATE serialises writers across
 * processes.
 */
import {
  accessSync,
  chmodSync,
  closeSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  openSync,
  statfsSync,
  statSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "libsql";
import { errorField, errorMessage, MAX_BODY_BYTES } from "../contract";
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
  type Resealed,
  type Store,
  type StoreDump,
  type StoreTx,
  type SqlValue,
  type Statement,
  StoreUnavailable,
  UniqueViolation,
} from "./store";
import { CreateFingerprints, FINGERPRINT_KEY, fingerprintWith, keyNeededToUpgrade } from "./fingerprints";
import {
  createdObject,
  resealRouteModules,
  resealSamlKey,
  routeSealedKeyIds,
  SEALED_MODULES_LIKE,
  type Raw,
  textValue,
  rawRow,
} from "./rows";
import {
  parseKeyIds,
  SECRETS_KEY_ID,
  SECRETS_KEY_IDS,
  Secrets,
  type SecretsKey,
  sealedKeyId,
} from "./secrets";
import { SqlTx } from "./sql-tx";
import { createRequestSet, SQL } from "./statements";
import { WalIndexWatch } from "./wal-index";
import { WalMaintenance } from "./wal-maintenance";

/** Ordered schema migrations; the index + 1 is the schema version it produces. Never edit one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE edges (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     kind TEXT NOT NULL CHECK (kind IN ('https', 'tls')),
     description TEXT NOT NULL,
     metadata TEXT NOT NULL,
     hostports TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX edges_by_kind ON edges (kind, seq);
   CREATE TABLE routes (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     edge_id TEXT NOT NULL REFERENCES edges (id) ON DELETE CASCADE,
     match_type TEXT NOT NULL,
     match TEXT NOT NULL,
     description TEXT NOT NULL,
     metadata TEXT NOT NULL,
     created_at TEXT NOT NULL,
     UNIQUE (edge_id, match_type, match)
   );
   CREATE INDEX routes_by_edge ON routes (edge_id, seq);
   CREATE TABLE route_modules (
     route_id TEXT NOT NULL REFERENCES routes (id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     config TEXT NOT NULL,
     PRIMARY KEY (route_id, name)
   );
   CREATE TABLE route_saml_keys (
     route_id TEXT PRIMARY KEY REFERENCES routes (id) ON DELETE CASCADE,
     certificate_pem TEXT NOT NULL,
     private_key_pem TEXT NOT NULL
   );
   CREATE TABLE tls_ip_restrictions (
     edge_id TEXT PRIMARY KEY REFERENCES edges (id) ON DELETE CASCADE,
     config TEXT NOT NULL
   );`,
  // Idempotency keys of creates: a retried POST answers what the first one created (reliability).
  `CREATE TABLE idempotency_keys (
     key TEXT PRIMARY KEY,
     request TEXT NOT NULL,
     response TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);`,
  // A route's modules move into its row (one JSON object), and its seq is the plain rowid: a
  // create wrote 13–14 pages (AUTOINCREMENT's sqlite_sequence, route_modules and its key index
  // over scattered pages), now 6 (BENCHMARKS.md, fix 9). The rowid is still max + 1, so the newest
  // route still sorts first.
  `CREATE TABLE routes_v3 (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     edge_id TEXT NOT NULL REFERENCES edges (id) ON DELETE CASCADE,
     match_type TEXT NOT NULL,
     match TEXT NOT NULL,
     description TEXT NOT NULL,
     metadata TEXT NOT NULL,
     created_at TEXT NOT NULL,
     modules TEXT NOT NULL,
     UNIQUE (edge_id, match_type, match)
   );
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
  // Named API keys with a scope (edge-service keys): only a hash of each key is kept.
  API_KEYS_TABLE,
  // The audit trail (GET /audit_events): one event per change, written in the change's transaction.
  auditTable("INTEGER PRIMARY KEY AUTOINCREMENT"),
  // The audit trail's index by object, off the request path (./audit, auditObjectIndex).
  auditObjectIndex("sqlite"),
  // Keyed creates' requests kept as an HMAC under the store's key, no longer a SHA-256 that
  // answers a guess of their secrets (./fingerprints). SQL has no HMAC: the rows are rewritten
  // in code, in this same transaction, once the secrets key is checked (openFingerprints).
  `-- create_request rewritten by openFingerprints`,
  // The servers running on the store, each alive and with which secrets keys (./presence).
  SERVERS_TABLE,
];
/** The schema whose upgrade keys the keyed creates' digests (see openFingerprints). */
export const KEYED_FINGERPRINTS_SCHEMA = 8;
export const SCHEMA_VERSION = MIGRATIONS.length;

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

/** Free bytes the data directory must have for a probe write to count (twice the largest body). */
const PROBE_FREE_BYTES = 2 * MAX_BODY_BYTES;

/** The files of the database in its data directory (the rollback journal only outside WAL mode). */
const DATABASE_FILES = ["edge.db", "edge.db-wal", "edge.db-shm", "edge.db-journal"];

/**
 * The data directory, only its owner may enter it (0700), created so or tightened so (a
 * directory made by an older version was 0755). A shared directory (sticky bit, like /tmp) is
 * refused rather than closed to everyone else.
 */
function secureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { mode } = statSync(dir);
  if (mode & 0o1000) {
    throw new Error(
      `${dir} is a shared directory (sticky bit, like /tmp): give the service a data directory of its own (--data)`,
    );
  }
  if ((mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
}

/** A write waiting for its group's transaction (SqliteStore.write). */
interface QueuedWrite {
  fn: (tx: StoreTx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Writes per group commit at most: a group holds the connection, and the reads queued behind it
 * wait for all of it (a route write takes ~0.1 ms).
 */
const WRITE_GROUP_MAX = 16;

/**
 * Only the owner may read or write the database's files (0600). A new database file is created
 * so before SQLite opens it, and SQLite gives its -wal and -shm files the database file's mode;
 * files of an older version (0644) are tightened.
 */
function secureDatabaseFiles(dir: string): void {
  const database = join(dir, "edge.db");
  if (!existsSync(database)) closeSync(openSync(database, "a", 0o600));
  for (const name of DATABASE_FILES) {
    const path = join(dir, name);
    if (existsSync(path) && (statSync(path).mode & 0o777) !== 0o600) chmodSync(path, 0o600);
  }
}

export class SqliteStore extends SqlTx implements Store, StoreTx {
  readonly kind = "sqlite";
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /** Write transactions run on this connection (SQLite's data_version does not count them). */
  private localWrites = 0;
  /** Commits by any connection, read from the WAL index (file databases in WAL mode). */
  private walWatch?: WalIndexWatch;
  /** The fallback: `PRAGMA data_version` (commits by other connections). */
  private dataVersion?: Database.Statement;
  /** A server's checkpoints off the request path (see WalMaintenance). */
  private wal?: WalMaintenance;
  /** The audit trail's index by object, caught up in the background (see ./audit). */
  private indexer?: BatchRounds;
  /** The database file the connection opened (device and inode), to tell it from a replacement. */
  private file?: { dev: number; ino: number };
  readonly location: string;

  /** The ring sealing under the store's current key, read once per write transaction (see sealer). */
  private sealing?: Secrets;
  /** Keyed creates' fingerprints under the store's key (none: opened by edge-service keys). */
  private fingerprints?: CreateFingerprints;

  /** Transactions waiting for the connection (the running one holds it). */
  private busy = false;
  private readonly waiting: Array<() => void> = [];
  /** Set by close(): libsql aborts the process (a Rust panic) on a statement run after it. */
  private closed = false;
  /** Writes waiting for the next group's transaction (see write). */
  private readonly writes: QueuedWrite[] = [];
  /** A group is waiting for the connection or running: it takes the writes queued meanwhile. */
  private groupPending = false;

  private constructor(
    db: Database.Database,
    location: string,
    private secrets: Secrets,
  ) {
    super();
    this.db = db;
    this.location = location;
  }

  /**
   * Opens (creating and migrating as needed) the database of a data directory, or ":memory:".
   * `backgroundCheckpoints` is for long-lived servers: WAL checkpoints run on a worker thread
   * instead of inside the commits that cross SQLite's threshold (see Checkpointer).
   */
  static open(dataDir: string, opts: StoreOptions = {}): SqliteStore {
    const location = dataDir === ":memory:" ? ":memory:" : join(resolve(dataDir), "edge.db");
    if (location !== ":memory:") {
      secureDataDir(resolve(dataDir));
      secureDatabaseFiles(resolve(dataDir));
    }
    const db = new Database(location);
    db.pragma("busy_timeout = 10000");
    if (location !== ":memory:") {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
    }
    db.pragma("foreign_keys = ON");
    // 16 MiB of page cache (SQLite's default is 2): with 10,000 routes, a PATCH of a random one
    // otherwise reads its pages from the OS, 1.6× the time it takes among 100 (BENCHMARKS.md).
    db.pragma("cache_size = -16384");
    const store = new SqliteStore(db, location, opts.secrets ?? new Secrets());
    if (location !== ":memory:") {
      const { dev, ino } = statSync(location);
      store.file = { dev, ino };
    }
    try {
      store.migrate();
    } catch (e) {
      db.close();
      throw e;
    }
    // The -wal and -shm files exist now: an older version's are tightened too.
    if (location !== ":memory:") secureDatabaseFiles(resolve(dataDir));
    // After the first transaction, so the -shm file exists (it lives as long as our connection).
    if (location !== ":memory:") store.walWatch = WalIndexWatch.open(location);
    if (opts.backgroundCheckpoints && store.walWatch) {
      store.wal = new WalMaintenance(db, location, { rewindWalAbovePages: opts.rewindWalAbovePages });
    }
    const every = opts.auditIndexEveryMs ?? INDEX_EVERY_MS;
    // Errors are left to the next round: a lookup is complete without the index (see ./audit).
    if (every > 0) store.indexer = auditIndexer(store).start(every);
    return store;
  }

  /**
   * Brings the schema up to date in one transaction. A migration may rebuild a table (SQLite's
   * documented procedure): foreign keys must be off while it does, or dropping the old table would
   * cascade into its children, and the pragma only takes effect outside a transaction. So they are
   * off for the whole of it, and checked before the commit. In the same transaction, the key the
   * secrets are sealed under is checked against the store's (see Secrets.checkStoredKeyId).
   */
  private migrate(): void {
    this.db.pragma("foreign_keys = OFF");
    try {
      this.db
        .transaction(() => {
          this.db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
          const row = this.one(SQL.schemaVersion.sqlite);
          const current = row ? Number(textValue(row)) : 0;
          if (current > SCHEMA_VERSION) {
            throw new Error(
              `the data directory was written by a newer edge-service (schema ${current} > ${SCHEMA_VERSION}); upgrade pulumi-edge`,
            );
          }
          if (current === SCHEMA_VERSION) {
            this.checkSecretsKey();
            this.openFingerprints(false);
            return;
          }
          for (let v = current; v < SCHEMA_VERSION; v++) this.db.exec(MIGRATIONS[v]!);
          const broken: unknown = this.db.pragma("foreign_key_check");
          if (Array.isArray(broken) && broken.length > 0) {
            throw new Error(
              `migrating the data directory to schema ${SCHEMA_VERSION} broke ${broken.length} references (${JSON.stringify(broken[0])}); nothing was changed`,
            );
          }
          this.sql(SQL.metaSet.sqlite).run("schema_version", String(SCHEMA_VERSION));
          // On the schema this code reads (the modules column of routes is migration 3's).
          this.checkSecretsKey();
          this.openFingerprints(current < KEYED_FINGERPRINTS_SCHEMA);
        })
        .immediate();
    } finally {
      this.db.pragma("foreign_keys = ON");
    }
  }

  /**
   * Refuses a key ring that lacks a key the stored values are sealed under (see
   * Secrets.checkStoredKeys); records the first key on the first start with one, and the keys in
   * use after scanning a store of an earlier version (which recorded only one).
   */
  private checkSecretsKey(): void {
    const current = this.meta(SECRETS_KEY_ID);
    const recorded = this.meta(SECRETS_KEY_IDS);
    const record = this.secrets.checkStoredKeys(
      recorded === undefined
        ? { current, inUse: this.scanKeyIds(), scanned: true }
        : { current, inUse: parseKeyIds(recorded), scanned: false },
      this.location,
    );
    if (record === undefined) return;
    this.setMeta(SECRETS_KEY_ID, record.current);
    this.setMeta(SECRETS_KEY_IDS, record.inUse.join(","));
  }

  /**
   * The create fingerprint key (./fingerprints): opened, or made by the first process to open the
   * store (this runs in the migration's BEGIN IMMEDIATE: one process at a time), sealed under the
   * store's current key; on the upgrade to schema 8, every keyed create's earlier digest is
   * rewritten under it, in the upgrade's transaction.
   */
  private openFingerprints(upgrading: boolean): void {
    const key = this.secrets.metaKey(
      this.meta(FINGERPRINT_KEY),
      this.meta(SECRETS_KEY_ID),
      `the create fingerprint key of ${this.location}`,
    );
    if (key?.record !== undefined) this.setMeta(FINGERPRINT_KEY, key.record);
    this.fingerprints = key && new CreateFingerprints(key.bytes);
    if (!upgrading) return;
    const unkeyed = this.all(SQL.unkeyedCreates.sqlite).map(createdObject);
    if (unkeyed.length === 0) return;
    if (this.fingerprints === undefined) throw keyNeededToUpgrade(this.location);
    for (const o of unkeyed) {
      this.sql(createRequestSet(o.table).sqlite).run(this.fingerprints.upgraded(o.request), o.id);
    }
  }

  createFingerprint(request: string): string {
    return fingerprintWith(this.fingerprints, request);
  }

  /** A row of the meta table, read on the connection (in the transaction running). */
  private meta(key: string): string | undefined {
    const row = this.one(SQL.metaGet.sqlite, key);
    return row ? textValue(row) : undefined;
  }

  /** Every key id a stored value is sealed under (read from the rows themselves). */
  private scanKeyIds(): string[] {
    const found = new Set<string>();
    const fingerprintKey = sealedKeyId(this.meta(FINGERPRINT_KEY) ?? "");
    if (fingerprintKey !== undefined) found.add(fingerprintKey);
    for (const raw of this.all(SQL.sealedRoutes.sqlite, SEALED_MODULES_LIKE)) {
      routeSealedKeyIds(raw, found);
    }
    for (const raw of this.all(SQL.samlKeyValues.sqlite)) {
      const kid = sealedKeyId(textValue(raw));
      if (kid !== undefined) found.add(kid);
    }
    return [...found];
  }

  /**
   * The store's ring sealing under the key the store names now, read in this write transaction
   * (once per transaction): `secrets rotate` changes it for every writer at its commit, and
   * BEGIN IMMEDIATE orders the two.
   */
  protected sealer(where: string): Secrets {
    if (this.sealing === undefined) {
      const row = this.one(SQL.metaGet.sqlite, SECRETS_KEY_ID);
      this.sealing = this.secrets.sealingUnder(row ? textValue(row) : undefined, where);
    }
    return this.sealing;
  }

  private setMeta(key: string, value: string | undefined): void {
    if (value === undefined) this.sql(SQL.metaDelete.sqlite).run(key);
    else this.sql(SQL.metaSet.sqlite).run(key, value);
  }

  /**
   * Re-seals every secret under `to` in one transaction (`edge-service secrets rotate`; see
   * Store.resealSecrets), freed cells zeroed meanwhile (`secure_delete`), then erases the old
   * values' bytes from the files: the WAL checkpointed and truncated, the database rebuilt
   * (VACUUM: free pages and the free space of pages hold no old byte after it).
   */
  async resealSecrets(to: SecretsKey, check?: (live: LiveServer[]) => void): Promise<Resealed> {
    const ring = new Secrets([...this.secrets.keys, to], to);
    this.db.pragma("secure_delete = ON");
    const [count, servers] = await this.write(async () => {
      // Read under BEGIN IMMEDIATE: no server's record changes before the commit (a beat is a write).
      const live = await this.query(SQL.serversLive, [LIVE_SLACK_MS]);
      check?.(live);
      let n = 0;
      for (const raw of this.all(SQL.routeModulesAll.sqlite)) {
        const [id, modules, secrets] = resealRouteModules(raw, ring, ring);
        if (secrets === 0) continue;
        this.sql(SQL.routeModulesSet.sqlite).run(modules, id);
        n += secrets;
      }
      for (const raw of this.all(SQL.samlKeysAll.sqlite)) {
        const [routeId, privateKey] = resealSamlKey(raw, ring, ring);
        this.sql(SQL.samlKeySet.sqlite).run(privateKey, routeId);
        n++;
      }
      const fingerprintKey = ring.metaKey(
        this.meta(FINGERPRINT_KEY),
        to.id,
        `the create fingerprint key of ${this.location}`,
      );
      if (fingerprintKey?.record !== undefined) this.setMeta(FINGERPRINT_KEY, fingerprintKey.record);
      this.setMeta(SECRETS_KEY_ID, to.id);
      this.setMeta(SECRETS_KEY_IDS, to.id);
      return [n, live] as const;
    });
    this.secrets = ring;
    return { secrets: count, servers, purge: await this.purgeFreedBytes() };
  }

  /**
   * The old bytes out of every file: a checkpoint that empties and truncates the WAL (retried
   * while another connection, a running server, still reads from it), VACUUM, and the same
   * checkpoint again for the pages VACUUM wrote through the WAL.
   */
  private async purgeFreedBytes(): Promise<string> {
    if (this.location === ":memory:") return "in memory: nothing on disk";
    const truncate = async (): Promise<boolean> => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const row: unknown = this.db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
        if (typeof row === "object" && row !== null && Number(Reflect.get(row, "busy")) === 0) return true;
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    };
    const first = await truncate();
    await this.exclusive(() => Promise.resolve(this.db.exec("VACUUM")));
    const second = await truncate();
    return first && second
      ? "database rebuilt (VACUUM), WAL emptied"
      : "database rebuilt (VACUUM); the WAL could not be emptied while another process read from it (a running service): its old frames are overwritten as it restarts, or run secrets rotate again with the service stopped";
  }

  async pruneAuditEvents(before: string, limit: number): Promise<number> {
    // By seq, the oldest first: a batch is two short statements, requests run between batches.
    return this.write(async () => {
      await this.run(SQL.auditSeqFloor, []);
      const pruned = await this.run(SQL.auditPrune, [before, limit]);
      await this.run(SQL.auditPruneIndex, [limit]);
      return pruned;
    });
  }

  /** Writers take turns: every event committed is one of the seqs below the highest. */
  async indexAuditEvents(limit: number): Promise<number> {
    if (!(await this.read(async () => (await this.query(SQL.auditUnindexed, []))[0]))) return 0;
    return this.write(() => this.run(SQL.auditIndex, [Number.MAX_SAFE_INTEGER, limit]));
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
  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailable(`the store at ${this.location} is closed`);
  }

  /** Whether a transaction is open on the connection (none once it is closed). */
  private get inTransaction(): boolean {
    return !this.closed && this.db.inTransaction;
  }

  /** The first row of a statement, or undefined (libsql types rows as unknown). */
  private one(source: string, ...args: unknown[]): Raw | undefined {
    const row = this.sql(source).get(...args);
    return row === undefined ? undefined : rawRow(row);
  }

  /** Every row of a statement. */
  private all(source: string, ...args: unknown[]): Raw[] {
    return this.sql(source)
      .all(...args)
      .map(rawRow);
  }

  /**
   * Runs `fn` alone on the connection: the next transaction starts when this one has ended. The
   * statements are synchronous, so a transaction holds the connection for microseconds.
   */
  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      this.assertOpen();
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }

  /**
   * Runs `fn` in a write transaction (BEGIN IMMEDIATE): all of it is stored, or nothing. The
   * writes queued in the same turn of the event loop share one transaction, a group commit: each
   * in a savepoint of its own (a failed one is rolled back alone, the others go on), and each is
   * answered only once the group's COMMIT is done, so nobody hears "stored" of a write a crash
   * could still lose. One COMMIT writes the group's pages to the WAL once, where a commit per
   * write wrote each page of the table, its indexes and the audit trail again for every write
   * (BEGIN and COMMIT were a third of a route write's CPU under load: BENCHMARKS.md). A write
   * alone runs as before: no savepoint.
   */
  write<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.writes.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      this.scheduleGroup();
    });
  }

  /**
   * A group starts at the end of the event loop's turn (setImmediate), not at once: a write's
   * statements are synchronous, so a group started at once would only ever hold the write that
   * started it. By the loop's check phase, the requests read in the same turn (the sockets that
   * were ready together) have queued their writes too.
   */
  private scheduleGroup(): void {
    if (this.groupPending || this.writes.length === 0) return;
    this.groupPending = true;
    setImmediate(() => {
      this.exclusive(() => this.writeGroup())
        // The store closed before the group could start: every write queued fails (writeGroup
        // itself settles each write it takes, and throws nothing).
        .catch((e: unknown) => {
          for (const write of this.writes.splice(0)) write.reject(e);
        })
        .finally(() => {
          this.groupPending = false;
          this.scheduleGroup();
        });
    });
  }

  /** The queued writes, up to WRITE_GROUP_MAX, in one transaction (see write). */
  private async writeGroup(): Promise<void> {
    const stored: Array<{ write: QueuedWrite; value: unknown }> = [];
    let running: QueuedWrite | undefined;
    let open = false;
    let count = 0;
    try {
      while (this.writes.length > 0 && count < WRITE_GROUP_MAX) {
        running = this.writes.shift()!;
        count++;
        if (!open) {
          this.sql("BEGIN IMMEDIATE").run();
          this.sealing = undefined;
          open = true;
        }
        const alone = stored.length === 0;
        if (!alone) this.sql("SAVEPOINT group_write").run();
        try {
          const value = await running.fn(this);
          if (!alone) this.sql("RELEASE group_write").run();
          stored.push({ write: running, value });
        } catch (e) {
          if (!this.inTransaction) {
            // SQLite ended the whole transaction (a full disk, an I/O error): the group's earlier
            // writes went with it, and fail with the same cause.
            for (const { write } of stored.splice(0)) write.reject(e);
            open = false;
          } else if (alone) {
            this.sql("ROLLBACK").run();
            open = false;
          } else {
            this.sql("ROLLBACK TO group_write").run();
            this.sql("RELEASE group_write").run();
          }
          running.reject(e);
        }
        running = undefined;
      }
      if (open) this.sql("COMMIT").run();
    } catch (e) {
      // BEGIN, a savepoint's statements or COMMIT failed: nothing of the group is stored.
      try {
        if (this.inTransaction) this.sql("ROLLBACK").run();
      } catch {
        // The connection is closed or broken: nothing uncommitted survives it either.
      }
      for (const { write } of stored.splice(0)) write.reject(e);
      running?.reject(e);
    }
    this.localWrites += count; // counted even when rolled back: a spurious change only costs a re-render
    for (const { write, value } of stored) write.resolve(value);
    try {
      this.wal?.afterWrite(); // once per commit: commits are what grow the WAL
    } catch {
      // A checkpoint on this connection failed: the writes are committed all the same, and the
      // next commit (or the worker) checkpoints again.
    }
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

  /** Runs `fn` against one consistent snapshot. */
  read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.sql("BEGIN").run();
      try {
        return await fn(this);
      } finally {
        if (this.inTransaction) this.sql("COMMIT").run();
      }
    });
  }

  /**
   * Ready when the database file is still the one opened (not deleted, not replaced: writes to an
   * unlinked file would be lost), can be read and written, and holds the schema this code expects
   * (a newer edge-service sharing the data directory may have upgraded it).
   */
  async whyNotReady(): Promise<string | undefined> {
    if (this.file) {
      try {
        const { dev, ino } = statSync(this.location);
        if (dev !== this.file.dev || ino !== this.file.ino) {
          return `the database file ${this.location} was replaced since the service opened it: restart the service to serve the new one`;
        }
      } catch (e) {
        return `the database file ${this.location} cannot be opened (${errorMessage(e)}): restore the data directory or its permissions, then restart the service`;
      }
      try {
        accessSync(this.location, fsConstants.R_OK | fsConstants.W_OK);
      } catch {
        // Its permissions say no, yet writes through the files the service holds open may still
        // succeed (they do after a chmod, until a restart): readiness says what a write does.
        const failed = await this.probeWrite().then(
          () => undefined,
          (e: unknown) => errorMessage(e),
        );
        if (failed !== undefined) {
          return `the database file ${this.location} cannot be written (${failed}): make the data directory writable again (remount it read-write, restore its permissions)`;
        }
      }
    }
    return this.exclusive(() => {
      try {
        const meta = new Map(
          this.all(SQL.metaReadiness.sqlite).map((r) => SQL.metaReadiness.row(r, this.secrets)),
        );
        const version = Number(meta.get("schema_version") ?? 0);
        // Every request that seals or opens a secret would answer 503 (issue 35, finding 7).
        if (version === SCHEMA_VERSION) {
          return Promise.resolve(
            this.secrets.whyCannotServe(meta.get(SECRETS_KEY_ID), meta.get(SECRETS_KEY_IDS)),
          );
        }
        return Promise.resolve(
          version > SCHEMA_VERSION
            ? `the data directory was upgraded to schema ${version} by a newer edge-service (this one runs schema ${SCHEMA_VERSION}): upgrade this one`
            : `the database holds schema ${version}, this edge-service runs ${SCHEMA_VERSION}: restart the service to migrate it`,
        );
      } catch (e) {
        return Promise.resolve(`the database ${this.location} cannot be read (${errorMessage(e)})`);
      }
    });
  }

  /**
   * Rewrites one row of the store's metadata (see Store.probeWrite), once the data directory has
   * room for the largest request's write: a full disk keeps some room in the WAL's last pages, so
   * a one-row write may succeed there while a request's would not.
   */
  async probeWrite(): Promise<void> {
    if (this.file) {
      const { bavail, bsize } = statfsSync(dirname(this.location));
      if (bavail * bsize < PROBE_FREE_BYTES) {
        throw Object.assign(
          new Error(`${bavail * bsize} bytes free, less than the ${PROBE_FREE_BYTES} a large write may take`),
          { code: "ENOSPC" },
        );
      }
    }
    await this.write(() => {
      this.setMeta("write_probe", new Date().toISOString());
      return Promise.resolve();
    });
  }

  /**
   * Closes the connection at once; the promise resolves when the checkpoint worker (servers) has
   * closed its own too, before which the process must not exit (see Checkpointer.stop).
   */
  close(): Promise<void> {
    this.closed = true;
    this.indexer?.stop();
    const stopping = this.wal?.stop();
    this.walWatch?.close();
    this.db.close();
    return stopping ?? Promise.resolve();
  }

  async dump(): Promise<StoreDump> {
    return this.read(() => {
      const out = {} as StoreDump;
      for (const t of DATA_TABLES) {
        out[t] = this.db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all() as StoreDump[typeof t];
      }
      out.create_fingerprint_key = this.meta(FINGERPRINT_KEY) ?? null;
      return Promise.resolve(out);
    });
  }

  async load(dump: StoreDump): Promise<void> {
    const fingerprints = await this.write(async () => {
      const live = await this.query(SQL.serversLive, [LIVE_SLACK_MS]);
      if (live.length > 0) throw serversOnTarget(live, "sqlite");
      for (const t of DATA_TABLES) {
        const row: unknown = this.db.prepare(`SELECT count(*) AS n FROM ${t}`).get();
        const count = typeof row === "object" && row !== null ? Number(Reflect.get(row, "n")) : 0;
        if (count > 0) throw targetNotEmpty(t, "sqlite");
      }
      // Derived from the events (none here): emptied, the indexer rebuilds it from the copied ones.
      this.db.prepare("DELETE FROM audit_by_object").run();
      for (const t of DATA_TABLES) {
        for (const row of dump[t]) {
          const cols = Object.keys(row);
          this.db
            .prepare(`INSERT INTO ${t} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`)
            .run(...cols.map((c) => row[c]));
        }
      }
      // The copied values' keys, scanned: a key the ring lacks refuses the whole copy.
      this.setMeta(SECRETS_KEY_IDS, undefined);
      this.checkSecretsKey();
      return this.loadFingerprintKey(dump.create_fingerprint_key);
    });
    this.fingerprints = fingerprints ?? this.fingerprints;
  }

  /**
   * The copied objects' create fingerprint key replaces this store's own (see ./fingerprints),
   * sealed under this store's current key; what fingerprints under it from then on.
   */
  private loadFingerprintKey(copied: string | null): CreateFingerprints | undefined {
    if (copied === null) return undefined;
    const key = this.secrets.metaKey(
      copied,
      this.meta(SECRETS_KEY_ID),
      `the create fingerprint key copied into ${this.location}`,
    );
    if (key === undefined) return undefined;
    this.setMeta(FINGERPRINT_KEY, key.record ?? copied);
    return new CreateFingerprints(key.bytes);
  }

  // ------------------------------------------------------------------ statements (see SqlTx)

  protected rows(st: Statement<unknown>, args: readonly SqlValue[]): Raw[] {
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

  protected changes(st: Statement<unknown>, args: readonly SqlValue[]): number {
    try {
      return this.sql(st.sqlite).run(...st.values.sqlite(args)).changes;
    } catch (e) {
      throw isUniqueViolation(e) ? new UniqueViolation() : e;
    }
  }

  protected override firstRow(st: Statement<unknown>, args: readonly SqlValue[]): Raw | undefined {
    const row: unknown = this.sql(st.sqlite).get(...st.values.sqlite(args));
    return row === undefined ? undefined : rawRow(row);
  }

  protected ring(): Secrets {
    return this.secrets;
  }

  /** Never: a write transaction is BEGIN IMMEDIATE, writers already take turns. */
  protected locking(): boolean {
    return false;
  }

  /** In process, a statement costs no round trip: the event is a statement of its own. */
  protected eventsInWrites(): boolean {
    return false;
  }

  /** Nothing to do: transactions on this connection run one at a time, writers across processes too. */
  async lockCreateKey(_key: string): Promise<void> {}
}

function isUniqueViolation(e: unknown): boolean {
  return (
    errorField(e, "code") === "SQLITE_CONSTRAINT_UNIQUE" || /UNIQUE constraint failed/.test(errorMessage(e))
  );
}
