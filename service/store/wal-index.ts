/**
 * Cheap detection of commits to a WAL-mode SQLite database, by any connection of any process.
 *
 * Every commit rewrites the WAL-index header at the start of the `-shm` file (both of its copies:
 * `iChange` is "incremented with each transaction", and `mxFrame` and the checksums move with it;
 * https://sqlite.org/walformat.html#the_wal_index_header). Reading those 96 bytes is one
 * `pread`, against two `fcntl` lock calls and a statement for `PRAGMA data_version`, which
 * showed as a quarter of a cached GET's CPU. A reader may catch the header mid-update: that reads
 * as a change too, so the worst case is a spurious re-render, never a missed commit.
 *
 * The file stays in place while our connection is open: SQLite deletes `-shm` only when the last
 * connection closes, and the caller holds one for as long as this is open.
 */
import { closeSync, openSync, readSync } from "node:fs";

const HEADER_BYTES = 96; // two 48-byte copies of the WAL-index header

export class WalIndexWatch {
  private readonly current = Buffer.alloc(HEADER_BYTES);
  private readonly last = Buffer.alloc(HEADER_BYTES);
  private generation = 0;

  private constructor(private readonly fd: number) {
    this.read(this.last);
  }

  /** Watches `<databasePath>-shm`; undefined when there is none (not in WAL mode, or in memory). */
  static open(databasePath: string): WalIndexWatch | undefined {
    try {
      return new WalIndexWatch(openSync(`${databasePath}-shm`, "r"));
    } catch {
      return undefined;
    }
  }

  /** A number that moves whenever a commit may have happened since it was last read. */
  generationNow(): number {
    this.read(this.current);
    if (!this.current.equals(this.last)) {
      this.current.copy(this.last);
      this.generation++;
    }
    return this.generation;
  }

  close(): void {
    closeSync(this.fd);
  }

  private read(into: Buffer): void {
    into.fill(0, readSync(this.fd, into, 0, HEADER_BYTES, 0));
  }
}
