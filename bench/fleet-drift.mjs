// A fleet's drift check (issue 28, item 4; issue 54): S stacks of bench/program (dynamic
// resources, one HTTPS edge and R routes each, each edge on a hostport of its own) against one
// `edge-service serve` on loopback, deployed once, then checked by `pulumi-edge drift --project DIR
// --parallel P --format json` with a read key. Prints one JSON line per phase: the deploys (wall
// per stack), then each drift run (wall, the CPU seconds of every process under it from /proc,
// the load average before and after, and the per-stack seconds of the drift report). A drift run
// that does not find every stack clean stops the benchmark: its figures would time something else.
//
//   node bench/fleet-drift.mjs [--stacks 20] [--routes 50] [--parallel 4] [--deploy-parallel 2]
//                              [--dir bench/tmp/fleet] [--reuse] [--checks 1] [--paths fast,refresh,engine]
//   node bench/fleet-drift.mjs --smoke     # 2 stacks of 2 routes, each path once, in a temporary
//                                          # directory of bench/tmp (CI: tests/examples/bench-smoke-fleet.test.ts)
//
// --paths: the drift paths to time (`pulumi-edge drift --path`), each --checks times, in turn.
//
// --reuse skips the deploys when DIR already holds the stacks (the state and data directories are
// kept between runs). The service keeps running only for the script's life.
//
// From a fresh clone (after `npm ci`) it builds `dist/` when it is missing or older than the
// sources (`npm run build`, said on stderr), and stops naming `npm run provision` when the pinned
// engine is not installed. The programs run transpile-only, so bench/program's type-only import
// of pulumi-edge/packaged needs no `npm run sdks`.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout } from "node:timers";
import { URL } from "node:url";
import { cpuOfTree } from "./lib/proc-cpu.mjs";

const require = createRequire(import.meta.url);
const engine = require("../scripts/engine.js");
const ROOT = engine.ROOT;
const CLI = path.join(ROOT, "dist/service/cli/edge-service.js");
const PULUMI_EDGE = path.join(ROOT, "dist/commands/cli.js");

const args = process.argv.slice(2);
const smoke = args.includes("--smoke");
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const STACKS = Number(opt("stacks", smoke ? 2 : 20));
const ROUTES = Number(opt("routes", smoke ? 2 : 50));
const PARALLEL = Number(opt("parallel", 4));
const DEPLOY_PARALLEL = Number(opt("deploy-parallel", 2));
const CHECKS = Number(opt("checks", 1));
const PATHS = opt("paths", "fast,refresh,engine").split(",");
// Under the checkout: the programs resolve @pulumi/pulumi and pulumi-edge from its node_modules.
const TMP = path.join(ROOT, "bench", "tmp");
fs.mkdirSync(TMP, { recursive: true });
const DIR = path.resolve(
  opt("dir", smoke ? fs.mkdtempSync(path.join(TMP, "fleet-smoke-")) : path.join(TMP, "fleet")),
);
const reuse = args.includes("--reuse");
for (const [name, n] of Object.entries({
  stacks: STACKS,
  routes: ROUTES,
  parallel: PARALLEL,
  checks: CHECKS,
}))
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} ${opt(name)}: give a whole number ≥ 1`);
for (const p of PATHS)
  if (!["fast", "refresh", "engine"].includes(p))
    throw new Error(`--paths: ${p} is not fast, refresh or engine`);

engine.assertEngine(); // names `npm run provision` when the pinned CLI is missing
ensureBuilt();

/**
 * `npm run build` when dist/ lacks what this runs (the drift command, the service, the package the
 * program loads) or is older than a source file: a fresh clone has no dist/, and a stale one
 * would time the code before an edit.
 */
function ensureBuilt() {
  const built = [PULUMI_EDGE, CLI, path.join(ROOT, "dist", "index.js")];
  const oldest = Math.min(...built.map((f) => (fs.existsSync(f) ? fs.statSync(f).mtimeMs : 0)));
  const newer = (dir) =>
    fs.readdirSync(dir, { withFileTypes: true, recursive: true }).some((e) => {
      if (!e.isFile() || !e.name.endsWith(".ts")) return false;
      return fs.statSync(path.join(e.parentPath ?? e.path, e.name)).mtimeMs > oldest;
    });
  const sources = ["index.ts", "commands", "provider", "sdk", "service"].map((f) => path.join(ROOT, f));
  const stale =
    oldest === 0 ||
    sources.some((f) => (fs.statSync(f).isDirectory() ? newer(f) : fs.statSync(f).mtimeMs > oldest));
  if (!stale) return;
  console.error(
    `fleet-drift: ${oldest === 0 ? "no dist/ here" : "dist/ is older than the sources"}: npm run build`,
  );
  execFileSync("npm", ["run", "build", "--silent"], {
    cwd: ROOT,
    stdio: ["ignore", process.stderr, process.stderr],
  });
}

const workDir = path.join(DIR, "program");
const stateDir = path.join(DIR, "state");
const dataDir = path.join(DIR, "data");
const ADMIN = "admin-bootstrap-key-for-the-fleet-bench";
const load = () => os.loadavg().map((x) => Math.round(x * 100) / 100);
const out = (o) => console.log(JSON.stringify(o));

if (!reuse) fs.rmSync(DIR, { recursive: true, force: true });
fs.mkdirSync(dataDir, { recursive: true });

// The service: one process, an admin key to deploy with, a read key for the check. The stacks'
// config names its URL: with --reuse it listens on the port the deploys used (DIR/port).
const portFile = path.join(DIR, "port");
const port = reuse && fs.existsSync(portFile) ? fs.readFileSync(portFile, "utf8").trim() : "0";
const server = spawn(process.execPath, [CLI, "serve", "--port", port, "--data", dataDir], {
  env: { ...process.env, EDGE_API_KEY: ADMIN },
  stdio: ["ignore", "pipe", "pipe"],
});
const url = await new Promise((resolve, reject) => {
  let buf = "";
  server.stdout.on("data", (d) => {
    buf += d;
    const m = /edge-service listening on (http:\/\/\S+)/.exec(buf);
    if (m) resolve(m[1].replace("//0.0.0.0:", "//127.0.0.1:"));
  });
  server.on("exit", (c) => reject(new Error(`edge-service exited ${c}`)));
  setTimeout(() => reject(new Error("edge-service did not say it listens within 60 s")), 60_000).unref();
});
process.on("exit", () => {
  server.kill("SIGTERM");
  if (smoke) fs.rmSync(DIR, { recursive: true, force: true });
});
fs.writeFileSync(portFile, new URL(url).port);
const keyFile = path.join(DIR, "read-key");
let readKey;
if (reuse && fs.existsSync(keyFile)) readKey = fs.readFileSync(keyFile, "utf8").trim();
else {
  readKey = execFileSync(
    process.execPath,
    [CLI, "keys", "create", `ci-drift-${Date.now()}`, "--scope", "read", "--data", dataDir],
    { encoding: "utf8", env: { ...process.env, EDGE_API_KEY: "" } },
  ).trim();
  fs.writeFileSync(keyFile, readKey);
}

if (!fs.existsSync(workDir)) fs.cpSync(path.join(ROOT, "bench", "program"), workDir, { recursive: true });
const names = Array.from({ length: STACKS }, (_, i) => `s${String(i + 1).padStart(2, "0")}`);

if (!reuse) {
  const t0 = performance.now();
  const queue = [...names];
  const perStack = {};
  // The Automation API runs `pulumi` CLI commands; concurrent ones on one workspace directory
  // are fine on the file backend (one state file per stack).
  const worker = async () => {
    for (let name = queue.shift(); name; name = queue.shift()) {
      const stack = await engine.directoryStack({
        workDir,
        stackName: name,
        stateDir,
        config: {
          routes: { value: String(ROUTES) },
          mode: { value: "edge" },
          // Hostports are natural keys on the service: each stack's edge its own.
          hostport: { value: `${name}.bench.example.com:443` },
          "edge:baseUrl": { value: url },
        },
        // Not fast mode (PULUMI_SKIP_CHECKPOINTS): the provider refuses a stack's first update in
        // it, since its anchor must be in the state before any object is made (docs/design.md).
        env: { PULUMI_NODEJS_TRANSPILE_ONLY: "true", EDGE_API_KEY: ADMIN },
      });
      const t = performance.now();
      const up = await stack.up({ color: "never" });
      if (up.summary.resourceChanges?.create !== ROUTES + 3) throw new Error(`${name}: not all created`);
      perStack[name] = Math.round((performance.now() - t) / 100) / 10;
      console.error(`deployed ${name} in ${perStack[name]} s, load ${load().join(" ")}`);
    }
  };
  await Promise.all(Array.from({ length: DEPLOY_PARALLEL }, worker));
  out({
    phase: "deploy",
    stacks: STACKS,
    routes: ROUTES,
    parallel: DEPLOY_PARALLEL,
    wall: Math.round((performance.now() - t0) / 100) / 10,
    perStack,
    load: load(),
  });
}

for (const checkPath of PATHS)
  for (let c = 1; c <= CHECKS; c++) {
    const loadBefore = load();
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      [
        PULUMI_EDGE,
        "drift",
        "--project",
        "program",
        "--path",
        checkPath,
        "--parallel",
        String(PARALLEL),
        "--format",
        "json",
      ],
      {
        cwd: DIR,
        env: { ...process.env, ...engine.engineEnv({ stateDir }), EDGE_API_KEY: readKey },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const cpuPromise = cpuOfTree(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((r) => child.on("exit", r));
    const wall = Math.round((performance.now() - t0) / 100) / 10;
    const cpu = await cpuPromise;
    let report;
    try {
      report = JSON.parse(stdout);
    } catch {
      throw new Error(`drift exited ${code}: ${stderr.slice(-3000)}`);
    }
    if (code !== 0 || report.summary.clean !== STACKS)
      throw new Error(
        `drift --path ${checkPath} exited ${code} with ${JSON.stringify(report.summary)}, not ${STACKS} clean stacks: ${stderr.slice(-3000)}`,
      );
    const seconds = report.stacks.map((s) => s.seconds).sort((a, b) => a - b);
    out({
      phase: "drift",
      path: checkPath,
      judged: Object.fromEntries(
        ["fast", "refresh", "engine"].map((p) => [p, report.stacks.filter((s) => s.path === p).length]),
      ),
      check: c,
      stacks: STACKS,
      routes: ROUTES,
      parallel: PARALLEL,
      exitCode: code,
      summary: report.summary,
      wall,
      cpu,
      perStackSeconds: {
        min: seconds[0],
        median: seconds[Math.floor(seconds.length / 2)],
        max: seconds.at(-1),
        sum: Math.round(seconds.reduce((a, b) => a + b, 0) * 10) / 10,
      },
      perStack: Object.fromEntries(report.stacks.map((s) => [s.stack, s.seconds])),
      loadBefore,
      loadAfter: load(),
    });
  }
server.kill("SIGTERM");
await new Promise((r) => server.on("exit", r));
process.exit(0);
