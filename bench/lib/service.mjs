// Section 3: the service over HTTP under load (autocannon), against a bare node:http server
// answering the same bytes as GET route (the floor); the cost of one call through the typed
// client with the in-process transport, the HTTP transport, and the service alone; and the CPU a
// GET costs the server with Prometheus metrics on and off.
import { Buffer } from "node:buffer";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout } from "node:timers";
import autocannon from "autocannon";
import { spawnServer } from "./child.mjs";
import { routeBody } from "./shapes.mjs";
import { log, median, perCallMicros, percentile, ratio, round } from "./stats.mjs";

const require = createRequire(import.meta.url);
const { EdgeClient } = require("../../dist/sdk/client/index.js");
const { httpTransport } = require("../../dist/sdk/transport/index.js");
const { embeddedTransport, closeEmbeddedStores } = require("../../dist/service/embedded.js");
const { SqliteStore } = require("../../dist/service/store/store-sqlite.js");
const { EdgeService } = require("../../dist/service/service.js");

const JSON_HEADERS = { "content-type": "application/json" };

function summarize(r) {
  return {
    requestsPerSecond: r.requests.average,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    latencyMaxMs: r.latency.max,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

/** Median and range of the per-run ratios of requests/s to the floor's run of the same round. */
function pairedRatios(list, floor) {
  const ratios = list.map((s, i) => ratio(s.requestsPerSecond, floor[i].requestsPerSecond));
  return {
    ratioToFloor: round(median(ratios), 4),
    ratioRange: [round(Math.min(...ratios), 4), round(Math.max(...ratios), 4)],
  };
}

export async function serviceSection({ tmp, runs, seconds, connections, pacedRate, pacedSeconds }) {
  const edgeServer = spawnServer();
  const floorServer = spawnServer();
  const honoServer = spawnServer();
  try {
    const edge = await edgeServer.call({ cmd: "edge", dataDir: path.join(tmp, "service-data"), seed: 1 });
    const routePath = `/edges/https/${edge.edgeId}/routes/${edge.routeIds[0]}`;
    const getBody = await (await globalThis.fetch(edge.url + routePath)).text();
    const floor = await floorServer.call({ cmd: "floor", body: getBody });
    const hono = await honoServer.call({ cmd: "hono", body: getBody });

    let created = 0;
    let toggle = 0;
    const targets = {
      floor: { url: floor.url + routePath },
      hono: { url: hono.url + routePath },
      get: { url: edge.url + routePath },
      post: {
        url: edge.url,
        requests: [
          {
            method: "POST",
            path: `/edges/https/${edge.edgeId}/routes`,
            headers: JSON_HEADERS,
            // Every POST needs a match of its own (a duplicate is a 409).
            setupRequest: (req) => ({ ...req, body: JSON.stringify(routeBody(created++, "post")) }),
          },
        ],
      },
      patch: {
        url: edge.url,
        requests: [
          {
            method: "PATCH",
            path: routePath,
            headers: JSON_HEADERS,
            // Alternates between two values, so that every PATCH changes the route.
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ circuit_breaker: { num_buckets: (toggle++ % 2) + 10 } }),
            }),
          },
        ],
      },
    };
    const fire = (name, duration) =>
      autocannon({ connections, pipelining: 1, duration, ...targets[name] }).then(summarize);

    for (const name of Object.keys(targets)) await fire(name, 1); // warm-up
    const samples = {};
    for (let run = 1; run <= runs; run++) {
      for (const name of Object.keys(targets)) {
        const s = await fire(name, seconds);
        if (s.non2xx || s.errors || s.timeouts) {
          throw new Error(`${name}: ${s.non2xx} non-2xx, ${s.errors} errors, ${s.timeouts} timeouts`);
        }
        (samples[name] ??= []).push(s);
        log(
          `http ${name} run ${run}: ${Math.round(s.requestsPerSecond)} req/s, p50 ${s.latencyP50Ms} ms, p99 ${s.latencyP99Ms} ms`,
        );
      }
    }
    const load = {};
    for (const [name, list] of Object.entries(samples)) {
      load[name] = {
        requestsPerSecond: round(median(list.map((s) => s.requestsPerSecond)), 0),
        latencyP50Ms: round(median(list.map((s) => s.latencyP50Ms)), 2),
        latencyP99Ms: round(median(list.map((s) => s.latencyP99Ms)), 2),
        // Paired with the floor run just before it (same minute of this shared machine), then the
        // median over the runs: a burst of other load falls on both sides of a pair.
        ...pairedRatios(list, samples.floor),
      };
    }

    // The same endpoints at a fixed rate well below saturation: the latency a client sees when the
    // service is not the bottleneck (at saturation, latency is mostly queueing: connections / rate).
    const paced = { rate: pacedRate };
    const pacedTargets = {
      floor: () => ({ method: "GET", path: routePath, base: floor.url }),
      get: () => ({ method: "GET", path: routePath }),
      post: () => ({
        method: "POST",
        path: `/edges/https/${edge.edgeId}/routes`,
        body: JSON.stringify(routeBody(created++, "post")),
      }),
      patch: () => ({
        method: "PATCH",
        path: routePath,
        body: JSON.stringify({ circuit_breaker: { num_buckets: (toggle++ % 2) + 10 } }),
      }),
    };
    for (const [name, next] of Object.entries(pacedTargets)) {
      const list = [];
      for (let run = 1; run <= runs; run++)
        list.push(await openLoop(edge.url, next, pacedRate, pacedSeconds));
      paced[name] = {
        latencyP50Ms: round(median(list.map((s) => s.p50)), 2),
        latencyP99Ms: round(median(list.map((s) => s.p99)), 2),
      };
      log(
        `http ${name} at ${pacedRate} req/s: p50 ${paced[name].latencyP50Ms} ms, p99 ${paced[name].latencyP99Ms} ms`,
      );
    }

    const perCall = await perCallCosts(tmp, edge);
    return {
      runs,
      seconds,
      connections,
      responseBytes: Buffer.byteLength(getBody),
      load,
      paced,
      samples,
      perCall,
    };
  } finally {
    await edgeServer.close();
    await floorServer.close();
    await honoServer.close();
  }
}

/**
 * Open-loop load: request i is due at start + i / rate whatever the answers do, and its latency is
 * counted from when it was due (so a stall delays every request behind it, as clients would see),
 * or from when it was sent if that was up to a millisecond early (timer resolution).
 * autocannon's rate option sends each second's budget in a burst, which measures saturation again.
 */
async function openLoop(baseUrl, next, rate, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(rate * seconds);
  const latencies = [];
  const pending = [];
  const start = performance.now() + 20;
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    // Late: counted from when it was due (a stall shows in every request behind it); early by up to
    // a timer tick: counted from sending. `max` here counted a late one from sending, and an early
    // one from a moment after it was sent (latencies below 0).
    const from = Math.min(due, performance.now());
    const { method, path: p, body, base = baseUrl } = next();
    pending.push(
      new Promise((resolve, reject) => {
        const req = http.request(
          `${base}${p}`,
          {
            method,
            agent,
            headers: body ? { ...JSON_HEADERS, "content-length": Buffer.byteLength(body) } : {},
          },
          (res) => {
            res.resume();
            res.on("end", () => {
              if (res.statusCode >= 300) reject(new Error(`${method} ${p}: HTTP ${res.statusCode}`));
              latencies.push(performance.now() - from);
              resolve();
            });
          },
        );
        req.on("error", reject);
        req.end(body);
      }),
    );
  }
  await Promise.all(pending);
  agent.destroy();
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/**
 * Server CPU per GET route with metrics on (the default of `edge-service serve`) and off: servers
 * in their own processes, one route each, loaded in turn by autocannon (the order rotating
 * between rounds), each server's own CPU time (user + system, every thread) read over IPC around
 * its run and divided by the answers it gave. CPU rather than requests/s: the load generator
 * shares the 2 cores, and the other tenants of this machine move throughput far more than the CPU
 * a request costs. Each ratio is paired per round, then the median over the rounds. A second
 * server with metrics off is the control: its ratio to the first (A/A) is what noise alone gives.
 */
export async function metricsSection({ tmp, runs, seconds, connections }) {
  const servers = { on: spawnServer(), off: spawnServer(), control: spawnServer() };
  const names = Object.keys(servers);
  try {
    const urls = {};
    for (const [name, server] of Object.entries(servers)) {
      const e = await server.call({
        cmd: "edge",
        dataDir: path.join(tmp, `metrics-${name}`),
        seed: 1,
        metrics: name === "on",
      });
      urls[name] = `${e.url}/edges/https/${e.edgeId}/routes/${e.routeIds[0]}`;
    }
    const measure = async (name, duration) => {
      const before = await servers[name].call({ cmd: "cpu" });
      const r = await autocannon({ url: urls[name], connections, pipelining: 1, duration });
      const after = await servers[name].call({ cmd: "cpu" });
      if (r.non2xx || r.errors || r.timeouts) {
        throw new Error(`metrics ${name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      }
      return (after.micros - before.micros) / r["2xx"];
    };
    for (const name of names) await measure(name, 1); // warm-up
    const samples = { on: [], off: [], control: [] };
    const ratios = [];
    const controlRatios = [];
    for (let run = 1; run <= runs; run++) {
      const order = names.map((_, i) => names[(i + run) % names.length]);
      const got = {};
      for (const name of order) got[name] = await measure(name, seconds);
      for (const name of names) samples[name].push(round(got[name], 2));
      ratios.push(ratio(got.on, got.off));
      controlRatios.push(ratio(got.control, got.off));
      log(
        `metrics run ${run}: GET CPU ${round(got.on, 1)} µs on, ${round(got.off, 1)} µs off, ${round(got.control, 1)} µs off (control)`,
      );
    }
    return {
      runs,
      seconds,
      connections,
      cpuMicrosOn: round(median(samples.on), 1),
      cpuMicrosOff: round(median(samples.off), 1),
      cpuMicrosControl: round(median(samples.control), 1),
      ratio: round(median(ratios), 3),
      ratioRange: [round(Math.min(...ratios), 3), round(Math.max(...ratios), 3)],
      controlRatio: round(median(controlRatios), 3),
      controlRatioRange: [round(Math.min(...controlRatios), 3), round(Math.max(...controlRatios), 3)],
      samples,
    };
  } finally {
    for (const server of Object.values(servers)) await server.close();
  }
}

/** µs per sequential call: client + in-process transport, client + HTTP transport, service alone. */
async function perCallCosts(tmp, edge) {
  const dataDir = path.join(tmp, "embedded-data");
  fs.mkdirSync(dataDir, { recursive: true });
  const embedded = new EdgeClient(embeddedTransport({ dataDir }));
  const e = await embedded.createHttpsEdge({ description: "bench" });
  const r = await embedded.createRoute(e.id, routeBody(0));
  const store = SqliteStore.open(dataDir);
  const service = new EdgeService(store);
  const ctx = { baseUrl: "http://edge-service.embedded" };
  const overHttp = new EdgeClient(httpTransport({ baseUrl: edge.url }));
  const httpRoute = edge.routeIds[0];
  const patch = (i) => ({ circuit_breaker: { num_buckets: (i % 2) + 10 } });
  try {
    const out = {
      embeddedGet: await perCallMicros(() => embedded.getRoute(e.id, r.id)),
      embeddedPatch: await perCallMicros((i) => embedded.updateRoute(e.id, r.id, patch(i))),
      serviceGet: await perCallMicros(() => service.getRoute(e.id, r.id, ctx)),
      servicePatch: await perCallMicros((i) => service.updateRoute(e.id, r.id, patch(i), ctx)),
      httpGet: await perCallMicros(() => overHttp.getRoute(edge.edgeId, httpRoute), { batches: 5 }),
      httpPatch: await perCallMicros((i) => overHttp.updateRoute(edge.edgeId, httpRoute, patch(i)), {
        batches: 5,
      }),
    };
    const result = {};
    for (const [k, v] of Object.entries(out)) result[k] = round(v.median, 1);
    log(`per call (µs): ${JSON.stringify(result)}`);
    return result;
  } finally {
    store.close();
    closeEmbeddedStores();
  }
}
