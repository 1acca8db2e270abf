/**
 * A partition between the replicas and PostgreSQL, through the deployment the docs ship: three
 * `edge-service serve` replicas behind HAProxy (deploy/haproxy.cfg, addresses changed), each
 * reaching the database through its own relay (tests/support/relay: packets held, nothing closed,
 * no root needed). Under steady load of clients that retry as the SDK does (503 and lost
 * connections, after Retry-After; creates with their Idempotency-Key, and creates without one
 * never repeated), first one replica is cut off, then all three; each partition lasts well past
 * the deadline. Asserted (issue 52's "Done when"):
 * - no request waits longer than the database deadline and a second, HAProxy's retries included
 *   (the bound the replicas keep by construction: see RETRY_GRACE_MS in
 *   service/store/store-postgres.ts); the only slack is for the machine's scheduling noise (a
 *   timer that fires late on a loaded machine), not for the design;
 * - while one replica is cut off, HAProxy's retries do what they are for: every request it may
 *   repeat is answered by another replica (no 503 reaches a client but an unkeyed create's);
 * - no client sees a 504 from the balancer;
 * - no write commits after its client was told it failed (PostgreSQL's commit timestamps against
 *   the times the clients were told), unless its keyed retry answers it;
 * - every pool comes back to serving, and nothing is left idle in a transaction.
 * Waits are on conditions and bounded; everything started is stopped in afterAll.
 */
import type { ChildProcess } from "node:child_process";
import * as http from "node:http";
import { Client } from "pg";
import { type Cli, ensureBuilt, killClis, startCli } from "../support/edge-service";
import { findHaproxy, type Haproxy, type HaproxyLogLine, startHaproxy } from "../support/haproxy";
import { scaled, TIME_SCALE } from "../support/machine";
import { freePort, type PgCluster, startCluster } from "../support/postgres";
import { type Relay, startRelay } from "../support/relay";
import { makeTempDir, removeDir } from "./helpers";

const REPLICAS = 3;
const WORKERS = 4;
const DEADLINE_MS = 2_000;
/**
 * Scheduling noise, and nothing else: a deadline's timer firing late, and the answer's way back
 * through HAProxy, on a machine loaded beyond its cores (scaled to the load at the file's start).
 */
const SCHEDULING_NOISE_MS = scaled(200);
/** The bound of one request, seen by its client: the deadline and a second (issue 52). */
const BOUND_MS = DEADLINE_MS + 1_000 + SCHEDULING_NOISE_MS;
/** Long enough that a request waiting for the heal would break the bound. */
const PARTITION_MS = BOUND_MS + 4_000;

const haproxyFound = findHaproxy();
const describeWithHaproxy = haproxyFound.bin === undefined ? describe.skip : describe;
if (haproxyFound.bin === undefined && haproxyFound.installable) {
  throw new Error(`HAProxy is not installed; run 'bash scripts/provision-haproxy.sh': ${haproxyFound.why}`);
}

const started = new Set<ChildProcess>();
const relays: Relay[] = [];
const dirs: string[] = [];
let cluster: PgCluster | undefined;
let stop = false;

afterAll(async () => {
  stop = true;
  for (const r of relays) r.unblock();
  killClis();
  for (const child of started) if (child.exitCode === null) child.kill("SIGKILL");
  for (const r of relays) await r.close();
  cluster?.destroy();
  for (const d of dirs) removeDir(d);
});

async function until(what: () => string, boundMs: number, cond: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + scaled(boundMs);
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`waited ${scaled(boundMs)} ms for ${what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Attempt {
  what: string;
  /** What the network was doing when it was sent (see `phase`). */
  phase: string;
  /** Wall clock (ms since the epoch) at its start and when its client was told. */
  sentAt: number;
  toldAt: number;
  ms: number;
  status: number | string;
  requestId?: string;
  replayed: boolean;
  json?: any;
}

/** What the network is doing now: the phase each attempt is counted in. */
let phase = "steady";

function send(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Attempt> {
  const sentAt = Date.now();
  const sentIn = phase;
  const t0 = performance.now();
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const done = (status: number | string, res?: http.IncomingMessage, json?: unknown) =>
      resolve({
        what: `${method} ${path}`,
        phase: sentIn,
        sentAt,
        toldAt: Date.now(),
        ms: performance.now() - t0,
        status,
        requestId: res?.headers["request-id"] as string | undefined,
        replayed: res?.headers["idempotent-replayed"] === "true",
        json,
      });
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        agent,
        headers: { ...(text === undefined ? {} : { "content-type": "application/json" }), ...headers },
        timeout: scaled(120_000),
      },
      (res) => {
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (data += d));
        res.on("end", () => {
          let json: unknown;
          try {
            json = data ? JSON.parse(data) : undefined;
          } catch {
            json = data;
          }
          done(res.statusCode!, res, json);
        });
        res.on("error", (e) => done(e.message));
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer")));
    req.on("error", (e) => done(e.message));
    req.end(text);
  });
}

describeWithHaproxy("a partition between the replicas and PostgreSQL, behind HAProxy", () => {
  it(
    "one replica cut off, then all: bounded waits, no 504, no write committed after its client was told it failed, pools back",
    async () => {
      ensureBuilt();
      cluster = await startCluster({ fsync: false, settings: { track_commit_timestamp: "on" } });
      const database = await cluster.createDatabase();
      const dbName = new URL(database).pathname.slice(1);
      for (let i = 0; i < REPLICAS; i++) relays.push(await startRelay(cluster.port));
      const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
      const replicas: Cli[] = await Promise.all(
        ports.map((port, i) =>
          startCli([
            "--port",
            String(port),
            "--database",
            database.replace(`:${cluster!.port}/`, `:${relays[i]!.port}/`),
            "--pool-size",
            "4",
            "--database-deadline",
            `${DEADLINE_MS}ms`,
          ]),
        ),
      );
      const dir = makeTempDir("partition");
      dirs.push(dir);
      const lb: Haproxy = await startHaproxy(
        haproxyFound.bin!,
        dir,
        { frontend: await freePort(), servers: ports },
        started,
      );
      const states = async () => (await lb.servers()).map((s) => s.status).join(", ");
      const allUp = "UP, UP, UP";
      await until(
        () => "HAProxy to see every replica UP",
        60_000,
        async () => (await states()) === allUp,
      );
      const base = new URL(lb.url);

      // ---- the load
      const attempts: Attempt[] = [];
      /** Per logical write: its unique text, the attempts' tell times, and the final answer. */
      const writes: Array<{ text: string; keyed: boolean; failedAt: number[]; acked?: Attempt }> = [];
      const setupAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const edge = await send(
        setupAgent,
        base,
        "POST",
        "/edges/https",
        { description: "partition" },
        { "Idempotency-Key": "partition-edge" },
      );
      expect(edge.status).toBe(201);
      const routesPath = `/edges/https/${edge.json.id}/routes`;
      /** A write repeated until answered (a create with its key), each attempt recorded. */
      const write = async (
        agent: http.Agent,
        method: string,
        path: string,
        body: any,
        text: string,
        key?: string,
      ) => {
        const record = {
          text,
          keyed: key !== undefined || method !== "POST",
          failedAt: [] as number[],
          acked: undefined as Attempt | undefined,
        };
        writes.push(record);
        for (let n = 0; n < 50 && !stop; n++) {
          const a = await send(agent, base, method, path, body, key ? { "Idempotency-Key": key } : {});
          attempts.push(a);
          if (typeof a.status === "number" && a.status < 300) {
            record.acked = a;
            return a;
          }
          record.failedAt.push(a.toldAt);
          if (method === "POST" && key === undefined) return undefined; // never repeated: unknown
          await new Promise((r) => setTimeout(r, 300));
        }
        return undefined;
      };
      const worker = async (w: number) => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        for (let n = 0; !stop; n++) {
          const key = `w${w}-${n}`;
          const made = await write(
            agent,
            "POST",
            routesPath,
            { match_type: "path_prefix", match: `/${key}`, description: key },
            key,
            key,
          );
          if (made) {
            const text = `${key}-patched`;
            await write(agent, "PATCH", `${routesPath}/${made.json.id}`, { description: text }, text);
            attempts.push(await send(agent, base, "GET", `${routesPath}/${made.json.id}`));
          }
          if (n % 3 === 0)
            await write(agent, "POST", "/edges/tls", { description: `plain-${key}` }, `plain-${key}`);
        }
      };
      const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
      const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const oneCutOff = "one replica cut off";
      const phases = [
        { name: oneCutOff, cut: [0] },
        { name: "all cut off", cut: [0, 1, 2] },
      ];
      /** HAProxy's log lines, by phase (from the phase's start to the heal's end). */
      const logged: Record<string, HaproxyLogLine[]> = {};
      try {
        await pause(2_000);
        for (const { name, cut } of phases) {
          phase = name;
          const from = lb.requests().length;
          for (const i of cut) relays[i]!.block();
          await pause(PARTITION_MS);
          phase = `healing after ${name}`;
          for (const i of cut) relays[i]!.unblock();
          await until(
            () => `every replica UP again after the heal (${name})`,
            60_000,
            async () => (await states()) === allUp,
          );
          logged[name] = lb.requests().slice(from);
          await pause(2_000);
          phase = "steady";
        }
      } finally {
        stop = true;
        await Promise.all(workers);
      }

      // ---- pools: every replica serves again; nothing idle in a transaction
      const db = new Client({ connectionString: database });
      await db.connect();
      try {
        await until(
          () => "no session idle in a transaction",
          30_000,
          async () => {
            const { rows } = await db.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state LIKE 'idle in transaction%'",
              [dbName],
            );
            return rows[0].n === 0;
          },
        );
        const pools: string[] = [];
        for (const r of replicas) {
          // A burst that needs the whole pool, then its gauges: nothing in use, nothing waiting.
          const burst = await Promise.all(
            Array.from({ length: 8 }, () => send(new http.Agent(), new URL(r.url), "GET", routesPath)),
          );
          expect(burst.map((b) => b.status)).toEqual(Array(8).fill(200));
          // Then its gauges: nothing in use, nothing waiting. A leaked connection stays checked out
          // for good, while one the pool is still opening (pg counts it in its total) or a
          // background read holds is given back within moments: read until settled, with a deadline.
          let gauges = "";
          await until(
            () => `${r.url}'s pool to settle (last seen: ${gauges})`,
            10_000,
            async () => {
              const metrics = await new Promise<string>((resolve, reject) =>
                http
                  .get(`${r.url}/metrics`, (res) => {
                    let t = "";
                    res.on("data", (d) => (t += d)).on("end", () => resolve(t));
                  })
                  .on("error", reject),
              );
              gauges = metrics
                .split("\n")
                .filter((l) => l.startsWith("edge_service_pg_pool"))
                .join(" ");
              return (
                /edge_service_pg_pool_connections\{state="in_use"\} 0\b/.test(metrics) &&
                /edge_service_pg_pool_waiting_requests 0\b/.test(metrics)
              );
            },
          );
          pools.push(gauges);
        }

        // ---- late commits: every change's commit time (its audit event's transaction)
        const { rows: events } = await db.query<{ request_id: string; changes: string; committed: Date }>(
          "SELECT request_id, changes, pg_xact_commit_timestamp(xmin) AS committed FROM audit_events",
        );
        const late: string[] = [];
        for (const w of writes) {
          // The commits that wrote this text (a later PATCH's event holds it too, as `before`).
          const commits = events.filter(
            (e) =>
              (JSON.parse(e.changes) as Record<string, { after?: unknown }>).description?.after === w.text,
          );
          for (const c of commits) {
            const at = c.committed.getTime();
            const acked = w.acked?.requestId === c.request_id;
            // Told failed before it committed, and not answered by its keyed retry (a replay).
            const toldBefore = w.failedAt.filter((t) => t < at);
            if (!acked && toldBefore.length > 0 && !(w.acked?.replayed ?? false)) {
              late.push(
                `${w.text}: committed ${new Date(at).toISOString()} after told failed at ${toldBefore.map((t) => new Date(t).toISOString()).join(", ")}`,
              );
            }
          }
        }
        // Each keyed create made once.
        const { rows: twice } = await db.query(
          "SELECT create_key, count(*)::int AS n FROM routes WHERE create_key IS NOT NULL GROUP BY create_key HAVING count(*) > 1",
        );
        late.push(...twice.map((r) => `${r.create_key}: made ${r.n} times`));
        const statusesOf = (some: Attempt[]) => {
          const out: Record<string, number> = {};
          for (const a of some) out[String(a.status)] = (out[String(a.status)] ?? 0) + 1;
          return out;
        };
        const statuses = statusesOf(attempts);
        const longest = Math.max(...attempts.map((a) => a.ms));
        const firstSentAt = Math.min(...attempts.map((a) => a.sentAt));
        const slow = attempts
          .filter((a) => a.ms > BOUND_MS)
          .map((a) => `${a.what} ${a.status} after ${Math.round(a.ms)} ms (${a.phase})`);
        const byPhase: Record<
          string,
          { requests: number; statuses: Record<string, number>; longestMs: number }
        > = {};
        for (const name of new Set(attempts.map((a) => a.phase))) {
          const some = attempts.filter((a) => a.phase === name);
          byPhase[name] = {
            requests: some.length,
            statuses: statusesOf(some),
            longestMs: Math.round(Math.max(...some.map((a) => a.ms))),
          };
        }
        // One replica cut off: HAProxy repeats what reached it on the others, which answer. Only a
        // create without a key is not repeated (whether it was made is unknown): its 503 reaches
        // its client.
        const oneCut = attempts.filter((a) => a.phase === oneCutOff);
        const notServed = oneCut
          .filter((a) => !(typeof a.status === "number" && a.status < 300))
          .filter((a) => !(a.what === "POST /edges/tls"))
          .map((a) => `${a.what} ${a.status} after ${Math.round(a.ms)} ms`);
        const figures = {
          timeScale: TIME_SCALE,
          deadlineMs: DEADLINE_MS,
          boundMs: BOUND_MS,
          partitionMs: PARTITION_MS,
          requests: attempts.length,
          statuses,
          longestMs: Math.round(longest),
          // The five slowest, with when they were sent (ms after the first attempt).
          slowest: [...attempts]
            .sort((a, b) => b.ms - a.ms)
            .slice(0, 5)
            .map(
              (a) =>
                `${a.what} ${a.status} ${Math.round(a.ms)} ms, sent at +${a.sentAt - firstSentAt} ms (${a.phase})`,
            ),
          byPhase,
          haproxy504: lb.requests().filter((l) => l.status === 504).length,
          haproxyRetried: Object.fromEntries(
            Object.entries(logged).map(([name, lines]) => [name, lines.filter((l) => l.retries > 0).length]),
          ),
          unkeyedCreatesToldFailed: writes.filter((w) => !w.keyed && !w.acked).length,
          keyedRetriesReplayed: writes.filter((w) => w.acked?.replayed).length,
          pools,
        };
        console.log(`partition: ${JSON.stringify(figures, null, 1)}`);
        expect({ slow, late, from504: statuses["504"] ?? 0, notServed }).toEqual({
          slow: [],
          late: [],
          from504: 0,
          notServed: [],
        });
        // The premise of the one-replica phase: HAProxy repeated requests (the cut-off replica's).
        expect(figures.haproxyRetried[oneCutOff]).toBeGreaterThan(0);
        expect(figures.haproxy504).toBe(0);
        // The premise: clients were told 503 while the partitions lasted (the test saw them).
        expect(statuses["503"] ?? 0).toBeGreaterThan(0);
      } finally {
        await db.end();
      }
    },
    scaled(240_000),
  );
});
