/**
 * The SQLite store's files: its data directory, kept to its owner, and the database file the
 * connection opened, watched for what makes it unusable (replaced, unwritable, a full disk).
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
import { dirname, join } from "node:path";
import { errorMessage, MAX_BODY_BYTES } from "../../sdk/contract";

/**
 * Free bytes the data directory must have for a probe write to count (twice the largest body): a
 * full disk keeps some room in the WAL's last pages, where a one-row write may succeed while a
 * request's would not.
 */
const PROBE_FREE_BYTES = 2 * MAX_BODY_BYTES;

/** The files of the database in its data directory (the rollback journal only outside WAL mode). */
const DATABASE_FILES = ["edge.db", "edge.db-wal", "edge.db-shm", "edge.db-journal"];

/**
 * The data directory, only its owner may enter it (0700), created so or tightened so (a
 * directory made by an older version was 0755). A shared directory (sticky bit, like /tmp) is
 * refused rather than closed to everyone else.
 */
export function secureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { mode } = statSync(dir);
  if (mode & 0o1000) {
    throw new Error(
      `${dir} is a shared directory (sticky bit, like /tmp): give the service a data directory of its own (--data)`,
    );
  }
  if ((mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
}

/**
 * Only the owner may read or write the database's files (0600). A new database file is created
 * so before SQLite opens it, and SQLite gives its -wal and -shm files the database file's mode;
 * files of an older version (0644) are tightened.
 */
export function secureDatabaseFiles(dir: string): void {
  const database = join(dir, "edge.db");
  if (!existsSync(database)) closeSync(openSync(database, "a", 0o600));
  for (const name of DATABASE_FILES) {
    const path = join(dir, name);
    if (existsSync(path) && (statSync(path).mode & 0o777) !== 0o600) chmodSync(path, 0o600);
  }
}

/** The database file a connection opened (device and inode), to tell it from a replacement. */
export class DatabaseFile {
  private readonly dev: number;
  private readonly ino: number;

  constructor(readonly path: string) {
    ({ dev: this.dev, ino: this.ino } = statSync(path));
  }

  /**
   * Why the file cannot serve, or undefined: it is not the one opened (deleted, replaced: writes
   * to an unlinked file would be lost), or cannot be written (`probeWrite` says).
   */
  async whyNotUsable(probeWrite: () => Promise<void>): Promise<string | undefined> {
    try {
      const { dev, ino } = statSync(this.path);
      if (dev !== this.dev || ino !== this.ino) {
        return `the database file ${this.path} was replaced since the service opened it: restart the service to serve the new one`;
      }
    } catch (e) {
      return `the database file ${this.path} cannot be opened (${errorMessage(e)}): restore the data directory or its permissions, then restart the service`;
    }
    try {
      accessSync(this.path, fsConstants.R_OK | fsConstants.W_OK);
      return undefined;
    } catch {
      // Its permissions say no, yet writes through the files the service holds open may still
      // succeed (they do after a chmod, until a restart): readiness says what a write does.
      const failed = await probeWrite().then(
        () => undefined,
        (e: unknown) => errorMessage(e),
      );
      return failed === undefined
        ? undefined
        : `the database file ${this.path} cannot be written (${failed}): make the data directory writable again (remount it read-write, restore its permissions)`;
    }
  }

  /** Throws (code ENOSPC) while the data directory has no room for a large write (see PROBE_FREE_BYTES). */
  checkRoomToWrite(): void {
    const { bavail, bsize } = statfsSync(dirname(this.path));
    if (bavail * bsize < PROBE_FREE_BYTES) {
      throw Object.assign(
        new Error(`${bavail * bsize} bytes free, less than the ${PROBE_FREE_BYTES} a large write may take`),
        { code: "ENOSPC" },
      );
    }
  }
}
