// Sections 1 and 2: the real Pulumi engine running bench/program in two modes, pulumi-edge
// ("edge", embedded service) and a dynamic provider that does nothing ("floor"), with the same
// resource count and shape. Runs are interleaved (floor, edge, floor, edge, ...) so that the
// load of a shared machine falls on both alike.
import { Buffer } from "node:buffer";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { needSdks } from "./needs.mjs";
import { log, median, ratio, round, timed } from "./stats.mjs";

const require = createRequire(import.meta.url);
const engine = require("../../scripts/engine.js");

const PROGRAM = path.join(engine.ROOT, "bench", "program");
const quiet = { color: "never" };

/** The plugin each packaged mode runs (by path, from the program's Pulumi.yaml). */
const PLUGIN_DIRS = {
  packaged: path.join(engine.ROOT, "bin"),
  "packaged-floor": path.join(engine.ROOT, "bench", "floor-plugin"),
};

/**
 * What a fresh stack's `up` creates besides the N routes: the stack, the edge, and in the dynamic
 * face the stack's anchor (one `StackAnchor` resource; the packaged face keeps it in its provider).
 */
export const createsOf = (mode, n) => n + 2 + (mode === "edge" ? 1 : 0);

/** One fresh stack (state, config, data directory) of the benchmark program. */
async function freshStack(tmp, mode, n, run) {
  const label = `${mode}-n${n}-r${run}`;
  const workDir = path.join(tmp, `program-${mode}`);
  if (!fs.existsSync(workDir)) {
    fs.cpSync(PROGRAM, workDir, { recursive: true });
    if (PLUGIN_DIRS[mode]) {
      const file = path.join(workDir, "Pulumi.yaml");
      const version = require("../../package.json").version;
      fs.appendFileSync(
        file,
        `plugins:\n  providers:\n    - name: edge\n      version: ${version}\n      path: ${PLUGIN_DIRS[mode]}\n`,
      );
    }
  }
  return engine.directoryStack({
    workDir,
    stackName: `n${n}-r${run}`,
    stateDir: path.join(tmp, "state", label),
    config: { routes: { value: String(n) }, mode: { value: mode } },
    env: { EDGE_DATA_DIR: path.join(tmp, "data", label) },
  });
}

/** Bytes of the route resources of an exported deployment. */
function stateCost(deployment, n) {
  const all = deployment.deployment.resources;
  const routes = all.filter((r) => r.type.endsWith(":HttpsEdgeRoute"));
  const edge = all.find((r) => r.type.endsWith(":HttpsEdge"));
  if (routes.length !== n) throw new Error(`expected ${n} routes in the state, found ${routes.length}`);
  const provider = (r) => Buffer.byteLength(r.inputs?.__provider ?? "");
  const copies = (r) => [r.inputs, r.outputs].filter((p) => p && typeof p.__provider === "string").length;
  const bytes = (x) => Buffer.byteLength(JSON.stringify(x));
  const withoutProvider = (r) => {
    const strip = (p) => Object.fromEntries(Object.entries(p ?? {}).filter(([k]) => k !== "__provider"));
    return { ...r, inputs: strip(r.inputs), outputs: strip(r.outputs) };
  };
  return {
    routeProviderBytes: median(routes.map(provider)),
    edgeProviderBytes: edge ? provider(edge) : null,
    providerCopiesPerResource: median(routes.map(copies)),
    routeStateBytes: median(routes.map(bytes)),
    routeStateBytesWithoutProvider: median(routes.map((r) => bytes(withoutProvider(r)))),
    routeOutputsBytes: median(routes.map((r) => bytes(withoutProvider(r).outputs))),
    deploymentBytes: bytes(deployment),
  };
}

/** `runs`: runs per size, e.g. { 50: 3, 200: 5 }. */
export async function engineSection({ tmp, sizes, runs }) {
  engine.assertEngine();
  const samples = {}; // `${mode}/${n}` → [{up, upCpu, preview, previewCpu}]
  const state = {};
  for (const n of sizes) {
    for (let run = 1; run <= runs[n]; run++) {
      for (const mode of run % 2 ? ["floor", "edge"] : ["edge", "floor"]) {
        const stack = await freshStack(tmp, mode, n, run);
        const up = await timed(() => stack.up(quiet));
        const created = up.value.summary.resourceChanges?.create;
        if (created !== createsOf(mode, n))
          throw new Error(`${mode} n=${n}: expected ${createsOf(mode, n)} creates, got ${created}`);
        const preview = await timed(() => stack.preview({ ...quiet, expectNoChanges: true }));
        const key = `${mode}/${n}`;
        (samples[key] ??= []).push({
          up: up.wall,
          upCpu: up.cpu,
          preview: preview.wall,
          previewCpu: preview.cpu,
        });
        if (run === 1) state[key] = stateCost(await stack.exportStack(), n);
        log(
          `engine ${mode} n=${n} run ${run}: up ${up.wall.toFixed(2)}s (cpu ${up.cpu?.toFixed(2)}s), preview ${preview.wall.toFixed(2)}s (cpu ${preview.cpu?.toFixed(2)}s)`,
        );
      }
    }
  }

  // Ratios are taken per pair (the floor run and the pulumi-edge run of one round are adjacent in
  // time, so they share the machine's load), then the median over the pairs.
  const perSize = {};
  for (const n of sizes) {
    const floor = samples[`floor/${n}`];
    const edge = samples[`edge/${n}`];
    const m = (list, field) => median(list.map((s) => s[field]));
    const paired = (f) => median(edge.map((e, i) => f(e, floor[i])));
    const row = {};
    for (const op of ["up", "preview"]) {
      const cpu = `${op}Cpu`;
      row[op] = {
        floorSeconds: round(m(floor, op), 2),
        edgeSeconds: round(m(edge, op), 2),
        ratio: round(
          paired((e, f) => e[op] / f[op]),
          3,
        ),
        ratioRange: [
          round(Math.min(...edge.map((e, i) => e[op] / floor[i][op])), 2),
          round(Math.max(...edge.map((e, i) => e[op] / floor[i][op])), 2),
        ],
        ratioOfMedians: ratio(m(edge, op), m(floor, op)),
        floorCpuSeconds: round(m(floor, cpu), 2),
        edgeCpuSeconds: round(m(edge, cpu), 2),
        cpuRatio: round(
          paired((e, f) => e[cpu] / f[cpu]),
          3,
        ),
        perRouteOverheadMs: round(
          paired((e, f) => ((e[op] - f[op]) * 1000) / n),
          1,
        ),
        perRouteCpuOverheadMs: round(
          paired((e, f) => ((e[cpu] - f[cpu]) * 1000) / n),
          1,
        ),
      };
    }
    perSize[n] = row;
  }
  return { runs, sizes, perSize, samples, state };
}

/**
 * The two faces side by side (one run of the suite): `pulumi up` and a no-change preview of N
 * routes through the dynamic resources, the packaged provider, and each face's no-op floor, the
 * four modes interleaved in every round. Ratios per round, then the median over the rounds.
 */
export async function facesSection({ tmp, n, runs }) {
  engine.assertEngine();
  needSdks(engine.ROOT);
  const MODES = ["floor", "edge", "packaged-floor", "packaged"];
  const samples = {};
  const state = {};
  for (let run = 1; run <= runs; run++) {
    const order = run % 2 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      const stack = await freshStack(tmp, mode, n, `f${run}`);
      const up = await timed(() => stack.up(quiet));
      const created = up.value.summary.resourceChanges?.create;
      if (created !== createsOf(mode, n))
        throw new Error(`${mode} n=${n}: expected ${createsOf(mode, n)} creates, got ${created}`);
      const preview = await timed(() => stack.preview({ ...quiet, expectNoChanges: true }));
      (samples[mode] ??= []).push({
        up: up.wall,
        upCpu: up.cpu,
        preview: preview.wall,
        previewCpu: preview.cpu,
      });
      if (run === 1) state[mode] = stateCost(await stack.exportStack(), n);
      log(
        `faces ${mode} n=${n} run ${run}: up ${up.wall.toFixed(2)}s (cpu ${up.cpu?.toFixed(2)}s), preview ${preview.wall.toFixed(2)}s (cpu ${preview.cpu?.toFixed(2)}s)`,
      );
    }
  }
  const m = (mode, field) => round(median(samples[mode].map((s) => s[field])), 2);
  const paired = (a, b, field) => round(median(samples[a].map((s, i) => s[field] / samples[b][i][field])), 3);
  const ops = {};
  for (const op of ["up", "preview"]) {
    const cpu = `${op}Cpu`;
    ops[op] = {
      seconds: Object.fromEntries(MODES.map((mode) => [mode, m(mode, op)])),
      cpuSeconds: Object.fromEntries(MODES.map((mode) => [mode, m(mode, cpu)])),
      packagedOverFloor: paired("packaged", "packaged-floor", op),
      packagedOverFloorCpu: paired("packaged", "packaged-floor", cpu),
      packagedOverDynamicFloor: paired("packaged", "floor", op),
      packagedOverDynamicFloorCpu: paired("packaged", "floor", cpu),
      dynamicOverFloor: paired("edge", "floor", op),
      packagedOverDynamic: paired("packaged", "edge", op),
    };
  }
  return { n, runs, modes: MODES, ops, samples, state };
}
