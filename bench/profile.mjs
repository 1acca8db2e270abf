// How the numbers of BENCHMARKS.md were explained: CPU profiles, summarised by function.
//
//   node bench/profile.mjs provider [N] [up|preview]
//                                            `pulumi up` of bench/program (edge mode, N routes,
//                                            default 200), or a no-change preview after it, with
//                                            the dynamic-provider process sampled
//   node bench/profile.mjs service get|post|patch|floor [seconds]
//                                            the service under 5 s (or `seconds`) of autocannon load, sampled
//                                            (floor: the bare node:http server answering the
//                                            same GET bytes, for comparison)
//
// The engine starts the provider process itself and interrupts it at the end (no normal exit, so
// `--cpu-prof` writes nothing): the program is given a project plugin `pulumi-nodejs` that runs
// the usual dynamic-provider host with a preload writing a profile every second and at SIGINT
// (a short run's only one). Profiles are kept
// in bench/tmp/profile-<time> (bench/tmp: EDGE_BENCH_TMP if set).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import { spawnServer } from "./lib/child.mjs";
import { benchTmp, needBuild } from "./lib/needs.mjs";
import { routeBody } from "./lib/shapes.mjs";

const require = createRequire(import.meta.url);
const engine = require("../scripts/engine.js");
const OUT = path.join(benchTmp(engine.ROOT), `profile-${Date.now()}`);
needBuild(engine.ROOT);

const PRELOAD = `const inspector = require("node:inspector");
const fs = require("node:fs");
const session = new inspector.Session();
session.connect();
session.post("Profiler.enable");
session.post("Profiler.start");
let i = 0;
const write = (then) =>
  session.post("Profiler.stop", (err, res) => {
    if (!err) fs.writeFileSync(process.env.PROFILE_DIR + "/provider-" + String(i++).padStart(3, "0") + ".cpuprofile", JSON.stringify(res.profile));
    then();
  });
setInterval(() => write(() => session.post("Profiler.start")), 1000).unref();
process.on("SIGINT", () => write(() => process.exit(0)));
`;

const WRAPPER = `#!/bin/sh
P=$(node -e "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))")
exec node -r "$(dirname "$0")/preload.cjs" "$P" "$@"
`;

async function profileProvider(n, command) {
  const plugin = path.join(OUT, "plugin");
  const profiles = path.join(OUT, "profiles");
  fs.mkdirSync(plugin, { recursive: true });
  fs.mkdirSync(profiles, { recursive: true });
  fs.writeFileSync(path.join(plugin, "preload.cjs"), PRELOAD);
  fs.writeFileSync(path.join(plugin, "pulumi-resource-pulumi-nodejs"), WRAPPER, { mode: 0o755 });
  const workDir = path.join(OUT, "program");
  fs.cpSync(path.join(engine.ROOT, "bench", "program"), workDir, { recursive: true });
  fs.appendFileSync(
    path.join(workDir, "Pulumi.yaml"),
    `plugins:\n  providers:\n    - name: pulumi-nodejs\n      path: ${plugin}\n`,
  );
  const stack = await engine.directoryStack({
    workDir,
    stackName: "profile",
    stateDir: path.join(OUT, "state"),
    config: { routes: { value: String(n) }, mode: { value: "edge" } },
    env: { EDGE_DATA_DIR: path.join(OUT, "data"), PROFILE_DIR: profiles },
  });
  let t0 = performance.now();
  await stack.up({ color: "never" });
  console.log(`pulumi up of ${n} routes: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (command !== "preview") return profiles;
  const previewProfiles = path.join(OUT, "preview-profiles");
  fs.mkdirSync(previewProfiles);
  stack.workspace.envVars.PROFILE_DIR = previewProfiles;
  t0 = performance.now();
  await stack.preview({ color: "never", expectNoChanges: true });
  console.log(`pulumi preview of ${n} routes: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return previewProfiles;
}

async function profileService(op, seconds) {
  const profiles = path.join(OUT, "profiles");
  fs.mkdirSync(profiles, { recursive: true });
  const edgeServer = spawnServer(op === "floor" ? [] : ["--cpu-prof", `--cpu-prof-dir=${profiles}`]);
  const edge = await edgeServer.call({ cmd: "edge", dataDir: path.join(OUT, "data"), seed: 1 });
  const routePath = `/edges/https/${edge.edgeId}/routes/${edge.routeIds[0]}`;
  let server = edgeServer;
  if (op === "floor") {
    // A profiled process of its own, answering the bytes of GET route without the service.
    const body = await (await globalThis.fetch(edge.url + routePath)).text();
    await edgeServer.close();
    server = spawnServer(["--cpu-prof", `--cpu-prof-dir=${profiles}`]);
    edge.url = (await server.call({ cmd: "floor", body })).url;
  }
  const headers = { "content-type": "application/json" };
  let n = 0;
  const target = {
    get: { url: edge.url + routePath },
    floor: { url: edge.url },
    post: {
      url: edge.url,
      requests: [
        {
          method: "POST",
          path: `/edges/https/${edge.edgeId}/routes`,
          headers,
          setupRequest: (req) => ({ ...req, body: JSON.stringify(routeBody(n++, "profile")) }),
        },
      ],
    },
    patch: {
      url: edge.url,
      requests: [
        {
          method: "PATCH",
          path: routePath,
          headers,
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({ circuit_breaker: { num_buckets: (n++ % 2) + 10 } }),
          }),
        },
      ],
    },
  }[op];
  if (!target) throw new Error(`unknown operation ${op}: get, post or patch`);
  const result = await autocannon({ connections: 10, duration: seconds, ...target });
  console.log(`${op}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms (profiled)`);
  await server.close(); // a normal exit: --cpu-prof writes the profile
  return profiles;
}

/** Self and inclusive time by function, over every profile of a directory. */
function summarise(dir, top = 25) {
  const self = new Map();
  const inclusive = new Map();
  let total = 0;
  let idle = 0;
  const name = (f) =>
    `${f.functionName || "(anonymous)"} ${f.url.replace(/^file:\/\//, "").replace(`${engine.ROOT}/`, "")}:${f.lineNumber + 1}`;
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const profile = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map();
    for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
    const interval = (profile.endTime - profile.startTime) / profile.samples.length / 1000;
    for (const id of profile.samples) {
      const node = nodes.get(id);
      total += interval;
      if (node.callFrame.functionName === "(idle)") idle += interval;
      self.set(name(node.callFrame), (self.get(name(node.callFrame)) ?? 0) + interval);
      const seen = new Set();
      for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
        const key = name(nodes.get(cur).callFrame);
        if (seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + interval);
      }
    }
  }
  const list = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `${v.toFixed(0).padStart(7)} ms  ${k}`)
      .join("\n");
  console.log(
    `sampled ${total.toFixed(0)} ms, idle ${idle.toFixed(0)} ms, busy ${(total - idle).toFixed(0)} ms`,
  );
  console.log(`-- self time\n${list(self)}\n-- inclusive time\n${list(inclusive)}`);
  console.log(`profiles: ${path.relative(engine.ROOT, dir)} (open them in Chrome DevTools)`);
}

const [what, arg] = process.argv.slice(2);
if (what === "provider") summarise(await profileProvider(Number(arg ?? 200), process.argv[4] ?? "up"));
else if (what === "service") summarise(await profileService(arg ?? "get", Number(process.argv[4] ?? 5)));
else {
  console.error(
    "usage: node bench/profile.mjs provider [N] [up|preview] | service get|post|patch|floor [seconds]",
  );
  process.exit(2);
}
process.exit(0);
