/**
 * Writes that fail for the storage's sake, not the request's: the disk is full, or the data
 * directory (the database) accepts no writes. Such a write changed nothing, and the same write
 * succeeds once the operator frees space or makes the storage writable again, without a restart:
 * the service answers 503 with Retry-After (ERR_EDGE_507) and logs one line saying what to do,
 * not a 500 with a stack trace per request (RELIABILITY.md).
 */
import { closeSync, openSync, unlinkSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { errorField } from "../../sdk/contract";
import { ApiError } from "../errors";
import type { Store } from "./store";

export type WriteFaultCause = "full" | "read-only";

export interface WriteFault {
  cause: WriteFaultCause;
  /** The codes that said so: SQLite's, the OS's (errno), PostgreSQL's SQLSTATE. */
  code: string;
  /** The operator's line: what failed, where, what to do. */
  log: string;
}

/** SQLite result codes (extended ones start with these), errno codes, SQLSTATEs. */
const FULL = ["SQLITE_FULL", "ENOSPC", "EDQUOT", "53100" /* disk_full */];
const READ_ONLY = [
  "SQLITE_READONLY",
  "SQLITE_CANTOPEN",
  "EROFS",
  "EACCES",
  "EPERM",
  "25006" /* read_only_sql_transaction */,
];
const causeOf = (code: string): WriteFaultCause | undefined =>
  FULL.some((c) => code.startsWith(c))
    ? "full"
    : READ_ONLY.some((c) => code.startsWith(c))
      ? "read-only"
      : undefined;

/** Where the store writes, for the operator: SQLite's data directory, PostgreSQL's URL. */
const whereOf = (store: Pick<Store, "kind" | "location">) =>
  store.kind === "sqlite" ? dirname(store.location) : store.location;

/**
 * The fault behind a failed write, or undefined when it is no storage fault. SQLite reports an
 * I/O error for most failed writes other than a full disk (EROFS after the file system was forced
 * read-only is SQLITE_IOERR_WRITE): then a small file written into the data directory tells
 * which errno it was.
 */
export function writeFault(error: unknown, store: Pick<Store, "kind" | "location">): WriteFault | undefined {
  const found = errorField(error, "code");
  let code = typeof found === "string" ? found : "";
  let cause = causeOf(code);
  if (cause === undefined && store.kind === "sqlite" && code.startsWith("SQLITE_IOERR")) {
    const errno = directoryWriteError(dirname(store.location));
    cause = errno === undefined ? undefined : causeOf(errno);
    if (cause !== undefined) code = `${code}, ${errno}`;
  }
  if (cause === undefined) return undefined;
  const where = whereOf(store);
  const log =
    store.kind === "postgres" && code === "25006"
      ? `write failed: the database at ${where} accepts no writes (read-only transaction, ${code}): point the service at the primary or turn default_transaction_read_only off; it recovers by itself`
      : cause === "full"
        ? `write failed: the disk is full (${code}) at ${where}; free space, then it recovers by itself`
        : `write failed: ${where} is read-only or not writable (${code}); make it writable again (remount it read-write, restore its owner and permissions), then it recovers by itself`;
  return { cause, code, log };
}

/** The answer to a request whose write met `fault`: nothing was changed, retry later. */
export function writeFaultError(fault: WriteFault): ApiError {
  const why = fault.cause === "full" ? "its storage is full" : "its storage accepts no writes";
  return new ApiError(
    "storageUnavailable",
    `the service cannot store changes for now: ${why} (its operator is told in its log). Nothing was changed; retry after Retry-After`,
    { headers: { "Retry-After": String(WRITE_FAULT_RETRY_AFTER_S) } },
  );
}

/** Seconds a client is told to wait before it retries a write that met a storage fault. */
export const WRITE_FAULT_RETRY_AFTER_S = 2;

/** The errno code of writing a small file into `dir` (then removed), or undefined when it can be. */
function directoryWriteError(dir: string): string | undefined {
  const probe = join(dir, `.write-probe-${process.pid}`);
  let fd: number | undefined;
  try {
    fd = openSync(probe, "w", 0o600);
    writeSync(fd, Buffer.alloc(4096));
    return undefined;
  } catch (e) {
    const code = errorField(e, "code");
    return typeof code === "string" ? code : undefined;
  } finally {
    try {
      if (fd !== undefined) closeSync(fd);
      unlinkSync(probe);
    } catch {
      // never made, or the directory is read-only: nothing to remove
    }
  }
}
