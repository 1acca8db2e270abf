/**
 * WAL upkeep for a long-lived server's connection, kept apart from the SQL of `Store`.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold, milliseconds
 * during which the event loop serves nobody. A server turns it off and checkpoints from a worker
 * thread instead (see Checkpointer). Two things the worker cannot do are done here, on the
 * server's own connection:
 * - past a WAL length the few frames the worker has not copied yet are copied here, so that the
 *   next write starts the WAL over (a PASSIVE checkpoint alone never rewinds it under a steady
 *   stream of writes);
 * - a caller writing in a loop that never yields would starve the worker's reports, so after a
 *   bound of writes without one, a checkpoint runs here.
 * The WAL file keeps its length when started over (rewritten from its start, never cut): cutting
 * 64 MiB off a file held the event loop for 10–30 ms on every rewind (BENCHMARKS.md, fix 8).
 */
import type Database from "libsql";
import { Checkpointer } from "./checkpointer";

/** The WAL length (4 KiB pages, 64 MiB) past which it is started over: one fsync (5–13 ms here), so rarely. */
const REWIND_WAL_ABOVE_PAGES = 16_384;
/** The WAL file's size bound, as a multiple of the rewind length (frames written between report and rewind). */
const WAL_FILE_SLACK = 1.5;
/** Writes in a row without the event loop turning, then a checkpoint here. */
const WRITES_WITHOUT_REPORT = 1_000;

export interface WalMaintenanceOptions {
  /** WAL length in pages past which it is started over. */
  rewindWalAbovePages?: number;
}

export class WalMaintenance {
  private writesUnreported = 0;
  private readonly checkpointer: Checkpointer;

  constructor(
    private readonly db: Database.Database,
    location: string,
    opts: WalMaintenanceOptions = {},
  ) {
    const rewindAbove = opts.rewindWalAbovePages ?? REWIND_WAL_ABOVE_PAGES;
    db.pragma("wal_autocheckpoint = 0");
    // libsql ignores pragma()'s `simple` option (a row object, not a number): read the raw row.
    const pageSize = (db.prepare("PRAGMA page_size").raw(true).get() as [number])[0];
    if (!(pageSize > 0)) throw new Error(`unexpected SQLite page size ${String(pageSize)}`);
    db.pragma(`journal_size_limit = ${Math.ceil(rewindAbove * WAL_FILE_SLACK) * pageSize}`);
    this.checkpointer = new Checkpointer({
      location,
      onProgress: (walPages) => {
        this.writesUnreported = 0;
        // The worker has copied nearly all of it: copy the rest, so the next write starts over.
        if (walPages > rewindAbove) this.checkpointHere();
      },
      // Never left without checkpoints: SQLite's own come back if the worker is gone.
      onFailure: () => db.pragma("wal_autocheckpoint = 1000"),
    });
  }

  /** Called after every write transaction on the connection. */
  afterWrite(): void {
    if (++this.writesUnreported >= WRITES_WITHOUT_REPORT) this.checkpointHere();
  }

  /** Stops the checkpoint worker; resolves when it has closed its connection (see Checkpointer.stop). */
  stop(): Promise<void> {
    return this.checkpointer.stop();
  }

  /** Copies on the server's connection what the worker has not copied yet. */
  private checkpointHere(): void {
    this.writesUnreported = 0;
    this.db.pragma("wal_checkpoint(PASSIVE)");
  }
}
