// Section "stores": SQLite vs PostgreSQL, 100 vs 100,000 routes, one vs two replicas.
//  1. Per-operation time in the service (no HTTP: GET route, PATCH route, list limit=10) and the
//     server's RSS after a full GC, at 100 and at 100,000 routes on each store (seeded in bulk
//     through EdgeService.createRoutes, the service's own checks and inserts).
//  2. Under load (autocannon, HTTP): GET and PATCH req/s and p99 for SQLite's single server, one
//     PostgreSQL replica and two, and the CPU seconds each process used per request served
//     (replicas, PostgreSQL's processes): on a 2-core machine shared by the load generator, the
//     database and the replicas, CPU per request is what projects to more cores.
import path from "node:path";
import autocannon from "autocannon";
import { spawnServer } from "./child.mjs";
import { cpuSeconds, startCluster } from "./postgres.mjs";
import { log, round } from "./stats.mjs";

const JSON_HEADERS = { "content-type": "application/json" };

async function perOp(server, ops, n) {
  const out = {};
  for (const op of ops) out[op] = await server.call({ cmd: "direct", op, n });
  return out;
}

/**
 * autocannon on each URL at once (one per replica); req/s summed, p99 the worst, CPU per request.
 * GETs ask for one route (the cached hot path); PATCHes change routes in turn among `paths` (many
 * pipelines updating their own routes; one hot row would measure its lock, not the store).
 */
async function load(urls, paths, op, { seconds, connections, pids }) {
  let i = 0;
  const opts = (url) =>
    op === "get"
      ? { url: url + paths[0] }
      : {
          url,
          requests: [
            {
              method: "PATCH",
              path: paths[0],
              headers: JSON_HEADERS,
              setupRequest: (req) => {
                const k = i++;
                return {
                  ...req,
                  path: paths[k % paths.length],
                  body: JSON.stringify({ description: `d${k}` }),
                };
              },
            },
          ],
        };
  const fire = (duration) =>
    Promise.all(
      urls.map((url) =>
        autocannon({ connections: Math.ceil(connections / urls.length), duration, ...opts(url) }),
      ),
    );
  await fire(1); // warm-up
  const cpu0 = Object.fromEntries(Object.entries(pids()).map(([k, list]) => [k, list.map(cpuSeconds)]));
  const pids0 = pids();
  const results = await fire(seconds);
  const pids1 = pids();
  const total = results.reduce((s, r) => s + r.requests.total, 0);
  const bad = results.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
  if (bad > 0) throw new Error(`${op}: ${bad} failed requests`);
  const cpu = {};
  for (const [k, list] of Object.entries(pids1)) {
    let used = 0;
    for (const pid of list) {
      const i = pids0[k].indexOf(pid);
      used += cpuSeconds(pid) - (i >= 0 ? cpu0[k][i] : 0);
    }
    cpu[k] = round((used * 1e6) / total, 1); // CPU µs per request
  }
  return {
    requestsPerSecond: round(
      results.reduce((s, r) => s + r.requests.average, 0),
      0,
    ),
    latencyP99Ms: Math.max(...results.map((r) => r.latency.p99)),
    cpuMicrosPerRequest: cpu,
  };
}

export async function storesSection({ tmp, sizes, n, seconds, connections }) {
  const cluster = await startCluster();
  const result = { sizes, perOp: {}, load: {} };
  try {
    // 1. Per operation and RSS, 100 vs 100,000 routes.
    for (const store of ["sqlite", "postgres"]) {
      for (const size of sizes) {
        const server = spawnServer();
        try {
          const databaseUrl = store === "postgres" ? cluster.createDatabase() : undefined;
          const edge = await server.call({
            cmd: "edge",
            dataDir: path.join(tmp, `stores-${store}-${size}`),
            databaseUrl,
            seed: size,
            bulk: true,
          });
          log(`${store} ${size} routes seeded in ${edge.seedSeconds.toFixed(1)} s`);
          const ops = await perOp(server, ["get", "patch", "list"], n);
          const memory = await server.call({ cmd: "memory" });
          (result.perOp[store] ??= {})[size] = {
            seedSeconds: round(edge.seedSeconds, 1),
            ...Object.fromEntries(
              Object.entries(ops).map(([k, v]) => [`${k}MedianMicros`, round(v.medianMicros, 1)]),
            ),
            rssMiB: round(memory.rssMiB, 1),
          };
          log(`${store} ${size}: ${JSON.stringify(result.perOp[store][size])}`);
        } finally {
          await server.close();
        }
      }
    }

    // 2. Under load: SQLite single server, one PostgreSQL replica, two.
    // The last setup gives each of two replicas the connections one replica had: the same load
    // per replica (GETs arriving together share one snapshot query, so CPU per GET depends on it).
    const setups = [
      ["sqlite", 1, connections],
      ["postgres", 1, connections],
      ["postgres", 2, connections],
      ["postgres", 2, 2 * connections],
    ];
    for (const [store, replicas, conns] of setups) {
      const servers = [spawnServer()];
      try {
        const databaseUrl = store === "postgres" ? cluster.createDatabase() : undefined;
        const edge = await servers[0].call({
          cmd: "edge",
          dataDir: path.join(tmp, `load-${store}-${replicas}`),
          databaseUrl,
          seed: 100,
          bulk: true,
        });
        const urls = [edge.url];
        for (let r = 1; r < replicas; r++) {
          const s = spawnServer();
          servers.push(s);
          urls.push(
            (await s.call({ cmd: "replica", databaseUrl, edgeId: edge.edgeId, routeIds: edge.routeIds })).url,
          );
        }
        const routePaths = edge.routeIds.map((id) => `/edges/https/${edge.edgeId}/routes/${id}`);
        const pids = () => ({
          replicas: servers.map((s) => s.pid),
          ...(store === "postgres" ? { postgres: cluster.pids() } : {}),
        });
        const key =
          store === "sqlite" ? "sqlite" : `postgres${replicas}${conns === connections ? "" : `x${conns}`}`;
        result.load[key] = {};
        for (const op of ["get", "patch"]) {
          result.load[key][op] = await load(urls, routePaths, op, { seconds, connections: conns, pids });
          log(`${key} ${op}: ${JSON.stringify(result.load[key][op])}`);
        }
      } finally {
        for (const s of servers) await s.close();
      }
    }
    return result;
  } finally {
    cluster.destroy();
  }
}
