// What a benchmark needs before it runs, checked up front so that a fresh clone is told what to
// build instead of failing halfway (in an engine's log, or on a module not found); where the
// benchmarks keep their work; and the one way they give a new stack its first update.
import fs from "node:fs";
import path from "node:path";

/**
 * The benchmarks' scratch directory: `EDGE_BENCH_TMP` (the smoke test gives each run its own),
 * else `<root>/bench/tmp`. A program run by the engine resolves `pulumi-edge` and `@pulumi/pulumi`
 * from the checkout's node_modules, so the directory must be inside the checkout.
 */
export function benchTmp(root) {
  const dir = path.resolve(process.env.EDGE_BENCH_TMP ?? path.join(root, "bench", "tmp"));
  if (path.relative(root, dir).startsWith("..") || path.isAbsolute(path.relative(root, dir)))
    throw new Error(
      `EDGE_BENCH_TMP=${dir} is outside ${root}: the benchmark's programs load pulumi-edge from the checkout's node_modules, so give a directory inside it (bench/tmp/...)`,
    );
  return dir;
}

/** Throws, saying what to run, unless `root` holds a build (`npm run build`). */
export function needBuild(root) {
  if (!fs.existsSync(path.join(root, "dist", "service", "cli", "edge-service.js")))
    throw new Error(`${root} is not built: run 'npm run build' there first`);
}

/**
 * Throws, saying what to run, unless `root` holds the packaged face's Node.js SDK
 * (`pulumi-edge/packaged`, which bench/program imports in its packaged modes) and, with `python`,
 * the Python SDK: both are made by `npm run sdks`, which `npm run bench` runs.
 */
export function needSdks(root, { python = false } = {}) {
  needBuild(root);
  const missing = [];
  if (!fs.existsSync(path.join(root, "dist", "packaged", "index.js"))) missing.push("pulumi-edge/packaged");
  if (python && !fs.existsSync(path.join(root, "dist", "sdks", "python"))) missing.push("the Python SDK");
  if (missing.length > 0)
    throw new Error(
      `${root} lacks ${missing.join(" and ")} (the packaged face's generated SDKs): run 'npm run sdks' there first`,
    );
}

/**
 * A stack's first update runs with checkpoints: it gives the stack its anchor, which the provider
 * refuses to make in fast mode (PULUMI_SKIP_CHECKPOINTS; see provider/identity). So a benchmark
 * that times fast mode deploys the stack's edge alone first (`routes: 0`, with checkpoints, not
 * timed) and then times the update that adds the routes. `stack` is an Automation API stack whose
 * config names the routes (bench/program); `fast` sets PULUMI_SKIP_CHECKPOINTS for what follows.
 */
export async function deployEdgeFirst(stack, { routes, fast, opts = {} }) {
  await stack.setConfig("routes", { value: "0" });
  await stack.up(opts);
  await stack.setConfig("routes", { value: String(routes) });
  if (fast) stack.workspace.envVars.PULUMI_SKIP_CHECKPOINTS = "true";
}
