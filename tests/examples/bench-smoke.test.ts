/**
 * Every benchmark of bench/ run once, at its smallest sizes, as its comment says to run it: that it
 * still completes on today's provider and service (the anchor rule, the natural keys, the layout)
 * and prints its figures. What the figures are is never asserted: they are timings of a shared
 * machine, and BENCHMARKS.md holds the measured ones with their load. A benchmark that nothing
 * runs breaks unseen (issue 54: all of them had); a new script in bench/ fails the first test
 * until it is smoked here. The fleet's drift benchmark has its own file,
 * bench-smoke-fleet.test.ts.
 *
 * Needs what `npm test`'s pretest makes: the build, the engine, the SDKs (the packaged face's
 * programs import `pulumi-edge/packaged`; the Python program the Python SDK), PostgreSQL's binaries.
 * Each run works in a directory of its own (EDGE_BENCH_TMP, inside the checkout: the programs load
 * pulumi-edge from its node_modules), removed at the end.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { scaled } from "../support/machine";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const ROOT = engine.ROOT;
const BENCH = join(ROOT, "bench");

let tmp: string;
beforeAll(() => {
  mkdirSync(join(BENCH, "tmp"), { recursive: true });
  tmp = mkdtempSync(join(BENCH, "tmp", "smoke-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `node bench/<script> ...args` from the checkout's root; its stdout. Fails with both outputs. */
function bench(script: string, args: string[], minutes = 5): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(BENCH, script), ...args],
      {
        cwd: ROOT,
        env: { ...process.env, EDGE_BENCH_TMP: tmp },
        encoding: "utf8",
        timeout: scaled(minutes * 60_000),
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error)
          reject(
            new Error(
              `node bench/${script} ${args.join(" ")}: ${error.message}\n--- stdout\n${stdout.slice(-6000)}\n--- stderr\n${stderr.slice(-6000)}`,
            ),
          );
        else resolve(stdout);
      },
    );
  });
}

/** The JSON objects printed one per line (other lines, such as logs and tables, are skipped). */
const jsonLines = (out: string): Record<string, unknown>[] =>
  out
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("{") && l.endsWith("}"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** A figure: a finite number, not negative (a time, a size, a count or a ratio). */
function figure(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
    throw new Error(`${what}: expected a figure, got ${JSON.stringify(value)}`);
  return value;
}

/** The value at `path` (dot-separated) of `o`. */
function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const key of path.split(".")) cur = (cur as Record<string, unknown> | undefined)?.[key];
  return cur;
}

const figures = (o: unknown, paths: string[]) => {
  for (const p of paths) figure(at(o, p), p);
};

/** Every script in bench/ and the test that smoke-runs it. */
const SMOKED = new Set<string>();
const smoke = (scripts: string[], name: string, fn: () => Promise<void>, minutes: number) => {
  for (const s of scripts) SMOKED.add(s);
  test(`${scripts.join(", ")}: ${name}`, fn, scaled(minutes * 60_000));
};

test("every benchmark in bench/ is smoke-run (here, or the fleet's in bench-smoke-fleet.test.ts)", () => {
  const scripts = readdirSync(BENCH).filter((f) => /\.(mjs|cjs|js)$/.test(f));
  expect(scripts.filter((s) => !SMOKED.has(s) && s !== "fleet-drift.mjs")).toEqual([]);
});

smoke(
  ["run.mjs"],
  "`npm run bench`'s every section, smallest sizes, its results file and generated block",
  async () => {
    const markdown = join(tmp, "BENCHMARKS.md");
    copyFileSync(join(ROOT, "BENCHMARKS.md"), markdown);
    const out = await bench("run.mjs", ["--smoke", "--markdown", markdown], 30);
    expect(out).toMatch(/done in [\d.]+ min/);
    const results = JSON.parse(readFileSync(join(tmp, "results.partial.json"), "utf8")) as unknown;
    figures(results, [
      "payload.headline.patchBytes",
      "scaling.perOp.get.httpRatio",
      "scaling.memory.rssRatio",
      "service.load.get.requestsPerSecond",
      "service.load.post.latencyP99Ms",
      "service.perCall.httpPatch",
      "metrics.cpuMicrosOn",
      "stores.perOp.postgres.20.patchMedianMicros",
      "stores.load.postgres2.get.requestsPerSecond",
      "engine.perSize.2.up.edgeSeconds",
      "engine.perSize.2.preview.cpuRatio",
      "engine.state.edge/2.routeStateBytes",
      "faces.ops.up.seconds.packaged",
      "faces.ops.preview.packagedOverFloor",
      "stacks.rows.dynamic/fast/3.up",
      "stacks.rows.packaged/fast/3.previewRefresh",
      "stacks.growth.dynamic.up.perRouteRatio",
    ]);
    const block = readFileSync(markdown, "utf8")
      .split("<!-- bench:results:begin")[1]!
      .split("<!-- bench:results:end")[0]!;
    for (const heading of [
      "### Targets",
      "### 0. Big stacks",
      "### 1b.",
      "### 1.",
      "### 2.",
      "### 3.",
      "### 3b.",
      "### 4.",
      "### 5.",
      "### 6.",
    ])
      expect(block).toContain(heading);
    expect(block).not.toMatch(/NaN|undefined/);
  },
  40,
);

smoke(
  ["write-path-ab.mjs"],
  "`npm run bench:ab`'s write path, both stores, over TLS and beside another build",
  async () => {
    const json = join(tmp, "write-path-ab.json");
    const args = ["--against", "none", "--tls", "--also", ROOT, "--rounds", "1", "--seconds", "0.5"];
    const out = await bench(
      "write-path-ab.mjs",
      [...args, "--warmup", "0", "--prefill", "10", "--out", json],
      10,
    );
    expect(out).toContain("| phase | build | req/s |");
    const results = JSON.parse(readFileSync(json, "utf8")) as unknown;
    for (const store of ["postgres", "sqlite"])
      for (const phase of ["post", "patch", "mixed"])
        figures(at(results, `stores.${store}.summary.${phase}`), [
          "tree.perSecond",
          "tree.cpuMicrosPerRequest.total",
          "tree+tls.vsRelease.perSecond",
        ]);
  },
  15,
);

smoke(
  ["audit-cost.mjs"],
  "an audit event's cost, in process on both stores beside another build, and over HTTP",
  async () => {
    const small = ["--n", "20", "--block", "10", "--rounds", "1"];
    const lines = [
      ...jsonLines(await bench("audit-cost.mjs", [...small, "--store", "both", "--old", join(ROOT, "dist")])),
      ...jsonLines(await bench("audit-cost.mjs", [...small, "--store", "sqlite", "--via", "http"])),
    ];
    expect(lines.map((l) => Object.keys(l)[0])).toEqual(["sqlite", "postgres", "sqlite"]);
    for (const l of lines) figures(Object.values(l)[0], ["post.with.micros", "patch.without.micros"]);
  },
  10,
);

smoke(
  ["audit-migration.cjs"],
  "the audit table's upgrade",
  async () => {
    expect(await bench("audit-migration.cjs", ["100"])).toMatch(
      /^100 events, \d+ MiB: .* in \d+ ms wall, \d+ ms CPU$/m,
    );
  },
  5,
);

smoke(
  ["invalid-bodies.mjs"],
  "invalid bodies against a server, flat and nested",
  async () => {
    for (const shape of ["flat", "nested"]) {
      const out = await bench("invalid-bodies.mjs", [
        "--rounds",
        "1",
        "--concurrency",
        "1",
        "--items",
        "1000",
        "--shape",
        shape,
      ]);
      const result = JSON.parse(out) as Record<string, unknown>;
      expect(result.put_status).toBe(400);
      figures(result, ["body_bytes", "rss_peak_mb", "healthz_probes"]);
    }
  },
  5,
);

smoke(
  ["preview-cpu.mjs", "plugin-ops.cjs"],
  "the packaged preview's CPU by process (setup, preview, refresh profiled), then the plugin's operations on that stack",
  async () => {
    const lines = [];
    for (const step of [
      ["setup", "1"],
      ["preview", "1"],
      ["refresh", "1", "--profile", join(tmp, "profiles")],
    ])
      lines.push(...jsonLines(await bench("preview-cpu.mjs", [ROOT, ...step])));
    expect(lines.map((l) => l.command)).toEqual(["setup", "preview", "refresh"]);
    for (const l of lines) figures(l, ["wall", "total", "engine", "program", "plugin"]);
    expect(readdirSync(join(tmp, "profiles")).filter((f) => f.endsWith(".cpuprofile"))).not.toEqual([]);

    const stack = join(tmp, "preview-cpu-n1");
    const state = join(stack, "state", ".pulumi", "stacks", "bench-program", "n1.json");
    expect(existsSync(state)).toBe(true);
    const [ops] = jsonLines(await bench("plugin-ops.cjs", [ROOT, state, join(stack, "data"), "1"]));
    expect(ops!.resources).toBe(2); // the edge and its one route
    figures(ops, ["ms.load", "ms.check", "ms.diff", "ms.read", "total"]);
  },
  10,
);

smoke(
  ["program-runtimes.mjs"],
  "one program as TypeScript, JavaScript and Python, every variant",
  async () => {
    await bench("program-runtimes.mjs", ["setup", "1"], 10);
    const variants = ["ts", "ts-transpile", "js", "js-nomap", "js-unmapped", "py"];
    const lines = jsonLines(
      await bench("program-runtimes.mjs", ["rounds", "1", "1", variants.join(","), "preview"], 10),
    );
    const summary = lines.at(-1)!;
    for (const v of variants)
      figures(summary, [`medians.${v}/preview.wall`, `medians.${v}/preview.cpuTotal`]);
  },
  20,
);

smoke(
  ["profile.mjs"],
  "CPU profiles of the provider and of the service, summarised",
  async () => {
    const runs = [
      ["provider", "1", "preview"],
      ...["get", "post", "patch", "floor"].map((op) => ["service", op, "1"]),
    ];
    for (const args of runs) {
      const out = await bench("profile.mjs", args, 5);
      expect(out).toMatch(/^sampled \d+ ms, idle \d+ ms, busy \d+ ms$/m);
      expect(out).toMatch(/-- self time\n\s+\d+ ms {2}\S/);
    }
  },
  15,
);

smoke(
  ["read-modules.mjs", "statements.mjs", "update-path.mjs"],
  "a route's modules read through the contract; statements against a build; the provider's update path",
  async () => {
    const read = jsonLines((await bench("read-modules.mjs", [])).replace(/^\[bench [\d:]+\] /gm, ""));
    figures(read[0], ["rowBeforeMicros", "rowNowMicros", "serviceGetMicros"]);

    const statements = await bench("statements.mjs", ["--before", ROOT, "--rounds", "1", "--requests", "10"]);
    for (const path of ["GET route", "GET routes (page of 20)", "POST route", "PATCH route"]) {
      const line = statements.split("\n").find((l) => l.startsWith(`${path} {`));
      figures(JSON.parse(line!.slice(path.length + 1)), ["beforeMicros", "afterMicros", "ratio"]);
    }

    const [update] = jsonLines(await bench("update-path.mjs", ["--routes", "2", "--passes", "1"]));
    figures(update, ["median"]);
  },
  5,
);
