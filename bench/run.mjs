// The benchmark suite (`npm run bench`, after `npm run build`): every section in one run,
// results in bench/results.json and the generated table of BENCHMARKS.md. See BENCHMARKS.md
// for what each section measures and why.
//
//   node bench/run.mjs                        everything (about 35 minutes on 2 cores, stacks ~25)
//   node bench/run.mjs --only engine,faces    some sections; written to bench/tmp/results.partial.json
//   node bench/run.mjs --only stacks --merge  some sections, merged into bench/results.json and
//                                             BENCHMARKS.md (each section says when it ran)
//   node bench/run.mjs --quick                fewer and shorter runs
//   node bench/run.mjs --smoke                every section once at the smallest sizes: that it runs
//                                             and prints its figures, nothing more
//                                             (tests/examples/bench-smoke.test.ts)
//   --markdown FILE                           also writes the generated block into FILE (a copy of
//                                             BENCHMARKS.md) for a partial run
// It needs the build, the engine and the packaged face's SDK (`npm run bench` makes all three);
// EDGE_BENCH_TMP moves its scratch directory (bench/lib/needs.mjs).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { benchTmp, needBuild, needSdks } from "./lib/needs.mjs";
import { judge, writeMarkdown } from "./lib/report.mjs";
import { log } from "./lib/stats.mjs";

const require = createRequire(import.meta.url);
const engine = require("../scripts/engine.js");
const ROOT = engine.ROOT;
const BENCH = path.join(ROOT, "bench");
const TMP = path.join(benchTmp(ROOT), "run");

const { values: opts } = parseArgs({
  options: {
    only: { type: "string" },
    quick: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
    merge: { type: "boolean", default: false },
    markdown: { type: "string" },
  },
});
const SECTIONS = ["engine", "faces", "service", "metrics", "scaling", "payload", "stores", "stacks"];
const only = opts.only ? opts.only.split(",") : SECTIONS;
for (const s of only)
  if (!SECTIONS.includes(s)) throw new Error(`unknown section ${s}; sections: ${SECTIONS}`);
const partial = (only.length < SECTIONS.length && !opts.merge) || opts.quick || opts.smoke;

const SIZES = {
  smoke: {
    engine: { sizes: [2], runs: { 2: 1 } },
    faces: { n: 2, runs: 1 },
    service: { runs: 1, seconds: 1, connections: 2, pacedRate: 50, pacedSeconds: 1 },
    metrics: { runs: 1, seconds: 1, connections: 2 },
    scaling: { sizes: [10, 20], rounds: 1, perRound: 5 },
    stores: { sizes: [10, 20], n: 20, seconds: 1, connections: 2 },
    stacks: { sizes: [2, 3], lean: true },
  },
  quick: {
    engine: { sizes: [10, 50], runs: { 10: 1, 50: 1 } },
    faces: { n: 20, runs: 1 },
    service: { runs: 1, seconds: 2, connections: 10, pacedRate: 500, pacedSeconds: 2 },
    metrics: { runs: 2, seconds: 2, connections: 10 },
    scaling: { sizes: [100, 1000], rounds: 2, perRound: 30 },
    stores: { sizes: [100, 1000], n: 300, seconds: 2, connections: 10 },
    stacks: { sizes: [50, 200] },
  },
  full: {
    engine: { sizes: [50, 200], runs: { 50: 3, 200: 5 } },
    faces: { n: 200, runs: 3 },
    service: { runs: 5, seconds: 4, connections: 10, pacedRate: 500, pacedSeconds: 3 },
    metrics: { runs: 9, seconds: 4, connections: 10 },
    scaling: { sizes: [100, 10_000], rounds: 5, perRound: 60 },
    stores: { sizes: [100, 100_000], n: 2000, seconds: 5, connections: 10 },
    stacks: { sizes: [1000, 5000] },
  },
};
const config = SIZES[opts.smoke ? "smoke" : opts.quick ? "quick" : "full"];

function machine() {
  let pulumi = "not installed";
  try {
    pulumi = execFileSync(path.join(engine.PULUMI_BIN, "pulumi"), ["version"], { encoding: "utf8" }).trim();
  } catch {
    // reported as not installed; the engine section then fails with the engine's own message
  }
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? "unknown",
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    pulumi,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAtStart: os.loadavg(),
  };
}

// What the sections need, checked before the first one starts rather than when its turn comes.
needBuild(ROOT);
if (only.some((s) => ["engine", "faces", "stacks"].includes(s))) engine.assertEngine();
if (only.some((s) => ["faces", "stacks"].includes(s))) needSdks(ROOT);

const started = new Date();
const results = { startedAt: started.toISOString(), config, machine: machine() };
log(
  `load average ${results.machine.loadAtStart.map((x) => x.toFixed(2)).join(" ")}; sections: ${only.join(", ")}`,
);
fs.rmSync(TMP, { recursive: true, force: true });
fs.mkdirSync(TMP, { recursive: true });

try {
  // Sections are loaded when asked for: `--only stores` runs without the others' dependencies.
  // (faces lives in engine.mjs beside the engine section it shares its stacks with.)
  const section = async (name, file = name) => (await import(`./lib/${file}.mjs`))[`${name}Section`];
  // Each section in its turn, with the load average (1 min) at its start and end: a shared
  // machine's other work shows there, and BENCHMARKS.md says it beside each figure.
  const run = async (name, file, args) => {
    if (!only.includes(name)) return;
    const loadBefore = os.loadavg()[0];
    results[name] = await (await section(name, file))({ tmp: TMP, ...args });
    results[name].loadAverage = [loadBefore, os.loadavg()[0]].map((x) => Number(x.toFixed(2)));
    log(`${name}: load average ${results[name].loadAverage.join(" → ")}`);
  };
  await run("payload", "payload", {});
  await run("scaling", "scaling", config.scaling);
  await run("service", "service", config.service);
  await run("metrics", "service", config.metrics);
  await run("stores", "stores", config.stores);
  await run("engine", "engine", config.engine);
  await run("faces", "engine", config.faces);
  await run("stacks", "stacks", config.stacks);
} finally {
  fs.rmSync(TMP, { recursive: true, force: true });
}

const finished = new Date();
results.finishedAt = finished.toISOString();
results.durationSeconds = (finished.getTime() - started.getTime()) / 1000;
results.machine.loadAtEnd = os.loadavg();
for (const s of only) if (results[s]) results[s].ranAt = results.finishedAt;

const out = partial ? path.join(benchTmp(ROOT), "results.partial.json") : path.join(BENCH, "results.json");
// --merge: the sections run now replace theirs in the last full results; the others are kept.
const written =
  opts.merge && fs.existsSync(out)
    ? { ...JSON.parse(fs.readFileSync(out, "utf8")), ...Object.fromEntries(only.map((s) => [s, results[s]])) }
    : results;
written.targets = judge(written);
fs.writeFileSync(out, `${JSON.stringify(written, null, 2)}\n`);
if (!partial) writeMarkdown(path.join(ROOT, "BENCHMARKS.md"), written);
if (opts.markdown) writeMarkdown(path.resolve(opts.markdown), written);
for (const t of written.targets) log(`${t.met ? "met   " : "MISSED"} ${t.id}: ${t.target}: ${t.measured}`);
log(`done in ${(results.durationSeconds / 60).toFixed(1)} min; results in ${path.relative(ROOT, out)}`);
// Stray handles (keep-alive sockets of fetch, autocannon timers) must not keep the run alive.
process.exit(0);
