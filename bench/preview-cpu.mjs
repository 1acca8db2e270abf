// CPU per process of the packaged face's `pulumi preview` and `preview --refresh`, for one checkout
// of this repository (so that two commits can be compared side by side on a loaded machine, where
// wall-clock times say little). Issue 28, item 4; see BENCHMARKS.md, "Why the packaged preview got
// slower (525371d → 5bd0c41)".
//
//   node bench/preview-cpu.mjs <checkout> setup <routes>        stack + its edge (with checkpoints:
//                                                               a stack's first update may not skip
//                                                               them), then `up` of the routes (fast mode)
//   node bench/preview-cpu.mjs <checkout> preview|refresh <routes> [--profile DIR]
//
// <checkout> is a built working tree (npm run build && npm run sdks; it says so otherwise). The
// program is bench/program in packaged mode, copied under <checkout>/bench/tmp (or EDGE_BENCH_TMP,
// inside the checkout) so that it imports that checkout's SDK, and its
// plugin is that checkout's dist/provider/plugin/index.js. While the CLI runs, /proc is sampled
// every 50 ms and the last utime+stime seen of every process descended from it is kept, grouped as
// engine (the pulumi CLI), language host, program (node), plugin (node), other. The line printed is
// JSON. With --profile the plugin runs under the inspector's profiler and writes a .cpuprofile
// into DIR when the engine interrupts it (SIGINT) or it exits.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { benchTmp, needSdks } from "./lib/needs.mjs";
import { cpuOfTree } from "./lib/proc-cpu.mjs";

const [checkout, command, routesArg, ...rest] = process.argv.slice(2);
if (!checkout || !["setup", "preview", "refresh"].includes(command)) {
  console.error(
    "usage: node bench/preview-cpu.mjs <checkout> setup|preview|refresh <routes> [--profile DIR]",
  );
  process.exit(2);
}
const root = path.resolve(checkout);
const routes = Number(routesArg ?? 500);
const profileDir = rest[0] === "--profile" ? path.resolve(rest[1]) : undefined;
needSdks(root);
const require = createRequire(path.join(root, "package.json"));
const engine = require("./scripts/engine.js");
engine.assertEngine();

const workDir = path.join(benchTmp(root), `preview-cpu-n${routes}`);
const pluginDir = path.join(workDir, "plugin");
const stateDir = path.join(workDir, "state");

const PRELOAD = `const inspector = require("node:inspector");
const fs = require("node:fs");
const session = new inspector.Session();
session.connect();
session.post("Profiler.enable");
session.post("Profiler.setSamplingInterval", { interval: 1000 });
session.post("Profiler.start");
let written = false;
function write() {
  if (written) return;
  written = true;
  session.post("Profiler.stop", (err, res) => {
    if (!err) fs.writeFileSync(process.env.EDGE_PROFILE_DIR + "/plugin-" + process.pid + ".cpuprofile", JSON.stringify(res.profile));
  });
}
process.on("exit", write);
process.on("SIGINT", () => { write(); process.exit(0); });
`;

function setupDir() {
  fs.mkdirSync(pluginDir, { recursive: true });
  fs.cpSync(path.join(root, "bench", "program"), workDir, { recursive: true });
  const version = require("./package.json").version;
  fs.appendFileSync(
    path.join(workDir, "Pulumi.yaml"),
    `plugins:\n  providers:\n    - name: edge\n      version: ${version}\n      path: ${pluginDir}\n`,
  );
  fs.writeFileSync(path.join(pluginDir, "preload.cjs"), PRELOAD);
  fs.writeFileSync(
    path.join(pluginDir, "pulumi-resource-edge"),
    `#!/bin/sh\nif [ -n "$EDGE_PROFILE_DIR" ]; then exec node -r "${pluginDir}/preload.cjs" "${root}/dist/provider/plugin/index.js" "$@"; fi\nexec node "${root}/dist/provider/plugin/index.js" "$@"\n`,
    { mode: 0o755 },
  );
}

function env(extra = {}) {
  return {
    ...process.env,
    ...engine.engineEnv({ stateDir, extra }),
    EDGE_DATA_DIR: path.join(workDir, "data"),
    PULUMI_CONFIG_PASSPHRASE: "",
  };
}

/** Runs the CLI with `args`, sampling the CPU of its process tree. */
function run(args, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(path.join(engine.PULUMI_BIN, "pulumi"), args, {
      cwd: workDir,
      env: env(extraEnv),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const sampled = cpuOfTree(child, { rootClass: "engine" });
    child.on("error", reject);
    child.on("exit", async (code) => {
      const wall = (performance.now() - t0) / 1000;
      const { total, ...cpu } = await sampled;
      if (code !== 0)
        return reject(new Error(`pulumi ${args.join(" ")} exited ${code}:\n${out.slice(-3000)}`));
      resolve({ wall: Math.round(wall * 100) / 100, total, ...cpu, out });
    });
  });
}

const stackName = `n${routes}`;
if (command === "setup") {
  fs.rmSync(workDir, { recursive: true, force: true });
  setupDir();
  await run(["stack", "init", stackName, "--secrets-provider", "passphrase"]);
  await run(["config", "set", "mode", "packaged", "-s", stackName]);
  const up = ["up", "--yes", "--skip-preview", "-s", stackName, "--color", "never"];
  // The stack's first update gives it its anchor, which fast mode may not (provider/identity).
  await run(["config", "set", "routes", "0", "-s", stackName]);
  await run(up);
  await run(["config", "set", "routes", String(routes), "-s", stackName]);
  const result = await run(up, { PULUMI_SKIP_CHECKPOINTS: "true" });
  delete result.out;
  console.log(JSON.stringify({ checkout: root, command, routes, ...result }));
} else {
  if (!fs.existsSync(stateDir))
    throw new Error(
      `no stack of ${routes} routes in ${workDir}: run 'node bench/preview-cpu.mjs ${checkout} setup ${routes}' first`,
    );
  const args = ["preview", "-s", stackName, "--color", "never", "--expect-no-changes"];
  if (command === "refresh") args.push("--refresh");
  let extra = {};
  if (profileDir) {
    fs.mkdirSync(profileDir, { recursive: true });
    extra = { EDGE_PROFILE_DIR: profileDir };
  }
  const r = await run(args, extra);
  delete r.out;
  console.log(JSON.stringify({ checkout: path.basename(root), command, routes, ...r }));
}
