/**
 * The transactions of one SQLite connection, one at a time: a statement of libsql is synchronous,
 * so the asynchronous transactions of a store (a request awaits between its statements) must
 * take turns on the connection, or two would interleave inside one. Writes queued together share
 * one transaction (a group commit).
 */
import type { Conn } from "./store-driver";

/** What the queue asks of the connection. */
export interface QueuedConnection extends Conn {
  /** Runs a statement of transaction control: BEGIN IMMEDIATE, SAVEPOINT, COMMIT, ROLLBACK. */
  control(sql: string): void;
  /** Whether a transaction is open on the connection (none once it is closed). */
  readonly inTransaction: boolean;
  /** Throws StoreUnavailable once the connection is closed. */
  assertOpen(): void;
}

/** A write waiting for its group's transaction (see TransactionQueue.write). */
interface QueuedWrite {
  /** Runs the write; what settles it once its group is committed. */
  run: (conn: Conn) => Promise<() => void>;
  fail: (error: unknown) => void;
}

/**
 * Writes per group commit at most: a group holds the connection, and the reads queued behind it
 * wait for all of it (a route write takes ~0.1 ms).
 */
const WRITE_GROUP_MAX = 16;

export class TransactionQueue {
  /** Transactions waiting for the connection (the running one holds it). */
  private busy = false;
  private readonly waiting: Array<() => void> = [];
  /** Writes waiting for the next group's transaction (see write). */
  private readonly writes: QueuedWrite[] = [];
  /** A group is waiting for the connection or running: it takes the writes queued meanwhile. */
  private groupPending = false;

  constructor(
    private readonly conn: QueuedConnection,
    /** Told after each group's end, with how many writes it ran (committed or not). */
    private readonly afterGroup: (writes: number) => void,
  ) {}

  /**
   * Runs `fn` alone on the connection: the next transaction starts when this one has ended. The
   * statements are synchronous, so a transaction holds the connection for microseconds.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      this.conn.assertOpen();
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
   * alone needs no savepoint.
   */
  write<T>(fn: (conn: Conn) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.writes.push({
        run: async (conn) => {
          const value = await fn(conn);
          return () => resolve(value);
        },
        fail: reject,
      });
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
          for (const write of this.writes.splice(0)) write.fail(e);
        })
        .finally(() => {
          this.groupPending = false;
          this.scheduleGroup();
        });
    });
  }

  /** The queued writes, up to WRITE_GROUP_MAX, in one transaction (see write). */
  private async writeGroup(): Promise<void> {
    const stored: Array<{ write: QueuedWrite; settle: () => void }> = [];
    let running: QueuedWrite | undefined;
    let open = false;
    let count = 0;
    try {
      while (count < WRITE_GROUP_MAX) {
        running = this.writes.shift();
        if (running === undefined) break;
        count++;
        if (!open) {
          this.conn.control("BEGIN IMMEDIATE");
          open = true;
        }
        const alone = stored.length === 0;
        if (!alone) this.conn.control("SAVEPOINT group_write");
        try {
          const settle = await running.run(this.conn);
          if (!alone) this.conn.control("RELEASE group_write");
          stored.push({ write: running, settle });
        } catch (e) {
          if (!this.conn.inTransaction) {
            // SQLite ended the whole transaction (a full disk, an I/O error): the group's earlier
            // writes went with it, and fail with the same cause.
            for (const { write } of stored.splice(0)) write.fail(e);
            open = false;
          } else if (alone) {
            this.conn.control("ROLLBACK");
            open = false;
          } else {
            this.conn.control("ROLLBACK TO group_write");
            this.conn.control("RELEASE group_write");
          }
          running.fail(e);
        }
        running = undefined;
      }
      if (open) this.conn.control("COMMIT");
    } catch (e) {
      // BEGIN, a savepoint's statements or COMMIT failed: nothing of the group is stored.
      try {
        if (this.conn.inTransaction) this.conn.control("ROLLBACK");
      } catch {
        // The connection is closed or broken: nothing uncommitted survives it either.
      }
      for (const { write } of stored.splice(0)) write.fail(e);
      running?.fail(e);
    }
    for (const { settle } of stored) settle();
    this.afterGroup(count);
  }
}
