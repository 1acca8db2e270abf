/**
 * The PostgreSQL store's deadline, against a real PostgreSQL through a silent network (the relay
 * of tests/support/relay: a partition without root), and against a database that holds a write
 * on a lock past it:
 * - a request meeting the partition is answered 503 with Retry-After, its connection dropped
 *   from the pool (not handed to the next request), and its transaction never commits, even
 *   once the partition heals and what was held is delivered;
 * - once a check has found the database out of reach, requests are answered at once (the gate),
 *   and the store opens the gate again by itself once the database answers;
 * - a request that says when a load balancer received it (X-Request-Start) gets what is left of
 *   the deadline and RETRY_GRACE_MS from then: nothing once that is gone, though the database
 *   answers;
 * - a write whose COMMIT is held on a lock past its deadline is cancelled by the server, so
 *   nothing commits after its client was told 503 (the server-side bound the store sends).
 * Every wait is on a condition and bounded (tests/support/machine); nothing asserts on time.
 */
import { Client } from "pg";
import { createEdgeApp } from "../../service/http/app";
import { PostgresStore, RETRY_GRACE_MS } from "../../service/store/store-postgres";
import { StoreUnavailable } from "../../service/store/store";
import { scaled, within } from "../support/machine";
import { type Relay, startRelay } from "../support/relay";
import { type PgCluster, sharedCluster } from "../support/postgres";

const stores: PostgresStore[] = [];
const relays: Relay[] = [];
const clients: Client[] = [];

afterAll(async () => {
  for (const relay of relays) relay.unblock();
  for (const client of clients) await client.end().catch(() => undefined);
  for (const store of stores) await store.close().catch(() => undefined);
  for (const relay of relays) await relay.close();
});

/** Polls `cond` until it holds; past the bound, fails saying `what`. */
async function until(what: string, cond: () => boolean | Promise<boolean>, boundMs = 30_000): Promise<void> {
  const deadline = performance.now() + scaled(boundMs);
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`waited ${scaled(boundMs)} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function connected(url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  client.on("error", () => undefined); // a session the test ends, or the cluster's stop
  clients.push(client);
  await client.connect();
  return client;
}

/** The app on a store reached through a relay; the database's own URL for the test's checks. */
async function serviceThroughRelay(deadlineMs: number, log?: (line: string) => void) {
  const cluster: PgCluster = await sharedCluster();
  const direct = await cluster.createDatabase();
  const relay = await startRelay(cluster.port);
  relays.push(relay);
  const throughRelay = direct.replace(`:${cluster.port}/`, `:${relay.port}/`);
  const store = await PostgresStore.open(throughRelay, { auditIndexEveryMs: 0, poolSize: 3, deadlineMs });
  stores.push(store);
  const app = createEdgeApp({ store, log });
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.request(path, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      json: text ? JSON.parse(text) : undefined,
    };
  };
  return { store, relay, direct, call, app };
}

/** The sessions of the service on the database, by state (`idle in transaction` among them). */
async function sessions(db: Client, database: string): Promise<string[]> {
  const { rows } = await db.query<{ state: string }>(
    "SELECT state FROM pg_stat_activity WHERE datname = $1 AND application_name = 'edge-service' AND pid <> pg_backend_pid()",
    [database],
  );
  return rows.map((r) => r.state).sort();
}

describe("the PostgreSQL store's deadline, through a silent network", () => {
  it(
    "a write meeting a partition is a 503 at its deadline; its connection is dropped; nothing commits after the heal",
    async () => {
      const { store, relay, direct, call } = await serviceThroughRelay(1500);
      const db = await connected(direct);
      const database = new URL(direct).pathname.slice(1);
      const edge = await call("POST", "/edges/https", { description: "before" });
      expect(edge.status).toBe(201);
      const routes = `/edges/https/${edge.json.id}/routes`;
      const route = await call("POST", routes, {
        match_type: "path_prefix",
        match: "/a",
        description: "before",
      });
      expect(route.status).toBe(201);
      const poolBefore = store.poolStats();

      relay.block();
      const patch = call("PATCH", `${routes}/${route.json.id}`, { description: "during the partition" });
      const keyed = call(
        "POST",
        "/edges/https",
        { description: "keyed, during" },
        { "Idempotency-Key": "during-1" },
      );
      const [patched, created] = await within(
        "the writes' answers during the partition",
        20_000,
        Promise.all([patch, keyed]),
      );
      // Answered while the partition still holds: the deadline, not the heal, ended them.
      expect(relay.blocked).toBe(true);
      for (const answer of [patched, created]) {
        expect({
          status: answer.status,
          retryAfter: answer.retryAfter,
          code: answer.json.error_code,
        }).toEqual({
          status: 503,
          retryAfter: "1",
          code: "ERR_EDGE_503",
        });
      }
      // Not handed back to the pool: the cut connections are gone from it.
      // (a connection being opened is counted in use until its own bound, the same deadline).
      await until("the pool to hold no connection while the partition lasts", () => {
        const { inUse, idle } = store.poolStats();
        return inUse === 0 && idle === 0;
      });
      expect(poolBefore.idle).toBeGreaterThan(0); // the premise: the PATCH took a pooled connection

      relay.unblock();
      // Once healed: the sessions the relay held end (the resets reach the server), none is left
      // idle in a transaction, and neither write was made.
      await until("no session of the service idle in a transaction", async () =>
        (await sessions(db, database)).every((s) => s !== "idle in transaction"),
      );
      await until(
        "a request to succeed again",
        async () => (await call("GET", `/edges/https/${edge.json.id}`)).status === 200,
      );
      const { rows } = await db.query<{ description: string }>(
        "SELECT convert_from(description, 'UTF8') AS description FROM edges ORDER BY description",
      );
      expect(rows.map((r) => r.description)).toEqual(["before"]);
      const routeRows = await db.query<{ description: string }>(
        "SELECT convert_from(description, 'UTF8') AS description FROM routes",
      );
      expect(routeRows.rows).toEqual([{ description: "before" }]);
      // The keyed create's retry makes it now, once.
      const retried = await call(
        "POST",
        "/edges/https",
        { description: "keyed, during" },
        { "Idempotency-Key": "during-1" },
      );
      expect(retried.status).toBe(201);
      const again = await call(
        "POST",
        "/edges/https",
        { description: "keyed, during" },
        { "Idempotency-Key": "during-1" },
      );
      expect(again.json.id).toBe(retried.json.id);
    },
    scaled(90_000),
  );

  it(
    "once a check found the database out of reach, requests are answered at once; the gate opens by itself after the heal",
    async () => {
      // A deadline far longer than the test's bounds: only the gate can answer in time.
      const { store, relay, call } = await serviceThroughRelay(600_000);
      expect((await call("POST", "/edges/https", { description: "x" })).status).toBe(201);
      relay.block();
      const reason = await within("the readiness check to answer", 10_000, store.whyNotReady());
      expect(reason).toMatch(/^PostgreSQL at \S+ cannot be reached \(/);
      const answers = await within(
        "requests to be answered at once while the database is known out of reach",
        10_000,
        Promise.all([call("GET", "/edges/https"), call("POST", "/edges/https", { description: "y" })]),
      );
      expect(answers.map((a) => [a.status, a.retryAfter])).toEqual([
        [503, "1"],
        [503, "1"],
      ]);
      await expect(store.read(async () => 1)).rejects.toThrow(StoreUnavailable);
      relay.unblock();
      // Nobody asks readiness: the store checks again by itself, each second.
      await until(
        "a request to succeed after the heal",
        async () => (await call("GET", "/edges/https")).status === 200,
      );
    },
    scaled(90_000),
  );
});

describe("a request's deadline from the balancer's receipt (X-Request-Start)", () => {
  it(
    "counts from the time the header says: what is left of the deadline and RETRY_GRACE_MS, nothing once it is gone",
    async () => {
      const lines: string[] = [];
      const deadlineMs = 1500;
      const { relay, direct, call } = await serviceThroughRelay(deadlineMs, (l) => lines.push(l));
      const db = await connected(direct);
      const startedAgo = (ms: number) => ({ "X-Request-Start": `t=${Date.now() - ms}` });
      const create = (key: string, headers: Record<string, string>) =>
        call("POST", "/edges/https", { description: key }, { "Idempotency-Key": key, ...headers });
      const unavailable = () => lines.filter((l) => l.includes("unavailable"));

      // Received just now: served, as without the header.
      expect((await create("now", startedAgo(0))).status).toBe(201);
      // Received longer ago than the deadline and the grace (the balancer's earlier attempts used
      // them up): answered 503 at once, though the database answers, and nothing is made.
      const late = await create("late", startedAgo(deadlineMs + RETRY_GRACE_MS + 100));
      const lateGet = await call(
        "GET",
        "/edges/https",
        undefined,
        startedAgo(deadlineMs + RETRY_GRACE_MS + 100),
      );
      expect([late.status, late.retryAfter, lateGet.status]).toEqual([503, "1", 503]);
      expect(unavailable()).toEqual([
        expect.stringMatching(
          /nothing was left of the 1.5 s database deadline and 800 ms more, from when the load balancer/,
        ),
        expect.stringMatching(
          /nothing was left of the 1.5 s database deadline and 800 ms more, from when the load balancer/,
        ),
      ]);
      // Received a deadline ago, the database silent: ended by what was left (the grace), before
      // the store's own deadline from this replica's receipt would end it.
      relay.block();
      lines.length = 0;
      const repeated = await within(
        "the answer of a request received a deadline ago",
        20_000,
        create("repeated", startedAgo(deadlineMs)),
      );
      relay.unblock();
      expect(repeated.status).toBe(503);
      expect(unavailable()).toEqual([
        expect.stringMatching(
          /did not answer within the 1.5 s database deadline and 800 ms more, from when the load balancer received the request/,
        ),
      ]);
      // Neither was made.
      await until(
        "a request to succeed after the heal",
        async () => (await call("GET", "/edges/https")).status === 200,
      );
      const { rows } = await db.query<{ description: string }>(
        "SELECT convert_from(description, 'UTF8') AS description FROM edges ORDER BY description",
      );
      expect(rows.map((r) => r.description)).toEqual(["now"]);
    },
    scaled(90_000),
  );
});

describe("a write held on a lock past its deadline", () => {
  it(
    "is cancelled by the server before its client is told 503: nothing commits after",
    async () => {
      const cluster = await sharedCluster();
      const url = await cluster.createDatabase();
      const deadlineMs = 4000;
      // One connection, whose statements a first PATCH prepares (a PREPARE takes the locks its
      // statement will: the one under test must wait in its EXECUTE, with the COMMIT).
      const store = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 1, deadlineMs });
      stores.push(store);
      const app = createEdgeApp({ store });
      const json = (body: unknown) => ({
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const edge = await (await app.request("/edges/https", { method: "POST", ...json({}) })).json();
      const path = `/edges/https/${edge.id}/routes`;
      const route = await (
        await app.request(path, { method: "POST", ...json({ match_type: "path_prefix", match: "/a" }) })
      ).json();
      const warm = await app.request(`${path}/${route.id}`, {
        method: "PATCH",
        ...json({ description: "warm" }),
      });
      expect(warm.status).toBe(200);

      // The test's own sessions: one holds the route's row (the PATCH's first statement waits on
      // it), the other the audit table (its COMMIT's statement, which writes the event, then waits).
      const rowHolder = await connected(url);
      const auditHolder = await connected(url);
      await rowHolder.query("BEGIN");
      await rowHolder.query("SELECT id FROM routes WHERE id = $1 FOR UPDATE", [route.id]);
      await auditHolder.query("BEGIN");
      await auditHolder.query("LOCK TABLE audit_events IN SHARE MODE");
      const watcher = await connected(url);

      const eventsBefore = await watcher.query("SELECT seq FROM audit_events WHERE object_id = $1", [
        route.id,
      ]);
      const patched = Promise.resolve(
        app.request(`${path}/${route.id}`, { method: "PATCH", ...json({ description: "late?" }) }),
      );
      let answered = false;
      void patched.then(() => (answered = true));
      // A quarter of the deadline in, the row is let go: the PATCH's COMMIT statement then waits on
      // the audit table, with most of its deadline left (the session's own bound would let it wait
      // a whole deadline more).
      await new Promise((r) => setTimeout(r, deadlineMs / 4));
      await rowHolder.query("COMMIT");
      let waitedOnAudit = false;
      await until("the PATCH's write to wait on the audit table's lock", async () => {
        const { rows } = await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'edge-service' AND wait_event_type = 'Lock' AND query LIKE '%inline_route_update%COMMIT%'",
        );
        waitedOnAudit = rows[0]!.n > 0;
        return waitedOnAudit || answered;
      });
      expect(waitedOnAudit).toBe(true);
      const answer = await within("the PATCH's answer", 30_000, patched);
      expect(answer.status).toBe(503);
      // Told 503; only now is the audit table let go. Had the server kept the statement waiting, it
      // would commit now.
      await auditHolder.query("COMMIT");
      await until("the test's sessions' locks to be gone", async () => {
        const { rows } = await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'edge-service' AND wait_event_type = 'Lock'",
        );
        return rows[0]!.n === 0;
      });
      const { rows } = await watcher.query<{ description: string }>(
        "SELECT convert_from(description, 'UTF8') AS description FROM routes WHERE id = $1",
        [route.id],
      );
      expect(rows).toEqual([{ description: "warm" }]);
      const events = await watcher.query("SELECT seq FROM audit_events WHERE object_id = $1", [route.id]);
      expect(events.rows).toEqual(eventsBefore.rows);
    },
    scaled(90_000),
  );
});
