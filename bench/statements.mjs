// Statements stated once (issue 27, item 4): the CPU a request costs the in-process service
// (`app.fetch`, SQLite file store, GET answer cache off so every GET reaches the store) in this
// checkout's build and in another's (`--before DIR`, e.g. a clone of main at the commit before),
// measured with process.cpuUsage() around each request, the two builds in interleaved rounds.
// Prints, per path, the median µs per request of each build and the median of the per-round
// ratios after/before.
//   node bench/statements.mjs --before /tmp/base [--rounds 15] [--requests 300]
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { needBuild } from "./lib/needs.mjs";

const { values: opts } = parseArgs({
  options: {
    before: { type: "string" },
    after: { type: "string", default: path.join(import.meta.dirname, "..") },
    rounds: { type: "string", default: "15" },
    requests: { type: "string", default: "300" },
  },
});
if (!opts.before) throw new Error("--before DIR: the build to compare against");
const rounds = Number(opts.rounds);
const requests = Number(opts.requests);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function build(root, label) {
  needBuild(path.resolve(root));
  const require = createRequire(path.join(path.resolve(root), "package.json"));
  const { createEdgeApp } = require("./dist/service/http/app.js");
  const { SqliteStore } = require("./dist/service/store/store-sqlite.js");
  const dir = mkdtempSync(path.join(tmpdir(), `edge-stmts-${label}-`));
  const store = SqliteStore.open(dir);
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const app = createEdgeApp({ store, responseCacheBytes: 0 });
  const call = async (method, url, body) => {
    const res = await app.fetch(
      new globalThis.Request(`http://bench${url}`, {
        method,
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
      }),
    );
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const edge = await call("POST", "/edges/https", { description: "bench" });
  const routes = `/edges/https/${edge.id}/routes`;
  let route;
  for (let i = 0; i < 50; i++) {
    route = await call("POST", routes, {
      match_type: "path_prefix",
      match: `/seed${i}`,
      backend: { backend_id: "bkd_1" },
      circuit_breaker: { num_buckets: 10 },
    });
  }
  let made = 0;
  const paths = {
    "GET route": () => call("GET", `${routes}/${route.id}`),
    "GET routes (page of 20)": () => call("GET", `${routes}?limit=20`),
    "POST route": () =>
      call("POST", routes, {
        match_type: "path_prefix",
        match: `/b${made++}`,
        backend: { backend_id: "bkd_1" },
      }),
    "PATCH route": () => call("PATCH", `${routes}/${route.id}`, { description: `d${made++}` }),
  };
  return { label, paths };
}

/** µs of CPU per request: the median of `requests` single-request measurements. */
async function measure(fn) {
  const samples = [];
  for (let i = 0; i < requests; i++) {
    const start = process.cpuUsage();
    await fn();
    const used = process.cpuUsage(start);
    samples.push(used.user + used.system);
  }
  return median(samples);
}

const builds = [await build(opts.before, "before"), await build(opts.after, "after")];
const results = {};
for (const name of Object.keys(builds[0].paths)) {
  // Warm up both (JIT, statement caches).
  for (const b of builds) for (let i = 0; i < 200; i++) await b.paths[name]();
  const per = { before: [], after: [] };
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...builds].reverse() : builds;
    const got = {};
    for (const b of order) got[b.label] = await measure(b.paths[name]);
    per.before.push(got.before);
    per.after.push(got.after);
    ratios.push(got.after / got.before);
  }
  results[name] = {
    beforeMicros: median(per.before),
    afterMicros: median(per.after),
    ratio: Math.round(median(ratios) * 1000) / 1000,
    ratioRange: [Math.min(...ratios), Math.max(...ratios)].map((x) => Math.round(x * 1000) / 1000),
  };
  console.log(name, JSON.stringify(results[name]));
}
