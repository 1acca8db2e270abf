// The packaged plugin's per-resource work of a no-change `preview --refresh`, without the engine:
// for every route of a stack's state, check → diff → read through EdgeProvider of one checkout,
// against a copy of that stack's embedded data directory. Prints the CPU of each phase (ms), so
// that two checkouts compare on a loaded machine (issue 28, item 4; see BENCHMARKS.md).
//
//   node bench/plugin-ops.cjs <checkout> <state.json> <data dir> [rounds]
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const [root, stateFile, dataDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 1);
if (!root || !stateFile || !dataDir) {
  console.error("usage: node bench/plugin-ops.cjs <checkout> <state.json> <data dir> [rounds]");
  process.exit(2);
}
if (!fs.existsSync(path.join(root, "dist/provider/plugin/provider.js")))
  throw new Error(`${path.resolve(root)} is not built: run 'npm run build' there first`);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "plugin-ops-"));
fs.cpSync(dataDir, tmp, { recursive: true });
process.env.EDGE_DATA_DIR = tmp;
delete process.env.PULUMI_CONFIG;
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const t0 = cpu();
const { EdgeProvider } = require(path.join(path.resolve(root), "dist/provider/plugin/provider.js"));
const loaded = cpu() - t0;
const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
const resources = state.checkpoint.latest.resources.filter((r) => r.type.startsWith("edge:index:"));
(async () => {
  const p = new EdgeProvider();
  const { version } = require(path.join(path.resolve(root), "package.json"));
  p.configure({ args: { version }, variables: {}, name: `default_${version.replace(/\./g, "_")}` });
  const times = { load: loaded, check: 0, diff: 0, read: 0 };
  // Warm-up: the embedded service opens on the first call.
  await p.read(resources[0].id, resources[0].urn, resources[0].outputs);
  for (let r = 0; r < rounds; r++) {
    for (const res of resources) {
      let t = cpu();
      const checked = await p.check(res.urn, res.inputs, res.inputs);
      times.check += cpu() - t;
      t = cpu();
      await p.diff(res.id, res.urn, res.outputs, checked.inputs);
      if (p.takeDetailedDiff) p.takeDetailedDiff(res.urn);
      times.diff += cpu() - t;
      t = cpu();
      await p.read(res.id, res.urn, res.outputs);
      times.read += cpu() - t;
    }
  }
  const per = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(v)]));
  console.log(
    JSON.stringify({ root, resources: resources.length, rounds, ms: per, total: Math.round(cpu() - t0) }),
  );
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
})();
