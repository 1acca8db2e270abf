// The write path of a recorded release against this tree, side by side in one run (issue 36):
// each build's own `edge-service serve` process on the same kind of store (one PostgreSQL
// cluster with a database each; SQLite, a data directory each), driven by the same keep-alive
// HTTP load, the builds taking turns in rounds, so that a release slower than the last is seen
// before it ships. After `npm run build`:
//
//   node bench/write-path-ab.mjs [--against 0.1.0|none] [--store postgres|sqlite|both] [--rounds 3]
//        [--seconds 15] [--workers 8] [--phases post,patch,mixed] [--also DIR[,DIR]] [--tls]
//        [--warmup 3] [--prefill 1000] [--sealed] [--no-key] [--profile] [--out FILE]
//   (npm run bench:ab -- ARGS builds this tree first)
//
// --against: a version recorded in releases.json (default: the newest there), built from git
//   history into ~/.cache/pulumi-edge/releases/<commit> by scripts/built-release.js (the upgrade
//   test's builder: the first run takes minutes, later ones nothing).
//   `none`: no release; the first build of the rotation is then the one the others are held to.
// --also: more built checkouts (a directory holding dist/, e.g. the tree before a change) in the
//   same rotation, each named by its directory.
// --tls: this tree a second time, `tree+tls`, serving HTTPS (a certificate for 127.0.0.1 made
//   with openssl in bench/tmp) to a keep-alive HTTPS client trusting it: the cost of TLS on the
//   write path, side by side with plain HTTP (`--against none --tls`: tree, then tree+tls).
// Phases, each `--seconds` long, every build in turn within a round (the order reversed every
//   other round: A B, B A, ...), `--workers` concurrent keep-alive connections:
//   post   route creates, each with its own Idempotency-Key and match (the provider's creates);
//   patch  PATCHes of the routes this build made in its post phases, taken in turn, each a
//          real change (a new description and circuit breaker), so each writes its audit event;
//   mixed  the issue's load: each worker creates a route (keyed), reads it, and updates it.
// Before the rounds, not measured: `--prefill` (1,000) keyed creates and `--warmup` seconds of the
//   mixed load per build (JIT, pools, prepared statements), then on PostgreSQL an ANALYZE of each
//   database (a database in service has statistics); a patch phase run alone first makes as many.
// The smallest run (tests/examples/bench-smoke.test.ts): --rounds 1 --seconds 0.5 --warmup 0
//   --prefill 10.
// Measured per phase: requests, requests/s, p50/p99, and CPU per request: the server process (all
//   its threads, /proc/<pid>/stat) and, on PostgreSQL, the cluster (postmaster, its backends, and
//   what exited meanwhile, through the postmaster's cutime), during that phase only. The load
//   generator is this process (not counted). The load average is read before and after each phase.
// --sealed: every server gets a secrets key (secrets sealed at rest); --no-key: no API key (the
//   default is a bootstrap key, EDGE_API_KEY, as replicas behind a balancer run).
// --profile: every server runs with `node --cpu-prof` (profiles in bench/tmp/write-path-ab/).
// Results: a table on stdout and bench/tmp/write-path-ab.json (or --out; bench/tmp is EDGE_BENCH_TMP
// if set). BENCHMARKS.md, issue 36.
import { Buffer } from "node:buffer";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { clearTimeout, setTimeout } from "node:timers";
import { URL } from "node:url";
import { parseArgs } from "node:util";
import { benchTmp, needBuild } from "./lib/needs.mjs";
import { freePort, startCluster } from "./lib/postgres.mjs";
import { routeBody } from "./lib/shapes.mjs";
import { log, median, percentile, round } from "./lib/stats.mjs";

const require = createRequire(import.meta.url);
const pg = require("pg");
const built = require("../scripts/built-release.js");
const ROOT = built.ROOT;
const OUT_DIR = path.join(benchTmp(ROOT), "write-path-ab");

const { values: opts } = parseArgs({
  options: {
    against: { type: "string" },
    also: { type: "string" },
    store: { type: "string", default: "both" },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "15" },
    workers: { type: "string", default: "8" },
    phases: { type: "string", default: "post,patch,mixed" },
    warmup: { type: "string", default: "3" },
    prefill: { type: "string", default: "1000" },
    sealed: { type: "boolean", default: false },
    "no-key": { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    tls: { type: "boolean", default: false },
    out: { type: "string" },
  },
});
const ROUNDS = Number(opts.rounds);
const SECONDS = Number(opts.seconds);
const WORKERS = Number(opts.workers);
const WARMUP = Number(opts.warmup);
const PREFILL = Number(opts.prefill);
const PHASES = opts.phases.split(",");
for (const p of PHASES) if (!["post", "patch", "mixed"].includes(p)) throw new Error(`unknown phase ${p}`);
const STORES = opts.store === "both" ? ["postgres", "sqlite"] : [opts.store];
for (const s of STORES) if (!["postgres", "sqlite"].includes(s)) throw new Error(`unknown store ${s}`);
const API_KEY = opts["no-key"] ? undefined : "bench-write-path-ab-key";
const SECRETS_KEY = opts.sealed ? Buffer.alloc(32, 36).toString("base64") : undefined;

/** The builds in the rotation: the release, this tree, and any --also checkouts. */
function builds() {
  const out = [];
  if (opts.against !== "none") {
    const release = built.releaseNamed(opts.against);
    out.push({ label: release.version, dir: built.builtRelease(release, (m) => log(`building ${m}`)) });
  }
  for (const d of opts.also ? opts.also.split(",") : []) {
    const full = path.resolve(d);
    if (!fs.existsSync(built.edgeServiceCli(full)))
      throw new Error(`${full} holds no built dist/ (npm run build there)`);
    out.push({ label: path.basename(full), dir: full });
  }
  needBuild(ROOT);
  out.push({ label: "tree", dir: ROOT });
  if (opts.tls) out.push({ label: "tree+tls", dir: ROOT, tls: serverCertificate() });
  return out;
}

/** A certificate and key for 127.0.0.1 (self-signed, 2 days), made once per run with openssl. */
function serverCertificate() {
  const dir = path.join(OUT_DIR, "tls");
  fs.mkdirSync(dir, { recursive: true });
  const files = { cert: path.join(dir, "cert.pem"), key: path.join(dir, "key.pem") };
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  execFileSync(
    "openssl",
    [...args, "-keyout", files.key, "-out", files.cert, "-subj", "/CN=bench", "-days", "2"].concat([
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]),
    { stdio: "pipe" },
  );
  return { ...files, ca: fs.readFileSync(files.cert, "utf8") };
}

/** CPU seconds of a process (user + system; with `children`, also of its waited-for children). */
function cpuOf(pid, children = false) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const s = f.slice(f.lastIndexOf(")") + 2).split(" ");
    const own = Number(s[11]) + Number(s[12]);
    return (own + (children ? Number(s[13]) + Number(s[14]) : 0)) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of a PostgreSQL cluster so far: postmaster (with reaped backends) + live children. */
function clusterCpu(cluster) {
  const [postmaster, ...children] = cluster.pids();
  return cpuOf(postmaster, true) + children.reduce((s, pid) => s + cpuOf(pid), 0);
}

/** One build's `edge-service serve` on its own store; resolves once it listens. */
async function serve(build, store, cluster) {
  const port = await freePort();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "edge-ab-"));
  const storeArgs =
    store === "postgres" ? ["--database", cluster.createDatabase()] : ["--data", path.join(work, "data")];
  const profile = opts.profile
    ? [`--cpu-prof`, `--cpu-prof-dir=${path.join(OUT_DIR, "profiles", build.label)}`]
    : [];
  const errFile = path.join(work, "stderr.log");
  const err = fs.openSync(errFile, "w");
  const child = spawn(
    process.execPath,
    [
      ...profile,
      built.edgeServiceCli(build.dir),
      "serve",
      "--port",
      String(port),
      ...storeArgs,
      ...(build.tls ? ["--tls-cert", build.tls.cert, "--tls-key", build.tls.key] : []),
    ],
    {
      cwd: build.dir,
      env: {
        ...process.env,
        EDGE_API_KEY: API_KEY ?? "",
        EDGE_DATABASE_URL: "",
        EDGE_SECRETS_KEY: SECRETS_KEY ?? "",
      },
      // The request log goes to a file, as a deployment's would (both builds write one line each).
      stdio: ["ignore", "pipe", err],
    },
  );
  fs.closeSync(err);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve();
    });
    void exited.then(({ code, signal }) =>
      reject(
        new Error(`${build.label} serve exited (${code ?? signal}): ${fs.readFileSync(errFile, "utf8")}`),
      ),
    );
  });
  child.stdout.resume();
  return {
    ...build,
    databaseUrl: storeArgs[0] === "--database" ? storeArgs[1] : undefined,
    pid: child.pid,
    url: `${build.tls ? "https" : "http"}://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(work, { recursive: true, force: true });
    },
  };
}

async function analyze(url) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  await db.query("ANALYZE");
  await db.end();
}

/** One keep-alive HTTP(S) client per server: `WORKERS` sockets, requests with the API key. */
function client(url, tls) {
  const agent = tls
    ? new https.Agent({ keepAlive: true, maxSockets: WORKERS, ca: tls.ca })
    : new http.Agent({ keepAlive: true, maxSockets: WORKERS });
  const { request: send } = tls ? https : http;
  const { hostname, port } = new URL(url);
  const counts = { requests: 0 };
  const request = (method, p, body, headers = {}) =>
    new Promise((resolve, reject) => {
      counts.requests++;
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = send(
        {
          agent,
          hostname,
          port,
          method,
          path: p,
          headers: {
            ...(API_KEY ? { authorization: `Bearer ${API_KEY}` } : {}),
            ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            if (res.statusCode >= 300)
              reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
            else resolve(text ? JSON.parse(text) : undefined);
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  return { request, counts, close: () => agent.destroy() };
}

/** What one server keeps between phases: its edge, the routes it made, counters for unique bodies. */
function target(server) {
  return { server, http: client(server.url, server.tls), edgeId: undefined, routes: [], made: 0, patched: 0 };
}

const createRoute = async (t, tag) => {
  const i = t.made++;
  const body = routeBody(i, `ab-${tag}`);
  const route = await t.http.request("POST", `/edges/https/${t.edgeId}/routes`, body, {
    "idempotency-key": `ab-${t.server.label}-${tag}-${i}`,
  });
  t.routes.push(route.id);
  return route.id;
};
const patchRoute = (t, id) => {
  const k = t.patched++;
  return t.http.request("PATCH", `/edges/https/${t.edgeId}/routes/${id}`, {
    description: `patched ${k}`,
    circuit_breaker: { num_buckets: 1 + (k % 128), error_threshold_percentage: 0.5, volume_threshold: 20 },
  });
};

/** `n` route creates, `WORKERS` at a time. */
async function seed(t, n, tag) {
  let left = n;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (left-- > 0) await createRoute(t, `${tag}-seed`);
    }),
  );
}

/**
 * `WORKERS` loops for `seconds`: each iteration one `step` (which times its own requests by verb).
 * Resolves to the latencies (ms) by verb.
 */
async function drive(t, phase, seconds, tag) {
  const lat = { POST: [], GET: [], PATCH: [] };
  const timedReq = async (verb, fn) => {
    const t0 = performance.now();
    const v = await fn();
    lat[verb].push(performance.now() - t0);
    return v;
  };
  let next = 0; // the patch phase takes the routes in turn
  const pool = t.routes.slice();
  const step = {
    post: () => timedReq("POST", () => createRoute(t, tag)),
    patch: () => timedReq("PATCH", () => patchRoute(t, pool[next++ % pool.length])),
    mixed: async () => {
      const id = await timedReq("POST", () => createRoute(t, tag));
      await timedReq("GET", () => t.http.request("GET", `/edges/https/${t.edgeId}/routes/${id}`));
      await timedReq("PATCH", () => patchRoute(t, id));
    },
  }[phase];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < end) await step();
    }),
  );
  return lat;
}

/** One measured phase of one server: requests by verb, CPU per request, load. */
async function measure(t, phase, seconds, tag, cluster) {
  // PATCH alone (`--phases patch`): routes to change are made first, not measured.
  const pool = Math.max(PREFILL, 1);
  if (phase === "patch" && t.routes.length < pool) await seed(t, pool - t.routes.length, tag);
  const load0 = os.loadavg()[0];
  const cpu0 = { server: cpuOf(t.server.pid), db: cluster ? clusterCpu(cluster) : 0 };
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  const lat = await drive(t, phase, seconds, tag);
  const wall = (performance.now() - t0) / 1000;
  const cpu = { server: cpuOf(t.server.pid) - cpu0.server, db: cluster ? clusterCpu(cluster) - cpu0.db : 0 };
  const client = process.cpuUsage(client0);
  const requests = lat.POST.length + lat.GET.length + lat.PATCH.length;
  const per = (s) => round((s * 1e6) / requests, 0);
  const verbs = {};
  for (const [verb, l] of Object.entries(lat)) {
    if (l.length === 0) continue;
    verbs[verb] = {
      requests: l.length,
      perSecond: round(l.length / wall, 0),
      p50Ms: round(percentile(l, 50), 2),
      p99Ms: round(percentile(l, 99), 2),
    };
  }
  return {
    requests,
    perSecond: round(requests / wall, 0),
    verbs,
    cpuMicrosPerRequest: { server: per(cpu.server), db: per(cpu.db), total: per(cpu.server + cpu.db) },
    // The load generator's own (this process): on a shared machine, what it spends the server lacks.
    clientCpuMicrosPerRequest: round((client.user + client.system) / requests, 0),
    load: [round(load0, 2), round(os.loadavg()[0], 2)],
  };
}

async function runStore(store, list) {
  log(`${store}: starting ${list.map((b) => b.label).join(", ")}`);
  const cluster = store === "postgres" ? await startCluster() : undefined;
  const servers = [];
  try {
    for (const b of list) servers.push(await serve(b, store, cluster));
    const targets = servers.map(target);
    for (const t of targets) {
      const edge = await t.http.request("POST", "/edges/https", {
        description: "write-path-ab",
        hostports: [`ab-${t.server.label.replace(/[^a-z0-9-]/gi, "-")}.example.com:443`],
      });
      t.edgeId = edge.id;
      // Warm-up (JIT, the pool's connections, prepared statements, some routes); not measured.
      await seed(t, PREFILL, "warm");
      await drive(t, "mixed", WARMUP, "warm");
    }
    // Statistics for the planner, as a database in service has them: without, a statement
    // prepared on a near-empty table may keep a plan made for one (a scan) until autovacuum's
    // ANALYZE, in whichever build's phase that falls.
    if (cluster) for (const s of servers) await analyze(s.databaseUrl);
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      const round_ = {};
      for (const phase of PHASES) {
        round_[phase] = {};
        for (const t of order) {
          round_[phase][t.server.label] = await measure(t, phase, SECONDS, `r${r}`, cluster);
          const m = round_[phase][t.server.label];
          log(
            `${store} round ${r + 1} ${phase} ${t.server.label}: ${m.requests} requests, ${m.perSecond}/s, ` +
              `CPU ${m.cpuMicrosPerRequest.total} µs/request (server ${m.cpuMicrosPerRequest.server}, db ${m.cpuMicrosPerRequest.db}), load ${m.load.join(" → ")}`,
          );
        }
      }
      rounds.push(round_);
    }
    for (const t of targets) t.http.close();
    // Every request each server answered, warm-up included (what a --profile covers).
    return {
      rounds,
      served: Object.fromEntries(targets.map((t) => [t.server.label, t.http.counts.requests])),
    };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    cluster?.destroy();
  }
}

/** Medians over rounds, and each build against the first (the release): per phase and verb. */
function summarize(rounds, labels) {
  const base = labels[0];
  const out = {};
  for (const phase of PHASES) {
    out[phase] = {};
    for (const label of labels) {
      const ms = rounds.map((r) => r[phase][label]);
      const verbs = {};
      for (const verb of ["POST", "GET", "PATCH"]) {
        const have = ms.filter((m) => m.verbs[verb]);
        if (have.length === 0) continue;
        verbs[verb] = {
          perSecond: median(have.map((m) => m.verbs[verb].perSecond)),
          requestsSum: have.reduce((s, m) => s + m.verbs[verb].requests, 0),
          p99Ms: median(have.map((m) => m.verbs[verb].p99Ms)),
        };
      }
      out[phase][label] = {
        perSecond: median(ms.map((m) => m.perSecond)),
        requestsSum: ms.reduce((s, m) => s + m.requests, 0),
        clientCpuMicrosPerRequest: median(ms.map((m) => m.clientCpuMicrosPerRequest)),
        cpuMicrosPerRequest: {
          server: median(ms.map((m) => m.cpuMicrosPerRequest.server)),
          db: median(ms.map((m) => m.cpuMicrosPerRequest.db)),
          total: median(ms.map((m) => m.cpuMicrosPerRequest.total)),
        },
        // Paired by round: this build's figure over the release's in the same round.
        vsRelease:
          label === base
            ? undefined
            : {
                perSecond: round(
                  median(rounds.map((r) => r[phase][label].perSecond / r[phase][base].perSecond)),
                  3,
                ),
                cpuPerRequest: round(
                  median(
                    rounds.map(
                      (r) =>
                        r[phase][label].cpuMicrosPerRequest.total / r[phase][base].cpuMicrosPerRequest.total,
                    ),
                  ),
                  3,
                ),
              },
        verbs,
      };
    }
  }
  return out;
}

function table(store, summary, labels) {
  const lines = [
    `${store}: medians of ${ROUNDS} rounds × ${SECONDS} s, ${WORKERS} workers (vs ${labels[0]}: the median of the rounds' ratios)`,
    `| phase | build | req/s | CPU µs/req (server + db) | client CPU µs/req | req/s vs ${labels[0]} | CPU/req vs ${labels[0]} |`,
    "|---|---|---|---|---|---|---|",
  ];
  for (const phase of PHASES) {
    for (const label of labels) {
      const s = summary[phase][label];
      const c = s.cpuMicrosPerRequest;
      const verbs =
        phase === "mixed"
          ? ` (${Object.entries(s.verbs)
              .map(([v, x]) => `${v} ${x.perSecond}`)
              .join(", ")})`
          : "";
      lines.push(
        `| ${phase} | ${label} | ${s.perSecond}${verbs} | ${c.total} (${c.server} + ${c.db}) | ${s.clientCpuMicrosPerRequest} | ` +
          `${s.vsRelease ? `${s.vsRelease.perSecond}×` : ""} | ${s.vsRelease ? `${s.vsRelease.cpuPerRequest}×` : ""} |`,
      );
    }
  }
  return lines.join("\n");
}

const startedAt = new Date().toISOString();
const loadAtStart = os.loadavg();
const list = builds();
const labels = list.map((b) => b.label);
log(
  `load average ${loadAtStart.map((x) => x.toFixed(2)).join(" ")}; builds ${labels.join(", ")}; stores ${STORES.join(", ")}`,
);
fs.mkdirSync(OUT_DIR, { recursive: true });
const results = {
  startedAt,
  config: {
    rounds: ROUNDS,
    seconds: SECONDS,
    workers: WORKERS,
    phases: PHASES,
    sealed: opts.sealed,
    apiKey: !!API_KEY,
  },
  builds: list.map((b) => ({ label: b.label, dir: b.dir })),
  machine: { cpus: os.availableParallelism(), node: process.version, loadAtStart },
  stores: {},
};
for (const store of STORES) {
  const { rounds, served } = await runStore(store, list);
  results.stores[store] = { rounds, served, summary: summarize(rounds, labels) };
  console.log(`\n${table(store, results.stores[store].summary, labels)}\n`);
}
results.machine.loadAtEnd = os.loadavg();
results.finishedAt = new Date().toISOString();
const out = opts.out ?? path.join(benchTmp(ROOT), "write-path-ab.json");
fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
log(
  `load average at end ${results.machine.loadAtEnd.map((x) => x.toFixed(2)).join(" ")}; results in ${path.relative(ROOT, out)}`,
);
process.exit(0);
