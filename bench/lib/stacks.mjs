// Section "stacks": big stacks through the real engine, both faces, the embedded service and the
// file backend: `up`, a no-change preview, `preview --refresh`, `destroy`, and the state bytes per
// route, in default mode and in fast mode (PULUMI_SKIP_CHECKPOINTS=true: the engine writes the
// state once at the end instead of at every step, which DIY backends make quadratic). Default mode
// runs at the smaller size only (at 5,000 routes it would take about an hour per face). Each stack
// gets its edge in a first update with checkpoints (not timed; the provider refuses a stack's first
// update in fast mode), then the timed `up` adds the N routes.
import { Buffer } from "node:buffer";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { deployEdgeFirst, needSdks } from "./needs.mjs";
import { log, round, timed } from "./stats.mjs";

const require = createRequire(import.meta.url);
const engine = require("../../scripts/engine.js");

const PROGRAM = path.join(engine.ROOT, "bench", "program");
const quiet = { color: "never" };
/** Each face's program mode, and its no-op floor: the same program and resources, a provider that does nothing. */
const FACES = {
  dynamic: { edge: "edge", floor: "floor" },
  packaged: { edge: "packaged", floor: "packaged-floor" },
};
const PLUGIN_DIRS = {
  packaged: path.join(engine.ROOT, "bin"),
  "packaged-floor": path.join(engine.ROOT, "bench", "floor-plugin"),
};

function workDirFor(tmp, mode) {
  const workDir = path.join(tmp, `stacks-${mode}`);
  if (!fs.existsSync(workDir)) {
    fs.cpSync(PROGRAM, workDir, { recursive: true });
    if (PLUGIN_DIRS[mode]) {
      const version = require("../../package.json").version;
      fs.appendFileSync(
        path.join(workDir, "Pulumi.yaml"),
        `plugins:\n  providers:\n    - name: edge\n      version: ${version}\n      path: ${PLUGIN_DIRS[mode]}\n`,
      );
    }
  }
  return workDir;
}

/** Bytes per route resource of the state (the whole entry: inputs, outputs, the rest). */
function stateBytesPerRoute(deployment, n) {
  const routes = deployment.deployment.resources.filter((r) => r.type.endsWith(":HttpsEdgeRoute"));
  if (routes.length !== n) throw new Error(`expected ${n} routes in the state, found ${routes.length}`);
  const bytes = routes.map((r) => Buffer.byteLength(JSON.stringify(r)));
  return round(bytes.reduce((a, b) => a + b, 0) / n, 0);
}

async function measure(tmp, mode, n, fast) {
  const label = `${mode}-${fast ? "fast" : "default"}-n${n}`;
  const stack = await engine.directoryStack({
    workDir: workDirFor(tmp, mode),
    stackName: label,
    stateDir: path.join(tmp, "stacks-state", label),
    config: { mode: { value: mode } },
    env: { EDGE_DATA_DIR: path.join(tmp, "stacks-data", label) },
  });
  await deployEdgeFirst(stack, { routes: n, fast, opts: quiet });
  const up = await timed(() => stack.up(quiet));
  if (up.value.summary.resourceChanges?.create !== n)
    throw new Error(`${label}: expected ${n} creates, got ${up.value.summary.resourceChanges?.create}`);
  const preview = await timed(() => stack.preview({ ...quiet, expectNoChanges: true }));
  const refresh = await timed(() => stack.preview({ ...quiet, refresh: true, expectNoChanges: true }));
  const stateBytes = stateBytesPerRoute(await stack.exportStack(), n);
  const destroy = await timed(() => stack.destroy(quiet));
  const row = {
    up: round(up.wall, 1),
    preview: round(preview.wall, 1),
    previewRefresh: round(refresh.wall, 1),
    destroy: round(destroy.wall, 1),
    upCpu: round(up.cpu, 1),
    stateBytesPerRoute: stateBytes,
  };
  log(`stacks ${label}: ${JSON.stringify(row)}`);
  fs.rmSync(path.join(tmp, "stacks-state", label), { recursive: true, force: true });
  fs.rmSync(path.join(tmp, "stacks-data", label), { recursive: true, force: true });
  return row;
}

/**
 * `sizes`: [small, large]; default mode at the small size only. `lean` (the smoke run): each face
 * in fast mode only, at both sizes; default mode is the same steps with checkpoints, and the
 * floors' programs run in section 1b.
 */
export async function stacksSection({ tmp, sizes, lean = false }) {
  engine.assertEngine();
  needSdks(engine.ROOT);
  const [small, large] = sizes;
  const rows = {};
  for (const [face, modes] of Object.entries(FACES)) {
    if (!lean) rows[`${face}/default/${small}`] = await measure(tmp, modes.edge, small, false);
    rows[`${face}/fast/${small}`] = await measure(tmp, modes.edge, small, true);
    if (!lean) rows[`${face} floor/fast/${small}`] = await measure(tmp, modes.floor, small, true);
    rows[`${face}/fast/${large}`] = await measure(tmp, modes.edge, large, true);
  }
  // Growth from one size to the other, fast mode: milliseconds per route added, and how much more
  // a route costs at the large size than at the small one (1.0: linear).
  const growth = {};
  for (const face of Object.keys(FACES)) {
    const a = rows[`${face}/fast/${small}`];
    const b = rows[`${face}/fast/${large}`];
    growth[face] = Object.fromEntries(
      ["up", "preview", "previewRefresh", "destroy"].map((op) => [
        op,
        {
          msPerAddedRoute: round(((b[op] - a[op]) * 1000) / (large - small), 1),
          perRouteRatio: round(b[op] / large / (a[op] / small), 2),
        },
      ]),
    );
  }
  return { sizes, rows, growth };
}
