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
import {
  type Deadline,
  type PoolStats,
  type SqlValue,
  type Statement,
  StoreUnavailable,
  waitWithin,
} from "./store";
import { type Conn, runSteps, type StoreDriver, type StoreSchema, type TxMode } from "./store-driver";
import {
  deadlinePassed,
  type InFlight,
  LOCK_CLASS_SCHEMA,
  LOCK_CLASS_SECRETS,
  type Opening,
  PgConn,
  translate,
  type Value,
} from "./store-postgres-conn";
import { CHECK_MS, checkMsFor, cut, Reach } from "./store-postgres-reach";
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
/**
 * What a migration or a rotation runs under, whatever its session's bounds (see `deadlineMs`):
 * it may rewrite every row, and replicas starting together wait on its lock.
 */
const UNBOUNDED = "SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0";
/** A read transaction's start: one snapshot for all its statements. */
const READ_OPENING: Opening = { begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", steps: [] };
/**
 * `secrets rotate`'s start: the secrets lock taken exclusive first (writers wait at their start,
 * then seal under the new key), the tables it rewrites locked against any other writer.
 */
const ROTATE_OPENING: Opening = {
  begin: `BEGIN; ${UNBOUNDED}; SELECT pg_advisory_xact_lock(${LOCK_CLASS_SECRETS}, 0); LOCK TABLE routes, route_saml_keys, meta IN EXCLUSIVE MODE`,
  steps: [],
};
/** A migration's start: replicas starting together take turns, the first migrates, the others find it done. */
const MIGRATE_OPENING: Opening = {
  begin: `BEGIN; ${UNBOUNDED}; SELECT pg_advisory_xact_lock(${LOCK_CLASS_SCHEMA}, 0)`,
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

export interface PostgresStoreOptions {
  /** Connections of this replica's pool. Default 10. */
  poolSize?: number;
  /**
   * How long a transaction (or any other query) may take, from asking the pool for a connection
   * to its answer (the server's `serve --database-deadline`); none by default: the commands'
   * procedures (migrate, secrets rotate) may take as long as they need. With one:
   * - the connection is cut at the deadline (see ./store-postgres-reach `cut`) and dropped from
   *   the pool, the transaction rolled back, and StoreUnavailable thrown (a 503 with Retry-After);
   * - the server is told the same bound, so that it gives up too: `statement_timeout` and
   *   `idle_in_transaction_session_timeout` for the session, and the statements that COMMIT get
   *   only what is left of the deadline (see COMMIT_MARGIN_MS): a write cannot commit after its
   *   client was told 503;
   * - the migration at start and a rotation run unbounded (see UNBOUNDED);
   * - a request a load balancer received and may repeat on other replicas has a deadline of its
   *   own, RETRY_GRACE_MS later than this from the balancer's receipt (see requestDeadline): the
   *   bound of a client's wait through the balancer, whatever the replicas it is tried on;
   * - the work waiting on the database is given up, before its deadline, once the replica's check
   *   finds the database out of reach (see ./store-postgres-reach), but for a COMMIT on its way.
   */
  deadlineMs?: number;
  /** Told about errors of idle connections (a database restart); default: ignored. */
  log?: (line: string) => void;
  /** Seals the secrets written, opens those read (see ./secrets); default: no key, unsealed. */
  secrets?: Secrets;
  /** How often the audit trail's index by object catches up (see ./audit); 0: never (lookups scan). */
  auditIndexEveryMs?: number;
}

/** Without a deadline, how long a request waits for a free (or new) connection before its 503. */
const CONNECT_WAIT_MS = 5000;

/**
 * How much past the database deadline, from the load balancer's receipt, a request's database
 * work may end on whichever replica the balancer tries it (see requestDeadline). A request
 * repeated after a replica's 503 at its deadline is still served by a replica whose database
 * answers (it takes milliseconds); the balancer's attempts after that are answered 503 at once.
 * Less than a second by what the last 503's way back to the client may take on a loaded host:
 * through the balancer, no client waits more than the deadline and a second (issue 52's bound).
 */
export const RETRY_GRACE_MS = 800;
/**
 * TCP keepalive on every connection: an idle pooled connection to a database host that vanished
 * (no FIN, no RST) is found dead by the kernel rather than when a request next takes it.
 */
const KEEPALIVE_DELAY_MS = 10_000;

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
  /**
   * The bounded work waiting on the database now, each with how to give it up: once a check
   * finds the database out of reach (giveUpHeld), it is not left waiting for its deadline.
   */
  private readonly held = new Set<(why: string) => void>();
  /**
   * How long bounded work waits without an answer before the driver asks for a check (a quarter
   * of the deadline): with a check bounded by half of it (checkMsFor), a silent database is found
   * before that work's deadline, whether or not anyone probes readiness.
   */
  private readonly stallMs: number | undefined;

  constructor(
    private readonly pool: pg.Pool,
    url: string,
    private readonly poolMax: number,
    /** Whether the database answers, on a connection of its own; the gate of requests. */
    private readonly reach: Reach,
    private readonly deadlineMs: number | undefined,
  ) {
    this.location = redactUrl(url);
    this.place = `the database at ${this.location}`;
    this.stallMs = deadlineMs === undefined ? undefined : Math.floor(deadlineMs / 4);
  }

  /** A pool of connections to `url` (none is opened before the first query). */
  static connect(url: string, opts: PostgresStoreOptions): PgDriver {
    const max = opts.poolSize ?? 10;
    const deadline = opts.deadlineMs;
    const settings: pg.ClientConfig = {
      connectionString: url,
      types,
      application_name: "edge-service",
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
      // Sent at the session's start: the server gives up no later than the service does.
      ...(deadline !== undefined && {
        statement_timeout: deadline,
        idle_in_transaction_session_timeout: deadline,
      }),
    };
    const pool = new pg.Pool({
      ...settings,
      max,
      connectionTimeoutMillis: deadline ?? CONNECT_WAIT_MS,
      idleTimeoutMillis: 30_000,
    });
    const location = redactUrl(url);
    const reach = new Reach(settings, location, opts.log, checkMsFor(deadline), (why) =>
      driver.giveUpHeld(why),
    );
    // An idle connection's error (the database restarting) must not crash the process: the pool
    // drops that connection and opens a new one on demand.
    // A connection that breaks while checked out (between the statements of a transaction) emits
    // 'error' too: the statement in flight fails (503), and without a listener the process would.
    // Either is a sign the database may be gone: readiness asks again at the next probe.
    const driver = new PgDriver(pool, url, max, reach, deadline);
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
    if (err instanceof StoreUnavailable) this.lostSign();
    return err;
  }

  /** A sign the database may be gone: readiness asks again, and so does the gate's check. */
  private lostSign(): void {
    this.unavailable++;
    this.reach.suspect();
  }

  /**
   * A deadline `ms` after `from` (the store's own, from now, when not given), or `within` when
   * that comes first (a request's: see requestDeadline); none without `ms`.
   */
  private deadline(ms = this.deadlineMs, within?: Deadline, from = performance.now()): Deadline | undefined {
    if (ms === undefined) return undefined;
    const at = from + ms;
    return within !== undefined && within.at < at
      ? within
      : { at, what: `the ${ms / 1000} s database deadline` };
  }

  requestDeadline(receivedAt: number): Deadline | undefined {
    const ms = this.deadlineMs;
    if (ms === undefined) return undefined;
    return {
      at: receivedAt + ms + RETRY_GRACE_MS,
      what: `the ${ms / 1000} s database deadline and ${RETRY_GRACE_MS} ms more, from when the load balancer received the request`,
    };
  }

  /**
   * A request's deadline was over before it came to the database: the balancer's attempts on
   * other replicas used it up (or this host's clock is ahead of the balancer's).
   */
  private noTimeLeft(deadline: Deadline): StoreUnavailable {
    return new StoreUnavailable(
      `nothing was left of ${deadline.what} (${Math.round(performance.now() - deadline.at)} ms past it) when the request came to the database: nothing was done. The balancer's attempts on other replicas used it up; if requests are answered so while the database answers, this host's clock is ahead of the balancer's (synchronize them)`,
    );
  }

  /**
   * Gives up the bounded work waiting on the database (a check found it out of reach): a wait for
   * a connection of the pool ends, a connection in use is cut, each with StoreUnavailable, but for
   * a transaction whose COMMIT is on its way (see InFlight), which keeps its deadline.
   */
  giveUpHeld(why: string): void {
    for (const hold of [...this.held]) hold(why);
  }

  /**
   * Throws at once while the last check found the database out of reach (see ./store-postgres-reach):
   * a request is not made to wait for a deadline that will pass.
   */
  private gate(): void {
    const down = this.reach.outOfReach;
    if (down !== undefined) throw new StoreUnavailable(down);
  }

  /**
   * A connection of the pool, waited for until `deadline` at most, or until `leave` is told to
   * stop waiting (the work was given up).
   */
  private async client(
    deadline: Deadline | undefined,
    leave?: (stop: (e: unknown) => void) => void,
  ): Promise<pg.PoolClient> {
    const waiting = this.pool.connect();
    let timer: NodeJS.Timeout | undefined;
    try {
      if (deadline === undefined) return await waiting;
      const late = new Promise<never>((_, reject) => {
        leave?.(reject);
        timer = setTimeout(
          () => reject(deadlinePassed(deadline, "no connection of the pool was free")),
          deadline.at - performance.now(),
        );
      });
      return await Promise.race([waiting, late]);
    } catch (e) {
      // Taken later after all: straight back to the pool, unused.
      waiting.then(
        (c) => c.release(),
        () => undefined,
      );
      throw this.translated(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs `fn` on a connection of the pool until `deadline` at most: then the connection is cut,
   * what `fn` awaits fails, and `fn`'s error becomes the deadline's. Bounded work is held (see
   * giveUpHeld) meanwhile: given up, it ends the same way with why, unless `fn` said its COMMIT
   * is on its way (`inFlight`). The connection goes back to the pool only when `fn` left it clean
   * (`broken` says otherwise), the deadline did not pass and the work was not given up.
   */
  private async onConnection<T>(
    deadline: Deadline | undefined,
    fn: (client: pg.PoolClient, failed: (e: unknown) => unknown, inFlight: InFlight) => Promise<T>,
  ): Promise<T> {
    if (deadline !== undefined && deadline.at <= performance.now()) throw this.noTimeLeft(deadline);
    const inFlight: InFlight = { committing: false };
    let client: pg.PoolClient | undefined;
    let givenUp: string | undefined;
    let stopWaiting: ((e: unknown) => void) | undefined;
    const hold = (why: string) => {
      if (inFlight.committing || givenUp !== undefined) return;
      givenUp = why;
      if (client) cut(client);
      else stopWaiting?.(new StoreUnavailable(why));
    };
    // Waited a quarter of the deadline without an answer: a check says whether the database is gone.
    const stalled =
      deadline && this.stallMs !== undefined
        ? setTimeout(() => this.reach.suspect(), this.stallMs)
        : undefined;
    if (deadline) this.held.add(hold);
    let passed = false;
    let broken = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      const got = await this.client(deadline, (stop) => (stopWaiting = stop));
      client = got;
      // Given up as the connection came: not used.
      if (givenUp !== undefined) throw new StoreUnavailable(givenUp);
      if (deadline) {
        timer = setTimeout(
          () => {
            passed = true;
            cut(got);
          },
          Math.max(0, deadline.at - performance.now()),
        );
      }
      // Each error once: `fn` may hand back one `failed` already made.
      const made = new WeakSet<object>();
      const failed = (e: unknown): unknown => {
        if (typeof e === "object" && e !== null && made.has(e)) return e;
        // `passed` is set only by the deadline's timer: there is a deadline.
        const err =
          passed && deadline
            ? deadlinePassed(deadline, "the connection was cut")
            : givenUp !== undefined
              ? new StoreUnavailable(
                  `${givenUp}; its connection was dropped and nothing committed: retry shortly`,
                )
              : this.translated(e);
        if (passed) this.lostSign();
        if (err instanceof StoreUnavailable) broken = true;
        if (typeof err === "object" && err !== null) made.add(err);
        return err;
      };
      try {
        return await fn(got, failed, inFlight);
      } catch (e) {
        throw failed(e);
      }
    } finally {
      this.held.delete(hold);
      clearTimeout(stalled);
      clearTimeout(timer);
      client?.release(broken || passed || givenUp !== undefined);
    }
  }

  /**
   * Runs `fn` in a transaction started by `opening` on one connection, until `deadline` at most;
   * a connection broken or cut is dropped from the pool.
   */
  private once<T>(
    opening: Opening,
    locking: boolean,
    fn: (conn: Conn) => Promise<T>,
    deadline: Deadline | undefined,
  ): Promise<T> {
    return this.onConnection(deadline, async (client, failed, inFlight) => {
      const conn = new PgConn(client, opening, locking, deadline, inFlight);
      try {
        const result = await fn(conn);
        if (conn.open) {
          // A write's COMMIT on its own (a value not written as a literal): on its way from now.
          if (locking) inFlight.committing = true;
          await client.query("COMMIT");
        }
        return result;
      } catch (e) {
        const err = failed(e);
        if (!(err instanceof StoreUnavailable) && conn.open) {
          await client.query("ROLLBACK").catch((r: unknown) => {
            throw failed(r);
          });
        }
        throw err;
      }
    });
  }

  /**
   * A write that deadlocked or failed to serialize is run again whole (at most five times, all
   * within one deadline). While the database is known out of reach, refused at once.
   */
  async transaction<T>(mode: TxMode, fn: (conn: Conn) => Promise<T>, within?: Deadline): Promise<T> {
    const deadline = mode === "rotate" ? undefined : this.deadline(undefined, within);
    for (let attempt = 1; ; attempt++) {
      this.gate();
      try {
        return await this.once(OPENINGS[mode], mode !== "read", fn, deadline);
      } catch (e) {
        const code = errorField(e, "code");
        if (mode === "read" || typeof code !== "string" || !RETRYABLE.has(code) || attempt >= 5) throw e;
      }
    }
  }

  /** The migration's transaction (see MIGRATE_OPENING): unbounded, replicas wait on its lock. */
  migrating<T>(fn: (conn: Conn) => Promise<T>): Promise<T> {
    return this.once(MIGRATE_OPENING, true, fn, undefined);
  }

  /**
   * One statement on a pooled connection, bounded (CHECK_MS, the connection's wait included):
   * what readiness reads and writes. Never refused by the gate: readiness must see the database
   * come back.
   */
  alone(st: Statement<unknown>, args: readonly SqlValue[]): Promise<Raw[]> {
    return this.onConnection(this.deadline(CHECK_MS), async (client) => {
      const { rows } = await client.query<Raw>({
        name: st.name,
        text: st.postgres,
        values: st.values.postgres(args),
      });
      return rows;
    });
  }

  unreachable(e: unknown): string {
    this.lostSign();
    return `PostgreSQL at ${this.location} cannot be reached (${errorMessage(e)}); the service answers 503 until it is back`;
  }

  /**
   * Whether the database takes writes: a standby (a failover's new primary a moment before its
   * promotion completes, or a URL that names a replica) answers reads and refuses every write
   * with 25006. Whether it answers at all is what readiness' read finds.
   */
  async whyNotUsable(): Promise<string | undefined> {
    const answer = await this.reach.check();
    if (!answer.answered) return this.unreachable(answer.error);
    return answer.readOnly
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
      client = await this.client(undefined);
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
  changeCounter(within?: Deadline): Promise<string> {
    if (within === undefined) return this.sharedCounter();
    if (within.at <= performance.now()) return Promise.reject(this.noTimeLeft(within));
    return waitWithin(this.sharedCounter(), within, "the database's change counter");
  }

  /** The change counter, one query shared by the GETs that ask while it runs (see changeCounter). */
  private sharedCounter(): Promise<string> {
    if (this.counterNext) return this.counterNext;
    if (!this.counterNow) return this.readCounterNow();
    // The GETs queued behind the query in flight wait one deadline in all, from the first of
    // them: when that query fails (a database out of reach), they fail with it, not a deadline later.
    const queued = performance.now();
    const next = this.counterNow.then(
      () => {
        this.counterNext = undefined;
        return this.counterNow ?? this.readCounterNow(queued);
      },
      (e: unknown) => {
        this.counterNext = undefined;
        throw e;
      },
    );
    this.counterNext = next;
    return next;
  }

  private readCounterNow(since?: number): Promise<string> {
    const now = this.readCounter(since).finally(() => {
      if (this.counterNow === now) this.counterNow = undefined;
    });
    this.counterNow = now;
    return now;
  }

  private async readCounter(since?: number): Promise<string> {
    const text = "SELECT pg_postmaster_start_time()::text || ' ' || pg_current_snapshot()::text AS v";
    return String(await this.poolValue("change_counter", text, [], since));
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

  /**
   * The column `v` of a one-row query on a pooled connection, within the store's deadline from
   * `since` (default: now); refused at once while the database is known out of reach.
   */
  private poolValue(name: string, text: string, values: Value[], since?: number): Promise<unknown> {
    this.gate();
    return this.onConnection(this.deadline(undefined, undefined, since), async (client) => {
      const { rows } = await client.query<{ v: unknown }>({ name, text, values });
      return rows[0]?.v;
    });
  }

  poolStats(): PoolStats {
    const { totalCount, idleCount, waitingCount } = this.pool;
    return { inUse: totalCount - idleCount, idle: idleCount, waiting: waitingCount, max: this.poolMax };
  }

  async close(): Promise<void> {
    await this.reach.close();
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
