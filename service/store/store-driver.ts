/**
 * The seam between what a store does (written once: ./sql-tx for the data paths, ./store-steps
 * for the procedures, ./store-sql for the Store around them) and what really differs between
 * SQLite and PostgreSQL: the driver that runs a statement, how a transaction starts, locks and
 * ends, the pragmas, the DDL, and what erases freed bytes or tells readiness the storage is gone.
 * ./store-sqlite and ./store-postgres each implement it, and hold nothing else.
 */
import type { Raw } from "./rows";
import type { Deadline, Dialect, PoolStats, SqlValue, Statement } from "./store";

/** The statements of one transaction, on the connection it holds. */
export interface Conn {
  /**
   * The rows `st` answers. `last`: nothing follows in the transaction (see WriteEnd); the driver
   * may commit with it.
   */
  rows(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): Raw[] | Promise<Raw[]>;
  /** Runs `st`: the number of rows it changed; `last` as for rows. */
  changes(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): number | Promise<number>;
  /** The first row `st` answers (libsql steps once: a third of `rows`' cost for one row). */
  first(st: Statement<unknown>, args: readonly SqlValue[]): Raw | undefined | Promise<Raw | undefined>;
  /** Runs a migration's DDL (one or more statements, no values). */
  exec(ddl: string): void | Promise<void>;
  /** A read of a row to change locks it until the transaction ends (PostgreSQL's writes). */
  readonly locking: boolean;
  /** A change and its audit event go as one statement (see withAuditEvent): a round trip less. */
  readonly eventsInWrites: boolean;
  /** Holds every other writer of `key` off until the transaction ends (see StoreTx.lockCreateKey). */
  lockCreateKey(key: string): Promise<void>;
}

/** A connection whose statements answer at once (SQLite's): a procedure runs on it synchronously. */
export interface SyncConn extends Conn {
  rows(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): Raw[];
  changes(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): number;
  exec(ddl: string): void;
}

/**
 * What a transaction is for: `read`, one consistent snapshot; `write`, all of it stored or none;
 * `rotate`, a write that holds every other writer off (`secrets rotate` re-seals under a new key).
 */
export type TxMode = "read" | "write" | "rotate";

/** A store's schema: its migrations in its DDL dialect, in order (index + 1 is the version). */
export interface StoreSchema {
  readonly migrations: readonly string[];
  /** The version whose upgrade rewrites the keyed creates' digests under the store's key (./fingerprints). */
  readonly keyedFingerprints: number;
}

export interface StoreDriver {
  readonly dialect: Dialect;
  /** Where the data is, for people: a database file, or a PostgreSQL URL without its password. */
  readonly location: string;
  /** The same as the subject of a sentence: "the data directory …", "the database at …". */
  readonly place: string;
  readonly schema: StoreSchema;
  /**
   * Runs `fn` in a transaction of `mode` on one connection; committed when it resolves, else
   * rolled back. `within`: a request's deadline (see Store.requestDeadline).
   */
  transaction<T>(mode: TxMode, fn: (conn: Conn) => Promise<T>, within?: Deadline): Promise<T>;
  /**
   * One statement on its own (no transaction around it), answered within a bound: what readiness
   * reads, and its probe write, must hear back even from a database that hangs.
   */
  alone(st: Statement<unknown>, args: readonly SqlValue[]): Promise<Raw[]>;
  /** Why the store cannot be reached, for the operator's log, from what `alone` threw. */
  unreachable(e: unknown): string;
  /**
   * Why the storage cannot serve before its rows are even read (the database file replaced or
   * unwritable), or undefined; `probeWrite` tells whether a write gets through.
   */
  whyNotUsable(probeWrite: () => Promise<void>): Promise<string | undefined>;
  /** See Store.unavailableSeen (absent: the storage does not go away under the store). */
  unavailableSeen?(): number;
  /** Throws (code ENOSPC) while a request's largest write would not fit; before a probe write. */
  checkRoomToWrite(): void;
  /** After a rotation's commit: what the old values left in the files erased, as far as the store can; what was done. */
  purgeFreedBytes(): Promise<string>;
  /** See Store.changeCounter. */
  changeCounter(within?: Deadline): number | string | Promise<number | string>;
  /** See Store.requestDeadline (absent: the driver has no deadline). */
  requestDeadline?(receivedAt: number): Deadline | undefined;
  /**
   * The highest audit seq the index by object may take now: every event up to it is committed or
   * never will be. Undefined: none to take yet.
   */
  auditIndexBound(): Promise<number | undefined>;
  /** The index holds every event through `seq` (a round took fewer than it asked for). */
  auditIndexedThrough(seq: number): Promise<void>;
  poolStats?(): PoolStats;
  close(): Promise<void>;
}

// ------------------------------------------------------------------ procedures as steps

/** One statement a procedure asks for: its rows, the rows it changed, or a migration's DDL. */
export type Step =
  | { readonly st: Statement<unknown>; readonly args: readonly SqlValue[]; readonly want: "rows" | "changes" }
  | { readonly ddl: string };

/** What a step answers. */
export interface Answer {
  rows: Raw[];
  changes: number;
}

/**
 * A store procedure (./store-steps): the statements it runs, yielded one at a time, each resumed
 * with its answer. Written once, it runs on either driver: synchronously on SQLite, whose open is
 * synchronous (runNow), and awaited on PostgreSQL (runSteps).
 */
export type Steps<T> = Generator<Step, T, Answer>;

const NONE: Answer = { rows: [], changes: 0 };

function answerOf(step: Step, conn: Conn): Answer | Promise<Answer> {
  if ("ddl" in step) {
    const done = conn.exec(step.ddl);
    return done instanceof Promise ? done.then(() => NONE) : NONE;
  }
  if (step.want === "rows") {
    const rows = conn.rows(step.st, step.args, false);
    return Array.isArray(rows) ? { rows, changes: 0 } : rows.then((r) => ({ rows: r, changes: 0 }));
  }
  const changes = conn.changes(step.st, step.args, false);
  return typeof changes === "number"
    ? { rows: [], changes }
    : changes.then((n) => ({ rows: [], changes: n }));
}

/** Runs `steps` on a connection that answers at once (see Steps). */
export function runNow<T>(steps: Steps<T>, conn: SyncConn): T {
  let next = steps.next(NONE);
  while (!next.done) {
    const answer = answerOf(next.value, conn);
    if (answer instanceof Promise) throw new Error("a synchronous connection answered later");
    next = steps.next(answer);
  }
  return next.value;
}

/** Runs `steps` on any connection, each statement awaited (see Steps). */
export async function runSteps<T>(steps: Steps<T>, conn: Conn): Promise<T> {
  let next = steps.next(NONE);
  while (!next.done) next = steps.next(await answerOf(next.value, conn));
  return next.value;
}
