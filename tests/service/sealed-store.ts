/**
 * What the tests of sealed secrets share (secrets-at-rest, secrets-rotation): throwaway keys,
 * the two places a store lives (a SQLite data directory, a PostgreSQL database) with the CLI
 * flags naming them, a query straight against either database, and the compiled CLI run to its
 * end.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { SecretsKey } from "../../service/secrets";
import { CLI, ROOT } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, removeDir } from "./helpers";

/** Temp directories made by a test file, removed together (call `removeAll` in afterAll). */
export function tempDirs(): { make(label: string): string; removeAll(): void } {
  const dirs: string[] = [];
  return {
    make(label) {
      const dir = makeTempDir(label);
      dirs.push(dir);
      return dir;
    },
    removeAll() {
      for (const d of dirs.splice(0)) removeDir(d);
    },
  };
}

export interface Key {
  key: SecretsKey;
  base64: string;
  /** A key file (mode 0600) as `--secrets-key-file` reads it. */
  file: string;
}

/** A fresh random secrets key, and its key file in a directory of `make`. */
export function newKey(make: (label: string) => string): Key {
  const base64 = randomBytes(32).toString("base64");
  const file = path.join(make("key"), "secrets.key");
  fs.writeFileSync(file, `${base64}\n`, { mode: 0o600 });
  return { key: SecretsKey.parse(base64, "test"), base64, file };
}

/** Where a test's data lives: a SQLite data directory, or a PostgreSQL database. */
export interface Place {
  kind: "sqlite" | "postgres";
  dataDir: string;
  databaseUrl?: string;
  /** CLI flags naming it. */
  flags: string[];
}

/** The two places, their directories made by `make` under `label`. */
export function placesOf(make: (label: string) => string, label: string) {
  return {
    async sqlite(): Promise<Place> {
      const dataDir = make(label);
      return { kind: "sqlite", dataDir, flags: ["--data", dataDir] };
    },
    async postgres(): Promise<Place> {
      const databaseUrl = await (await sharedCluster()).createDatabase();
      const dataDir = make(`${label}-pg`);
      return {
        kind: "postgres",
        dataDir,
        databaseUrl,
        flags: ["--data", dataDir, "--database", databaseUrl],
      };
    },
  };
}

/** Rows of one query against the place's database, straight from it (not through the service). */
export async function queryPlace(place: Place, sql: string): Promise<Array<Record<string, string>>> {
  if (place.kind === "sqlite") {
    const db = new Database(path.join(place.dataDir, "edge.db"));
    try {
      return db.prepare(sql).all() as Array<Record<string, string>>;
    } finally {
      db.close();
    }
  }
  const client = new Client({ connectionString: place.databaseUrl });
  await client.connect();
  try {
    return (await client.query<Record<string, string>>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Runs the compiled `edge-service ARGS` to its end (no secrets key nor database from the environment). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 120_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: ROOT,
        env: { ...process.env, EDGE_SECRETS_KEY: "", EDGE_DATABASE_URL: "", ...env },
        timeout: timeoutMs,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
