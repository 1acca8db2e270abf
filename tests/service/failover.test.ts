/**
 * A PostgreSQL failover under load, through the deployment the docs ship, tested whole: etcd,
 * two Patroni nodes (synchronous replication) and the HAProxy that sends connections to the
 * primary (deploy/postgres-ha/), two `edge-service serve` replicas on that database behind
 * HAProxy (deploy/haproxy.cfg), and clients that retry as the SDK's HTTP transport does.
 * Workers send keyed creates, PATCHes and GETs for the whole test, while
 *  1. the primary's postmaster is killed (kill -9): PostgreSQL crashes, its Patroni fails over at
 *     once (primary_start_timeout 0), and the old primary comes back as the synchronous standby;
 *  2. then the new primary's whole node is killed (Patroni and postmaster, kill -9): its leader
 *     key expires, the standby takes over; the node is started again and rejoins (pg_rewind).
 * No call may fail after the clients' retries, no acknowledged write may be missing from the
 * database afterwards (each route there, with the description its last acknowledged PATCH set),
 * nothing may be made twice (one object per Idempotency-Key), and each replica of the service
 * must be ready again by itself, the same process. One cluster serves both cases.
 * Every wait is on a condition, bounded (tests/support/machine) and saying what it waited for;
 * nothing asserts on time. The figures (how long until a new primary, until writes succeed
 * again, what the clients saw) are printed for docs/operating.md and RELIABILITY.md.
 */
import type { ChildProcess } from "node:child_process";
import { Client } from "pg";
import { EdgeClient } from "../../sdk/client";
import { httpTransport, type RetryNotice } from "../../sdk/transport";
import { type Cli, ensureBuilt, killClis, startCli } from "../support/edge-service";
import { findHaproxy, fixedPort, type Haproxy, startHaproxy } from "../support/haproxy";
import { scaled, TIME_SCALE } from "../support/machine";
import { freePort } from "../support/postgres";
import {
  findHaTools,
  type HaCluster,
  type PatroniNode,
  startHaCluster,
  stopUnder,
  until,
} from "../support/postgres-ha";
import { makeTempDir } from "./helpers";

const WORKERS = 4;
/** Calls between two events of the test (a kill, the end): every replica and both nodes see load. */
const CALLS_BETWEEN = 150;
const SERVICE = { database: "edge", user: "edge", password: "failover-test-edge" };

const haproxyFound = findHaproxy();
const haFound = findHaTools();
const missing = [
  haproxyFound.bin === undefined
    ? { what: "HAProxy", ...haproxyFound, script: "provision-haproxy.sh" }
    : undefined,
  haFound.found ? undefined : { what: "Patroni and etcd", ...haFound, script: "provision-ha.sh" },
].filter((m) => m !== undefined);
const installable = missing.filter((m) => m.installable);
if (installable.length > 0) {
  // Installable but not installed: a missing step, not a reason to skip.
  throw new Error(
    installable
      .map(
        (m) =>
          `${m.what} not installed; run 'bash scripts/${m.script}' (npm test's pretest and .ci/run do): ${m.why}`,
      )
      .join("\n"),
  );
}
if (missing.length > 0) {
  console.warn(
    `SKIPPED tests/service/failover.test.ts: ${missing.map((m) => m.what).join(" and ")} cannot be installed on this machine, so the documented PostgreSQL failover is NOT tested here.\n${missing.map((m) => m.why).join("\n")}`,
  );
}
const describeWithHa = missing.length > 0 ? describe.skip : describe;

/** What afterAll stops and removes, whatever state the test was left in. */
const started = new Set<ChildProcess>();
const dirs: string[] = [];
let cluster: HaCluster | undefined;
let stopWorkers = false;

afterAll(() => {
  stopWorkers = true;
  killClis();
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  cluster?.stop();
  // A cluster that failed to start (or a test that timed out) leaves processes in its directory.
  for (const dir of dirs) stopUnder(dir);
});

/** One call of a worker: what it was, when it began and ended, how it went. */
interface Call {
  kind: "create edge" | "create route" | "patch route" | "get route";
  write: boolean;
  startedAt: number;
  endedAt: number;
  error?: string;
  retries: RetryNotice[];
}

/** What a case measured, from its kill (ms). */
interface CaseFigures {
  case: string;
  /** The other node's PostgreSQL takes writes (pg_is_in_recovery() false, polled every 50 ms). */
  promotedAfterMs: number;
  /** The end of the longest time without a write acknowledged (the outage), from the kill. */
  writesBackAfterMs: number;
  /** That time: from the last write acknowledged before it to the first after it. */
  writeOutageMs: number;
  /** The longest call begun within a second before the kill or after it, retries included. */
  longestCallMs: number;
  /** Calls under way during the outage of writes (begun before its end, ended after its start). */
  callsInOutage: number;
  /** Calls in that window that were retried, and the retries' reasons. */
  callsRetried: number;
  retryReasons: Record<string, number>;
  /** The old primary is the synchronous standby again. */
  rejoinedAfterMs: number;
}

describeWithHa("a PostgreSQL failover under load (deploy/postgres-ha, deploy/haproxy.cfg)", () => {
  beforeAll(() => {
    ensureBuilt();
  });

  it(
    "the primary's postmaster killed, then its whole node: no call failed, no acknowledged write lost, nothing made twice, replicas ready again",
    async () => {
      const bin = haproxyFound.bin!;
      const dir = makeTempDir("failover");
      dirs.push(dir);
      const setupStarted = performance.now();
      const ha = await startHaCluster(dir, bin, started, SERVICE);
      cluster = ha;
      const setupMs = Math.round(performance.now() - setupStarted);
      const database = ha.url(SERVICE.database, { name: SERVICE.user, password: SERVICE.password });

      // ---- two replicas of the service, on the database through its balancer, behind HAProxy
      const ports = await Promise.all([fixedPort(), fixedPort()]);
      const args = (i: number) => ["--port", String(ports[i]), "--database", database, "--pool-size", "4"];
      // Started together: the schema migration runs once, under its advisory lock.
      const replicas: Cli[] = await Promise.all(ports.map((_, i) => startCli(args(i))));
      const lbDir = makeTempDir("failover-lb");
      dirs.push(lbDir);
      const lb: Haproxy = await startHaproxy(
        bin,
        lbDir,
        { frontend: await freePort(), servers: ports },
        started,
      );
      const serviceStates = async () => (await lb.servers()).map((s) => `${s.name} ${s.status}`).join(", ");
      const everyReplicaReady = () =>
        until(
          "HAProxy to see both replicas of the service UP, and each to answer /readyz 200",
          scaled(120_000),
          async () => {
            const up = (await lb.servers()).every((s) => s.status === "UP");
            if (!up) return undefined;
            const ready = await Promise.all(
              replicas.map((r) =>
                fetch(`${r.url}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
                  (res) => res.status === 200,
                  () => false,
                ),
              ),
            );
            return ready.every(Boolean) ? true : undefined;
          },
          async () =>
            `${await serviceStates()}\n${replicas.map((r, i) => `---- replica ${i + 1}\n${r.stderr().slice(-3000)}`).join("\n")}`,
        );
      await everyReplicaReady();

      // ---- the load: each worker its own client (the SDK's HTTP transport and its retries)
      const calls: Call[] = [];
      const failures: string[] = [];
      let phase = "warm-up";
      let waiters: Array<() => void> = [];
      const answered = () => {
        const ready = waiters;
        waiters = [];
        for (const w of ready) w();
      };
      /** Resolves once `n` more calls have ended. */
      const callsMore = (n: number) => {
        const target = calls.length + n;
        return new Promise<void>((resolve) => {
          const look = () => (calls.length >= target || stopWorkers ? resolve() : waiters.push(look));
          look();
        });
      };
      /** A worker's call, recorded; undefined (and a failure told) when it threw after its retries. */
      const call = async <T>(
        kind: Call["kind"],
        what: string,
        fn: (c: EdgeClient) => Promise<T>,
        client: EdgeClient,
      ) => {
        const record: Call = {
          kind,
          write: kind !== "get route",
          startedAt: performance.now(),
          endedAt: 0,
          retries: [],
        };
        const sentIn = phase;
        try {
          return await fn(client.with({ onRetry: (r) => record.retries.push(r) }));
        } catch (e) {
          record.error = e instanceof Error ? e.message : String(e);
          failures.push(`${kind} ${what} (begun in ${sentIn}): ${record.error}`);
          return undefined;
        } finally {
          record.endedAt = performance.now();
          calls.push(record);
          answered();
        }
      };

      /** Routes as acknowledged: their key, id, and the description their last acknowledged PATCH set. */
      const routes: Array<{ key: string; edgeId: string; id: string; description: string }> = [];
      /** Keyed HTTPS edges as acknowledged: key → id. */
      const keyedEdges = new Map<string, string>();
      const staleReads: string[] = [];
      const worker = async (w: number) => {
        const client = new EdgeClient(httpTransport({ baseUrl: lb.url }));
        const edgeKey = `failover-edge-${w}`;
        const edge = await call(
          "create edge",
          edgeKey,
          (c) => c.createHttpsEdge({ description: edgeKey }, { idempotencyKey: edgeKey }),
          client,
        );
        if (!edge) return;
        keyedEdges.set(edgeKey, edge.id);
        for (let n = 0; !stopWorkers; n++) {
          const key = `failover-route-${w}-${n}`;
          const route = await call(
            "create route",
            key,
            (c) =>
              c.createRoute(
                edge.id,
                { match_type: "path_prefix", match: `/w${w}/${n}`, description: "made" },
                { idempotencyKey: key },
              ),
            client,
          );
          if (route) {
            const made = { key, edgeId: edge.id, id: route.id, description: "made" };
            routes.push(made);
            const description = `patched ${n}`;
            const patched = await call(
              "patch route",
              key,
              (c) => c.updateRoute(edge.id, route.id, { description }),
              client,
            );
            if (patched) made.description = description;
            const got = await call("get route", key, (c) => c.getRoute(edge.id, route.id), client);
            if (got && got.description !== made.description) {
              staleReads.push(
                `${key}: read ${JSON.stringify(got.description)} after ${JSON.stringify(made.description)} was acknowledged`,
              );
            }
          }
          if (n % 5 === 4) {
            const edgeKeyN = `failover-edge-${w}-${n}`;
            const made = await call(
              "create edge",
              edgeKeyN,
              (c) => c.createHttpsEdge({ description: edgeKeyN }, { idempotencyKey: edgeKeyN }),
              client,
            );
            if (made) keyedEdges.set(edgeKeyN, made.id);
          }
          // A steady load, not a flood: the machine is shared with the database's processes.
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));

      // ---- the two cases, on one cluster
      const figures: CaseFigures[] = [];
      const promotedOn = async (node: PatroniNode) => {
        const db = new Client({
          host: "127.0.0.1",
          port: node.pgPort,
          user: "postgres",
          password: "ha-test-superuser",
          database: "postgres",
          connectionTimeoutMillis: 1000,
        });
        try {
          await db.connect();
          return (await db.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r")).rows[0]?.r === false;
        } catch {
          return false;
        } finally {
          await db.end().catch(() => undefined);
        }
      };
      const failover = async (
        name: string,
        kill: (primary: PatroniNode) => Promise<void> | void,
        afterKill: (old: PatroniNode) => void,
      ) => {
        const old = await until("a primary", scaled(30_000), () => ha.primary());
        const other = ha.nodes.find((n) => n !== old)!;
        phase = name;
        const killedAt = performance.now();
        await kill(old);
        // Promotion: polled finely, for the figure (the bound only says what went wrong).
        const deadline = performance.now() + scaled(120_000);
        while (!(await promotedOn(other))) {
          if (performance.now() > deadline)
            throw new Error(`${name}: ${other.name} not promoted within ${scaled(120_000)} ms\n${ha.logs()}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const promotedAt = performance.now();
        afterKill(old);
        await until(
          `${old.name} to rejoin as the synchronous standby of ${other.name}`,
          scaled(180_000),
          async () => {
            const ms = await ha.members();
            const ok =
              ms.some((m) => m.name === other.name && m.role === "leader" && m.state === "running") &&
              ms.some((m) => m.name === old.name && m.role === "sync_standby" && m.state !== "stopped");
            return ok ? true : undefined;
          },
          () => ha.logs(),
        );
        const rejoinedAt = performance.now();
        phase = `after ${name}`;
        await everyReplicaReady();
        await callsMore(CALLS_BETWEEN);
        const window = calls.filter((c) => c.startedAt >= killedAt - 1000 && c.startedAt <= rejoinedAt);
        // The outage of writes: the longest time without a write acknowledged, from the last one
        // before the kill (a write may still commit just after kill -9 of the postmaster: its
        // backend runs on until it notices, and the standby acknowledges it).
        const acks = calls
          .filter((c) => c.write && !c.error && c.endedAt <= rejoinedAt)
          .map((c) => c.endedAt)
          .sort((a, b) => a - b);
        const since = [
          acks.filter((t) => t <= killedAt).at(-1) ?? killedAt,
          ...acks.filter((t) => t > killedAt),
        ];
        let gap = { from: killedAt, to: rejoinedAt };
        for (let i = 1; i < since.length; i++) {
          if (since[i]! - since[i - 1]! > gap.to - gap.from || i === 1)
            gap = { from: since[i - 1]!, to: since[i]! };
        }
        const reasons: Record<string, number> = {};
        for (const c of window)
          for (const r of c.retries)
            reasons[`${c.kind}: ${r.reason}`] = (reasons[`${c.kind}: ${r.reason}`] ?? 0) + 1;
        figures.push({
          case: name,
          promotedAfterMs: Math.round(promotedAt - killedAt),
          writesBackAfterMs: Math.round(gap.to - killedAt),
          writeOutageMs: Math.round(gap.to - gap.from),
          callsInOutage: calls.filter((c) => c.startedAt < gap.to && c.endedAt > gap.from).length,
          longestCallMs: Math.round(Math.max(...window.map((c) => c.endedAt - c.startedAt))),
          callsRetried: window.filter((c) => c.retries.length > 0).length,
          retryReasons: reasons,
          rejoinedAfterMs: Math.round(rejoinedAt - killedAt),
        });
      };

      const replicaPids = replicas.map((r) => r.child.pid);
      try {
        await callsMore(CALLS_BETWEEN);
        await failover(
          "kill -9 of the primary's postmaster",
          (p) => ha.killPostmaster(p),
          () => undefined,
        );
        await failover(
          "kill -9 of the primary's node (Patroni and postmaster)",
          (p) => ha.killNode(p),
          (old) => ha.startNode(old),
        );
      } finally {
        stopWorkers = true;
        await Promise.all(workers);
      }

      // ---- what the database holds, read through the balancer
      const db = new Client({ connectionString: database });
      await db.connect();
      let routeRows: Array<{ id: string; create_key: string | null; description: string }>;
      let edgeRows: Array<{ id: string; create_key: string | null }>;
      try {
        routeRows = (
          await db.query(
            "SELECT id, create_key, convert_from(description, 'UTF8') AS description FROM routes",
          )
        ).rows;
        edgeRows = (await db.query("SELECT id, create_key FROM edges")).rows;
      } finally {
        await db.end();
      }
      const routeById = new Map(routeRows.map((r) => [r.id, r]));
      const lost = routes
        .filter(
          (r) =>
            routeById.get(r.id)?.create_key !== r.key || routeById.get(r.id)?.description !== r.description,
        )
        .map(
          (r) => `${r.key} (${r.id}, "${r.description}"): ${JSON.stringify(routeById.get(r.id) ?? "absent")}`,
        );
      const edgesLost = [...keyedEdges]
        .filter(([key, id]) => !edgeRows.some((e) => e.id === id && e.create_key === key))
        .map(([key]) => key);
      const perKey = new Map<string, number>();
      for (const row of [...routeRows, ...edgeRows]) {
        if (row.create_key !== null) perKey.set(row.create_key, (perKey.get(row.create_key) ?? 0) + 1);
      }
      const madeTwice = [...perKey].filter(([, n]) => n > 1).map(([key, n]) => `${key} × ${n}`);
      const unacknowledged = routeRows.length - routes.length;

      const logged = lb.requests();
      const summary = {
        timeScale: TIME_SCALE,
        setupMs,
        calls: calls.length,
        writes: calls.filter((c) => c.write).length,
        callsRetried: calls.filter((c) => c.retries.length > 0).length,
        failed: failures.length,
        routes: routes.length,
        keyedEdges: keyedEdges.size,
        // Made by a create whose answer never came (its call failed): none, when nothing failed.
        unacknowledgedRoutes: unacknowledged,
        balancerOwn503s: logged.filter((l) => l.status === 503 && l.server === "<NOSRV>").length,
        replicas503s: logged.filter((l) => l.status === 503 && l.server !== "<NOSRV>").length,
        // HAProxy's answers other than a replica's ordinary one: status, termination state, count.
        balancerUnusual: Object.fromEntries([
          ...logged
            .filter((l) => l.termination !== "----" || l.status >= 500)
            .reduce(
              (m, l) =>
                m.set(
                  `${l.method} ${l.status} ${l.termination} ${l.server}`,
                  (m.get(`${l.method} ${l.status} ${l.termination} ${l.server}`) ?? 0) + 1,
                ),
              new Map<string, number>(),
            ),
        ]),
        cases: figures,
      };
      console.log(`PostgreSQL failover under load: ${JSON.stringify(summary, null, 1)}`);

      // A failure's story: what the replicas logged of errors (a 500's stack, a 503's cause).
      const replicaErrors = replicas.flatMap((r, i) =>
        r
          .stderr()
          .split("\n")
          .filter((l) => /internal error|unavailable|\n\s+at /.test(l))
          .slice(0, 5)
          .map((l) => `replica ${i + 1}: ${l.slice(0, 2000)}`),
      );
      expect({
        failures,
        lost,
        edgesLost,
        madeTwice,
        staleReads,
        replicaErrors: failures.length > 0 ? replicaErrors : [],
      }).toEqual({
        replicaErrors: [],
        failures: [],
        lost: [],
        edgesLost: [],
        madeTwice: [],
        staleReads: [],
      });
      // Nothing but what was acknowledged, and one row per keyed create.
      expect(routeRows).toHaveLength(routes.length);
      expect(edgeRows).toHaveLength(keyedEdges.size);
      // Ready again by itself: the replicas that served before the kills, never restarted.
      expect(replicas.map((r) => r.child.pid)).toEqual(replicaPids);
      expect(replicas.map((r) => r.child.exitCode)).toEqual([null, null]);
      // The test's own premise: the load ran through both cases, calls in flight during each outage.
      expect(figures).toHaveLength(2);
      for (const f of figures) expect(f.callsInOutage).toBeGreaterThan(0);

      lb.child.kill("SIGTERM");
      for (const r of replicas) r.child.kill("SIGTERM");
      const exits = await Promise.all(replicas.map((r) => r.exit));
      expect(exits).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);
    },
    scaled(900_000),
  );
});
