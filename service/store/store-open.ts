/** Chooses the store at start-up: PostgreSQL when a database URL is given, else SQLite in a data directory. */
import type { Secrets } from "../secrets";
import type { Store } from "./store";
import { SqliteStore } from "./store-sqlite";

export interface StoreChoice {
  /** Data directory of the SQLite store (created if missing), or ":memory:". */
  dataDir: string;
  /** postgres://user:password@host:port/database: the PostgreSQL store instead (replicas). */
  databaseUrl?: string;
  /** SQLite: checkpoint from a worker thread (long-lived servers). */
  backgroundCheckpoints?: boolean;
  /** PostgreSQL: connections of this process's pool. */
  poolSize?: number;
  /** PostgreSQL: the bound on every database call (see PostgresStoreOptions.deadlineMs); default none. */
  deadlineMs?: number;
  log?: (line: string) => void;
  /** The secrets key (see ./secrets); default: none, secrets stored unsealed. */
  secrets?: Secrets;
}

function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

export async function openStore(choice: StoreChoice): Promise<Store> {
  if (choice.databaseUrl !== undefined) {
    if (!isPostgresUrl(choice.databaseUrl)) {
      throw new Error(
        `--database (or EDGE_DATABASE_URL) must be a postgres:// or postgresql:// URL, got "${choice.databaseUrl.slice(0, 40)}"; for SQLite pass --data DIR instead`,
      );
    }
    // Loaded only here: a SQLite service never loads pg.
    const { PostgresStore } = require("./store-postgres") as typeof import("./store-postgres");
    return PostgresStore.open(choice.databaseUrl, {
      poolSize: choice.poolSize,
      deadlineMs: choice.deadlineMs,
      log: choice.log,
      secrets: choice.secrets,
    });
  }
  return SqliteStore.open(choice.dataDir, {
    backgroundCheckpoints: choice.backgroundCheckpoints,
    secrets: choice.secrets,
  });
}
