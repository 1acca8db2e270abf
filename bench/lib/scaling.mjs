// Section 4: per-operation time and server memory with few vs many stored routes. Two server
// processes are seeded directly through the service (no HTTP), then measured alternately in
// rounds so that machine noise falls on both alike: sequential HTTP requests (one at a time,
// keep-alive) and in-process service calls (no HTTP: the service and the store alone).
import { performance } from "node:perf_hooks";
import path from "node:path";
import { spawnServer } from "./child.mjs";
import { log, median, percentile, ratio, round } from "./stats.mjs";

const OPS = ["get", "patch", "list"];

function request(server, op, i) {
  const id = server.routeIds[(i * 7919) % server.routeIds.length];
  const base = `${server.url}/edges/https/${server.edgeId}/routes`;
  if (op === "get") return globalThis.fetch(`${base}/${id}`);
  if (op === "list") return globalThis.fetch(`${base}?limit=10`);
  return globalThis.fetch(`${base}/${id}`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ circuit_breaker: { num_buckets: (i % 2) + 10 } }),
  });
}

async function timeRequests(server, op, count, offset) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const res = await request(server, op, offset + i);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${op}: HTTP ${res.status}`);
    times.push((performance.now() - t0) * 1000);
  }
  return times;
}

export async function scalingSection({ tmp, sizes, rounds, perRound }) {
  const servers = {};
  try {
    for (const n of sizes) {
      const child = spawnServer();
      // Without the GET cache: with it, random GETs hit among 100 routes and miss among 10,000,
      // which would measure the cache's hit rate rather than how the data path scales.
      const info = await child.call({
        cmd: "edge",
        dataDir: path.join(tmp, `scaling-${n}`),
        seed: n,
        responseCacheBytes: 0,
      });
      servers[n] = { child, ...info };
      log(
        `scaling: seeded ${n} routes in ${info.seedSeconds.toFixed(1)}s, rss ${info.memory.rssMiB.toFixed(1)} MiB`,
      );
    }
    const http = {};
    const direct = {};
    for (const op of OPS) {
      for (const n of sizes) await timeRequests(servers[n], op, 50, 0); // warm-up
      for (let r = 0; r < rounds; r++) {
        for (const n of sizes) {
          ((http[op] ??= {})[n] ??= []).push(...(await timeRequests(servers[n], op, perRound, r * perRound)));
        }
      }
      // In process too, the sizes take turns round by round (a burst of other load falls on both).
      const samples = Object.fromEntries(sizes.map((n) => [n, []]));
      for (let r = 0; r < rounds; r++) {
        for (const n of sizes) samples[n].push(await servers[n].child.call({ cmd: "direct", op, n: 1000 }));
      }
      for (const n of sizes) (direct[op] ??= {})[n] = median(samples[n].map((s) => s.medianMicros));
    }
    const after = {};
    for (const n of sizes) after[n] = await servers[n].child.call({ cmd: "memory" });

    const [small, large] = sizes;
    const perOp = {};
    for (const op of OPS) {
      perOp[op] = {};
      for (const n of sizes) {
        perOp[op][n] = {
          httpMedianMicros: round(median(http[op][n]), 0),
          httpP99Micros: round(percentile(http[op][n], 99), 0),
          serviceMedianMicros: round(direct[op][n], 1),
        };
      }
      perOp[op].httpRatio = ratio(median(http[op][large]), median(http[op][small]));
      perOp[op].serviceRatio = ratio(direct[op][large], direct[op][small]);
      log(
        `scaling ${op}: http ${perOp[op][small].httpMedianMicros} → ${perOp[op][large].httpMedianMicros} µs, service ${perOp[op][small].serviceMedianMicros} → ${perOp[op][large].serviceMedianMicros} µs`,
      );
    }
    const memory = {};
    for (const n of sizes) {
      memory[n] = {
        seedSeconds: round(servers[n].seedSeconds, 2),
        afterSeed: mapRound(servers[n].memory),
        afterOps: mapRound(after[n]),
      };
    }
    memory.rssRatio = ratio(after[large].rssMiB, after[small].rssMiB);
    memory.heapRatio = ratio(after[large].heapUsedMiB, after[small].heapUsedMiB);
    return { sizes, rounds, perRound, perOp, memory };
  } finally {
    for (const s of Object.values(servers)) await s.child.close();
  }
}

const mapRound = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v, 1)]));
