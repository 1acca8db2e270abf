// The provider's update path without the engine: N routes on the embedded service (in memory),
// then one `circuitBreaker.numBuckets` change to each through the dynamic provider's
// check → diff → update, as `pulumi up` calls them. Prints the CPU seconds of that update pass
// (provider and in-process service together), median of a few passes. `--root DIR` measures
// another checkout's build (e.g. main's, for a before/after figure).
//   node bench/update-path.mjs [--root DIR] [--routes 200] [--passes 5]
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { needBuild } from "./lib/needs.mjs";

const { values: opts } = parseArgs({
  options: {
    root: { type: "string", default: path.join(import.meta.dirname, "..") },
    routes: { type: "string", default: "200" },
    passes: { type: "string", default: "5" },
  },
});
needBuild(path.resolve(opts.root));
const dataDir = mkdtempSync(path.join(tmpdir(), "edge-update-path-"));
process.env.EDGE_DATA_DIR = dataDir;
process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }));
const require = createRequire(path.join(path.resolve(opts.root), "package.json"));
// The providers as the engine's dynamic provider host gets them (one provider process's).
const runtime = require("./dist/provider/runtime.js");

const n = Number(opts.routes);
const edges = runtime.providers.httpsEdge;
const routes = runtime.providers.httpsEdgeRoute;
const urn = (name) => `urn:pulumi:bench::update-path::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::${name}`;
// A create carries the stack's anchor and the place it was recorded at, made by the stack's
// StackAnchor resource (provider/identity; a create judges the anchor where it runs); builds from
// before create identities have neither, builds from before the place have no place.
const anchor = runtime.handlers?.stackAnchor
  ? (await runtime.handlers.stackAnchor.create({})).outs
  : undefined;
const face = anchor
  ? { __anchor: anchor.anchor, ...(anchor.place === undefined ? {} : { __anchorPlace: anchor.place }) }
  : {};

const edgeIn = (await edges.check({}, { description: "bench", __urn: urn("web"), ...face })).inputs;
const edge = await edges.create(edgeIn);
const routeArgs = (i, buckets) => ({
  edgeId: edge.id,
  matchType: "path_prefix",
  match: `/r${i}`,
  backend: { backendId: "bkd_1" },
  circuitBreaker: { numBuckets: buckets, trippedDuration: 5 },
  requestHeaders: { add: { "X-Bench": "1" }, remove: ["Cookie"] },
  ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] },
  __urn: urn(`r${i}`),
  ...face,
});

const state = [];
for (let i = 0; i < n; i++) {
  const inputs = (await routes.check({}, routeArgs(i, 10))).inputs;
  const created = await routes.create(inputs);
  state.push({ id: created.id, inputs, outs: created.outs });
}

const seconds = [];
for (let pass = 0; pass < Number(opts.passes); pass++) {
  const buckets = 11 + pass;
  const start = process.cpuUsage();
  for (const r of state) {
    const news = (await routes.check(r.inputs, routeArgs(state.indexOf(r), buckets))).inputs;
    const diff = await routes.diff(r.id, r.outs, news);
    if (!diff.changes) throw new Error(`no change seen for ${r.id}`);
    const { outs } = await routes.update(r.id, r.outs, news);
    Object.assign(r, { inputs: news, outs });
  }
  const used = process.cpuUsage(start);
  seconds.push((used.user + used.system) / 1e6);
}
seconds.sort((a, b) => a - b);
const median = seconds[Math.floor(seconds.length / 2)];
console.log(
  JSON.stringify({ root: opts.root, routes: n, cpuSecondsPerPass: seconds, median: +median.toFixed(3) }),
);
