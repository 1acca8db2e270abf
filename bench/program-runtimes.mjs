// One program, three runtimes (issue 28, item 4): bench/program in packaged mode (one HTTPS edge
// and N routes on the generated SDK, served by pulumi-resource-edge with its embedded service)
// run as TypeScript by the Node host's ts-node, as the same program compiled by tsc with `main:`
// pointing at the output (Pulumi.yaml `runtime.options.typescript: false`), and as Python
// (bench/program-py, the generated Python SDK). All share one stack (same project name, state and
// data directory): deployed once, then `pulumi preview` and `pulumi preview --refresh` are timed
// in each form, `--expect-no-changes` (so the programs must declare the same thing).
//
//   node bench/program-runtimes.mjs setup <routes>
//   node bench/program-runtimes.mjs rounds <routes> <k> [variants] [ops]
//        variants: comma list of ts, ts-transpile, js, js-nomap, js-unmapped, py
//        (default ts,js,py)
//        ops: comma list of preview, refresh (default refresh,preview)
//
// Variants: ts (typescript: true, ts-node type-checks), ts-transpile (the same with
// PULUMI_NODEJS_TRANSPILE_ONLY=true), js (tsc output with "sourceMap": true, as Pulumi's
// templates' tsconfig has it), js-nomap (tsc output without source maps), py. Rounds alternate
// the order of the variants so that a loaded machine's load falls on all alike. Each run prints a
// JSON line (wall seconds, CPU seconds by process from /proc, load average); `rounds` ends with
// the medians. See BENCHMARKS.md, "TypeScript, JavaScript and Python programs; a fleet of 20".
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { benchTmp, needSdks } from "./lib/needs.mjs";
import { cpuOfTree } from "./lib/proc-cpu.mjs";

const require = createRequire(import.meta.url);
const engine = require("../scripts/engine.js");
const ROOT = engine.ROOT;
const VERSION = require("../package.json").version;

const [command, routesArg, ...rest] = process.argv.slice(2);
const routes = Number(routesArg ?? 1000);
const TMP = benchTmp(ROOT);
const base = path.join(TMP, `runtimes-n${routes}`);
const stateDir = path.join(base, "state");
const dataDir = path.join(base, "data");
const venv = path.join(TMP, "runtimes-venv");
const stackName = `n${routes}`;
const load = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

const DIRS = {
  ts: "ts",
  "ts-transpile": "ts",
  js: "js",
  "js-nomap": "js-nomap",
  "js-unmapped": "js-nomap",
  py: "py",
};
// js-unmapped is a diagnostic, not a recipe: a preload (NODE_OPTIONS) makes the
// `Error.prepareStackTrace` that source-map-support installs a no-op, to see what the SDK's stack
// trace per resource and per promise costs when its frames are not source-mapped.
const UNMAPPED = path.join(base, "unmapped.cjs");
const EXTRA_ENV = {
  "ts-transpile": { PULUMI_NODEJS_TRANSPILE_ONLY: "true" },
  "js-unmapped": { NODE_OPTIONS: `--require ${UNMAPPED}` },
};

const plugins = `plugins:\n  providers:\n    - name: edge\n      version: ${VERSION}\n      path: ${path.join(ROOT, "bin")}\n`;

function nodeDir(name, { compile, sourceMap } = {}) {
  const dir = path.join(base, name);
  fs.cpSync(path.join(ROOT, "bench", "program"), dir, { recursive: true });
  fs.appendFileSync(path.join(dir, "Pulumi.yaml"), plugins);
  if (!compile) return dir;
  const tsconfig = JSON.parse(fs.readFileSync(path.join(dir, "tsconfig.json"), "utf8"));
  tsconfig.compilerOptions.outDir = "bin";
  if (sourceMap) tsconfig.compilerOptions.sourceMap = true;
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", dir], {
    stdio: "inherit",
  });
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  pkg.main = "bin/index.js";
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(pkg, null, 2));
  const yaml = fs
    .readFileSync(path.join(dir, "Pulumi.yaml"), "utf8")
    .replace("typescript: true", "typescript: false");
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), yaml);
  return dir;
}

function pythonDir() {
  const dir = path.join(base, "py");
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(ROOT, "bench", "program-py", "__main__.py"), path.join(dir, "__main__.py"));
  fs.writeFileSync(
    path.join(dir, "Pulumi.yaml"),
    `name: bench-program\nruntime:\n  name: python\n${plugins}`,
  );
  if (!fs.existsSync(path.join(venv, "ready"))) {
    // The tests' venv (pulumi at the engine's version; scripts/venv.js), copied so that installing
    // the generated SDK into it does not touch the shared one.
    const { ensureVenv } = require("../scripts/venv.js");
    const python = ensureVenv(
      `pulumi==${require("../package.json").dependencies["@pulumi/pulumi"]}\nparver\nsemver\n`,
    );
    fs.rmSync(venv, { recursive: true, force: true });
    fs.cpSync(path.dirname(path.dirname(python)), venv, { recursive: true, verbatimSymlinks: true });
  }
  // This tree's SDK, every setup: a copy kept from an earlier run may hold an older one.
  execFileSync(
    path.join(venv, "bin/python"),
    [
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "--no-deps",
      "--force-reinstall",
      path.join(ROOT, "dist", "sdks", "python"),
    ],
    { stdio: "inherit" },
  );
  return dir;
}

function env(variant, extra = {}) {
  return {
    ...process.env,
    ...engine.engineEnv({ stateDir, extra }),
    EDGE_DATA_DIR: dataDir,
    PULUMI_PYTHON_CMD: path.join(venv, "bin/python"),
    ...(EXTRA_ENV[variant] ?? {}),
  };
}

/** Runs the CLI in `dir` with `args`, sampling its process tree's CPU. */
function run(variant, args, extra = {}) {
  return new Promise((resolve, reject) => {
    const loadBefore = load();
    const t0 = performance.now();
    const child = spawn(path.join(engine.PULUMI_BIN, "pulumi"), args, {
      cwd: path.join(base, DIRS[variant]),
      env: env(variant, extra),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const cpu = cpuOfTree(child, { rootClass: "engine" });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", async (code) => {
      const wall = Math.round((performance.now() - t0) / 10) / 100;
      const c = await cpu;
      delete c.root;
      if (code !== 0)
        return reject(new Error(`${variant}: pulumi ${args.join(" ")} exited ${code}:\n${out.slice(-3000)}`));
      resolve({ wall, cpu: c, loadBefore, loadAfter: load() });
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : Math.round(((s[m - 1] + s[m]) / 2) * 100) / 100;
};

function writeUnmapped() {
  fs.writeFileSync(
    UNMAPPED,
    'Object.defineProperty(Error, "prepareStackTrace", { configurable: true, get() {}, set() {} });\n',
  );
}

if (command === "setup" || command === "rounds") {
  needSdks(ROOT, { python: true });
  engine.assertEngine();
}
if (command === "rounds" && !fs.existsSync(stateDir))
  throw new Error(
    `no stack of ${routes} routes in ${base}: run 'node bench/program-runtimes.mjs setup ${routes}' first`,
  );
if (command === "setup") {
  fs.rmSync(base, { recursive: true, force: true });
  fs.mkdirSync(base, { recursive: true });
  writeUnmapped();
  nodeDir("ts");
  nodeDir("js", { compile: true, sourceMap: true });
  nodeDir("js-nomap", { compile: true, sourceMap: false });
  pythonDir();
  await run("ts", ["stack", "init", stackName, "--secrets-provider", "passphrase"]);
  await run("ts", ["config", "set", "mode", "packaged", "-s", stackName]);
  const up = ["up", "--yes", "--skip-preview", "-s", stackName, "--color", "never"];
  // The stack's first update gives it its anchor, which fast mode may not (provider/identity).
  await run("ts", ["config", "set", "routes", "0", "-s", stackName]);
  await run("ts", up);
  await run("ts", ["config", "set", "routes", String(routes), "-s", stackName]);
  for (const d of ["js", "js-nomap", "py"])
    fs.copyFileSync(
      path.join(base, "ts", `Pulumi.${stackName}.yaml`),
      path.join(base, d, `Pulumi.${stackName}.yaml`),
    );
  const result = await run("ts", up, { PULUMI_SKIP_CHECKPOINTS: "true" });
  console.log(JSON.stringify({ command, routes, ...result }));
} else if (command === "rounds") {
  writeUnmapped();
  const k = Number(rest[0] ?? 1);
  const variants = (rest[1] ?? "ts,js,py").split(",");
  const ops = (rest[2] ?? "refresh,preview").split(",");
  const samples = {};
  for (let round = 1; round <= k; round++) {
    const order = round % 2 ? variants : [...variants].reverse();
    for (const op of ops) {
      for (const variant of order) {
        const args = ["preview", "-s", stackName, "--color", "never", "--expect-no-changes"];
        if (op === "refresh") args.push("--refresh");
        const r = await run(variant, args);
        (samples[`${variant}/${op}`] ??= []).push(r);
        console.log(JSON.stringify({ routes, round, variant, op, ...r }));
      }
    }
  }
  const summary = Object.fromEntries(
    Object.entries(samples).map(([key, list]) => [
      key,
      {
        n: list.length,
        wall: median(list.map((r) => r.wall)),
        cpuTotal: median(list.map((r) => r.cpu.total)),
        cpuProgram: median(list.map((r) => r.cpu.program)),
        cpuEngine: median(list.map((r) => r.cpu.engine)),
        cpuPlugin: median(list.map((r) => r.cpu.plugin)),
      },
    ]),
  );
  console.log(JSON.stringify({ routes, rounds: k, medians: summary, load: load() }));
} else {
  console.error(
    "usage: node bench/program-runtimes.mjs setup <routes> | rounds <routes> <k> [variants] [ops]",
  );
  process.exit(2);
}
