// A server in its own process (so that the load generator and the server do not share one
// event loop), driven over IPC by the parent:
//   { cmd: "edge", dataDir, seed, responseCacheBytes?, databaseUrl?, bulk?, metrics?, noAudit? }
//                                           the bundled service (startServer) with `seed` routes
//                                           (on PostgreSQL with databaseUrl; bulk: createRoutes,
//                                           1,000 per transaction; metrics: false turns /metrics off;
//                                           noAudit: the audit event's insert skipped, for
//                                           bench/audit-cost.mjs --via http)
//   { cmd: "replica", databaseUrl, edgeId, routeIds }
//                                           another replica on the same PostgreSQL database
//   { cmd: "floor", body }                  a bare node:http server answering a fixed JSON body
//   { cmd: "hono", body }                   the same through Hono on @hono/node-server (no service)
//   { cmd: "memory" }                       memory after a full GC (run with --expose-gc)
//   { cmd: "cpu" }                          CPU µs this process has used (user + system)
//   { cmd: "direct", op, n }                median µs of in-process EdgeService calls (no HTTP)
//   { cmd: "close" }
import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import http from "node:http";
import { createRequire } from "node:module";
import { URL } from "node:url";
import { routeBody } from "./shapes.mjs";

const require = createRequire(import.meta.url);
// The build to serve: this checkout's, or another's dist/ (EDGE_BENCH_DIST, to compare two builds).
const DIST = process.env.EDGE_BENCH_DIST ?? new URL("../../dist/", import.meta.url).pathname;
const dist = (file) => require(`${DIST}/${file}`);
const { startServer } = dist("service/http/server.js");
const { EdgeService } = dist("service/service.js");
const { serve } = require("@hono/node-server");
const Database = require("libsql");
const { Hono } = require("hono");

let state;

function memory() {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { rssMiB: m.rss / 2 ** 20, heapUsedMiB: m.heapUsed / 2 ** 20, externalMiB: m.external / 2 ** 20 };
}

async function startEdge({ dataDir, seed, responseCacheBytes, databaseUrl, bulk, metrics, noAudit }) {
  if (noAudit) {
    // Wherever the build defines it: the shared transaction class, or each store's (older builds).
    const skip = async () => undefined;
    dist("service/store/sql-tx.js").SqlTx.prototype.insertAuditEvent = skip;
    const postgres = dist("service/store/store-postgres.js");
    if (postgres.PgTx) postgres.PgTx.prototype.insertAuditEvent = skip;
  }
  const server = await startServer({ dataDir, port: 0, responseCacheBytes, databaseUrl, metrics });
  const service = new EdgeService(server.store);
  const ctx = { baseUrl: server.url };
  const edge = await service.createEdge(
    "https",
    { description: "bench", hostports: ["bench.example.com:443"] },
    ctx,
  );
  const started = performance.now();
  const routeIds = [];
  if (bulk) {
    for (let i = 0; i < seed; i += 1000) {
      const bodies = [];
      for (let k = i; k < Math.min(seed, i + 1000); k++) bodies.push(routeBody(k));
      routeIds.push(...(await service.createRoutes(edge.id, bodies)));
    }
  } else {
    for (let i = 0; i < seed; i++) routeIds.push((await service.createRoute(edge.id, routeBody(i), ctx)).id);
  }
  const seedSeconds = (performance.now() - started) / 1000;
  if (server.store.kind !== "sqlite") {
    state = { server, service, ctx, edgeId: edge.id, routeIds, toggle: 0 };
    return { url: server.url, edgeId: edge.id, routeIds, seedSeconds, memory: memory() };
  }
  // Seeding is setup: fold its WAL into the database before measuring, so that what follows is
  // the steady state rather than the checkpoint worker catching up with 10,000 creates.
  const db = new Database(server.store.location);
  db.pragma("busy_timeout = 10000");
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  state = { server, service, ctx, edgeId: edge.id, routeIds, toggle: 0 };
  return { url: server.url, edgeId: edge.id, routeIds, seedSeconds, memory: memory() };
}

async function startReplica({ databaseUrl, edgeId, routeIds }) {
  const server = await startServer({ dataDir: ":memory:", port: 0, databaseUrl });
  state = {
    server,
    service: new EdgeService(server.store),
    ctx: { baseUrl: server.url },
    edgeId,
    routeIds,
    toggle: 0,
  };
  return { url: server.url, memory: memory() };
}

async function startFloor({ body }) {
  const payload = Buffer.from(body);
  const server = http.createServer((req, res) => {
    // Drain any request body, then answer the same bytes every time.
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": payload.length });
      res.end(payload);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state = {
    server: { close: () => new Promise((resolve) => server.close(resolve)) },
    closeAll: () => server.closeAllConnections(),
  };
  return { url: `http://127.0.0.1:${server.address().port}` };
}

/** The framework alone: Hono on @hono/node-server answering the same bytes, no middleware, no service. */
async function startHono({ body }) {
  const app = new Hono();
  app.get("*", (c) => c.body(body, 200, { "content-type": "application/json" }));
  const server = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  state = {
    server: { close: () => new Promise((resolve) => server.close(resolve)) },
    closeAll: () => server.closeAllConnections(),
  };
  return { url: `http://127.0.0.1:${server.address().port}` };
}

/** Median µs of one in-process service operation over `n` calls on random stored routes. */
async function direct({ op, n }) {
  const { service, ctx, edgeId, routeIds } = state;
  const pick = (i) => routeIds[(i * 7919) % routeIds.length];
  const run = {
    get: (i) => service.getRoute(edgeId, pick(i), ctx),
    patch: (i) =>
      service.updateRoute(
        edgeId,
        pick(i),
        { circuit_breaker: { num_buckets: (state.toggle++ % 2) + 10 } },
        ctx,
      ),
    list: () => service.listRoutes(edgeId, { limit: 10 }, ctx),
  }[op];
  for (let i = 0; i < 100; i++) await run(i);
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await run(i);
    times.push((performance.now() - t0) * 1000);
  }
  times.sort((a, b) => a - b);
  return {
    medianMicros: times[Math.floor(times.length / 2)],
    p99Micros: times[Math.floor(times.length * 0.99)],
  };
}

process.on("message", async (msg) => {
  try {
    let reply;
    if (msg.cmd === "edge") reply = await startEdge(msg);
    else if (msg.cmd === "replica") reply = await startReplica(msg);
    else if (msg.cmd === "floor") reply = await startFloor(msg);
    else if (msg.cmd === "hono") reply = await startHono(msg);
    else if (msg.cmd === "memory") reply = memory();
    else if (msg.cmd === "cpu") {
      const { user, system } = process.cpuUsage();
      reply = { micros: user + system, user, system };
    } else if (msg.cmd === "direct") reply = await direct(msg);
    else if (msg.cmd === "close") {
      state?.closeAll?.();
      await state?.server.close();
      reply = {};
    }
    process.send({ ok: true, reply });
    if (msg.cmd === "close") process.disconnect();
  } catch (e) {
    process.send({ ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  }
});
