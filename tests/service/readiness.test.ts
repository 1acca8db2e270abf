/**
 * Readiness on PostgreSQL when the database goes away under a ready server: a "ready" answer is
 * reused (at most one check a second), but never past a sign that the database is gone (a pooled
 * connection lost, a request that could not reach it), and a database that takes no writes (a
 * standby, as a failover's new primary is a moment before its promotion completes) is not ready.
 * Real PostgreSQL clusters stopped under the store and the compiled server; every wait is on an
 * event, bounded, and nothing asserts on time.
 */
import { Client } from "pg";
import { Readiness } from "../../service/http/readiness";
import { PostgresStore } from "../../service/store/store-postgres";
import { httpTransport } from "../../sdk/transport";
import { ensureBuilt, killClis, NO_DRAIN, startCli } from "../support/edge-service";
import { scaled } from "../support/machine";
import { type PgCluster, startCluster } from "../support/postgres";
import { raw } from "./helpers";

let shared: Promise<PgCluster> | undefined;
const stores: PostgresStore[] = [];

afterAll(async () => {
  killClis();
  for (const store of stores) await store.close().catch(() => undefined);
  if (shared) (await shared).destroy();
});

/** This file's cluster (each test stops it and starts it again), and a new database on it. */
async function cluster(): Promise<{ cluster: PgCluster; url: string }> {
  shared ??= startCluster({ fsync: false });
  const c = await shared;
  return { cluster: c, url: await c.createDatabase() };
}

/** Polls `cond` until it holds; past the bound, fails saying `what`. */
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = performance.now() + scaled(30_000);
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`waited ${scaled(30_000)} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("readiness when PostgreSQL goes away under a ready server", () => {
  it("a ready answer is not reused once the store has lost a connection: the next ask checks again", async () => {
    const { cluster: pg, url } = await cluster();
    const store = await PostgresStore.open(url, { auditIndexEveryMs: 0 });
    stores.push(store);
    // A reuse far longer than this test: only the store's sign can end it.
    const readiness = new Readiness(() => store.whyNotReady(), undefined, {
      reuseMs: 3_600_000,
      unavailableSeen: () => store.unavailableSeen(),
    });
    expect(await readiness.whyNot()).toBeUndefined();
    expect(await readiness.whyNot()).toBeUndefined(); // reused: nothing happened since
    const seen = store.unavailableSeen();
    pg.stopServer();
    try {
      // The check left its connection idle in the pool: the stop ends it, which the store sees.
      await until("the store to see its idle connection lost", () => store.unavailableSeen() > seen);
      expect(await readiness.whyNot()).toMatch(/^PostgreSQL at \S+ cannot be reached \(/);
    } finally {
      pg.startServer();
    }
  });

  it("the compiled server: the first /readyz after PostgreSQL stopped says 503, and 200 once it is back", async () => {
    ensureBuilt();
    const { cluster: pg, url } = await cluster();
    const cli = await startCli(["--port", "0", ...NO_DRAIN, "--database", url, "--pool-size", "2"]);
    const t = httpTransport({ baseUrl: cli.url, retries: 0 });
    // Ready, the answer fresh: without the store's sign it would be reused for a second.
    expect((await raw(t, "GET", "/readyz")).status).toBe(200);
    pg.stopServer();
    let first;
    try {
      first = await raw(t, "GET", "/readyz");
    } finally {
      pg.startServer();
    }
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    // Back by itself, without a restart.
    let status = 0;
    const deadline = performance.now() + scaled(30_000);
    while (status !== 200 && performance.now() < deadline) {
      status = (await raw(t, "GET", "/readyz")).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    cli.child.kill("SIGTERM");
    expect(await cli.exit).toEqual({ code: 0, signal: null });
  });

  it("a database that takes no writes (read-only, as a standby is) is not ready, before any write fails", async () => {
    const { cluster: pg, url } = await cluster();
    const store = await PostgresStore.open(url, { auditIndexEveryMs: 0 });
    stores.push(store);
    expect(await store.whyNotReady()).toBeUndefined();
    const admin = new Client({ connectionString: pg.url("postgres") });
    await admin.connect();
    try {
      await admin.query("ALTER SYSTEM SET default_transaction_read_only = on");
      await admin.query("SELECT pg_reload_conf()");
      let reason: string | undefined;
      await until("readiness to see the database read-only", async () => {
        reason = await store.whyNotReady();
        return reason !== undefined;
      });
      expect(reason).toMatch(
        /^the database at \S+ accepts no writes \(a standby, or default_transaction_read_only on\)/,
      );
      await admin.query("ALTER SYSTEM RESET default_transaction_read_only");
      await admin.query("SELECT pg_reload_conf()");
      await until(
        "readiness to see the database writable again",
        async () => (await store.whyNotReady()) === undefined,
      );
    } finally {
      await admin.query("ALTER SYSTEM RESET default_transaction_read_only").catch(() => undefined);
      await admin.end();
    }
  });
});
