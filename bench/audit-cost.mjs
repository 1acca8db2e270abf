// What the audit event costs a write (issue 28, BENCHMARKS.md "Audit trail"): CPU per route POST
// and per route PATCH through the app in-process (`app.fetch`, no socket), with the event and
// without it, interleaved over rounds, medians.
//
//   node bench/audit-cost.mjs [--n 1500] [--rounds 5] [--store sqlite|postgres|both] [--json FILE]
//
//   [--block 100] [--old OTHER_CHECKOUT/dist] [--via app|http]
//
// "without": the same build and the same requests, only the event's insert skipped: the store's
// `insertAuditEvent` is replaced for that variant by one that writes nothing (the diff, the
// record and everything else of the change still run). `--old DIR`: another build (dist/ of
// another checkout) measured the same way beside this one ("old", "old-without"). Each round gives
// each variant a fresh database (a new SQLite data directory in WAL mode, SQLite's own
// checkpoints; a new PostgreSQL database) and one edge; then N route POSTs, then N PATCHes of
// those routes (a new description each), in blocks of `--block` writes, the variants' blocks in
// turn. CPU is this process's user + system time (`process.cpuUsage()`; on PostgreSQL the
// server's processes too, from /proc). Run it after `npm run build`.
//
// `--via http`: the same writes over HTTP (keep-alive) to two `startServer` processes
// (bench/lib/server-child.mjs, keyless), one writing events and one not; CPU is each server
// process's own (every thread: the checkpoint worker, the index's background rounds), read over
// IPC around each block, so the load generator is not counted. This is what a deployed
// `edge-service serve` pays per write. `--old DIR`: the other build's servers run beside.
// `NOINDEX=1` (in-process only): the index by object left uncaught-up, to see the row's own cost. On
// PostgreSQL each variant has a cluster of its own, whose processes' CPU is counted with its server's.
/* global Request, fetch */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { routeBody } from "./lib/shapes.mjs";
import { median, round } from "./lib/stats.mjs";

const require = createRequire(import.meta.url);

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const N = Number(arg("n", 1500));
const BLOCK = Number(arg("block", 100));
const ROUNDS = Number(arg("rounds", 5));
const STORES = arg("store", "sqlite") === "both" ? ["sqlite", "postgres"] : [arg("store", "sqlite")];
const JSON_OUT = arg("json");
const HEADERS = { "content-type": "application/json" };
const BASE = "http://edge.test";

/** A build of the service (dist/ of a checkout): this one, and `--old DIR` another to compare. */
function build(dist) {
  if (!fs.existsSync(path.join(dist, "service/http/app.js")))
    throw new Error(`${dist} holds no build of the service: run 'npm run build' in its checkout`);
  const sqlite = require(path.join(dist, "service/store/store-sqlite.js"));
  const postgres = require(path.join(dist, "service/store/store-postgres.js"));
  return {
    createEdgeApp: require(path.join(dist, "service/http/app.js")).createEdgeApp,
    SqliteStore: sqlite.SqliteStore,
    PostgresStore: postgres.PostgresStore,
    // The transactions' class: shared by both stores, or each store's own (older builds).
    protos: [
      require(path.join(dist, "service/store/sql-tx.js")).SqlTx.prototype,
      sqlite.SqliteStore.prototype,
      postgres.PgTx?.prototype,
    ].filter((proto) => proto !== undefined && Object.hasOwn(proto, "insertAuditEvent")),
  };
}
const here = build(path.resolve(import.meta.dirname, "../dist"));
const VARIANTS = [
  { name: "with", build: here, skip: false },
  { name: "without", build: here, skip: true },
];
if (arg("old")) {
  const old = build(path.resolve(arg("old")));
  VARIANTS.push({ name: "old", build: old, skip: false }, { name: "old-without", build: old, skip: true });
}
// `--only NAME`: that variant alone (to profile it with `node --cpu-prof`).
if (arg("only")) VARIANTS.splice(0, VARIANTS.length, ...VARIANTS.filter((v) => v.name === arg("only")));
const baseline = (v) => (v.name.startsWith("old") ? "old-without" : "without");

const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Skips the event's insert (the variants "without"), on both stores' transactions. */
function skipAuditInsert(b, skip) {
  for (const proto of b.protos) {
    if (!proto.__insertAuditEvent) proto.__insertAuditEvent = proto.insertAuditEvent;
    proto.insertAuditEvent = skip ? async () => undefined : proto.__insertAuditEvent;
  }
}

async function call(app, method, url, body, base = BASE) {
  const res = await app.fetch(
    new Request(base + url, { method, headers: HEADERS, body: body && JSON.stringify(body) }),
  );
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

let cpuSeconds;

async function openStore(b, kind, cluster) {
  if (kind === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "edge-audit-cost-"));
    const store = b.SqliteStore.open(dir, { auditIndexEveryMs: 0 });
    return { store, done: () => fs.rmSync(dir, { recursive: true, force: true }), serverCpu: () => 0 };
  }
  const store = await b.PostgresStore.open(cluster.createDatabase(), { poolSize: 2, auditIndexEveryMs: 0 });
  const serverCpu = () => cluster.pids().reduce((s, pid) => s + cpuSeconds(pid) * 1e6, 0);
  return { store, done: () => undefined, serverCpu };
}

/**
 * The variants' writes (after a warm-up each: the statements prepared, the JIT warm, not counted),
 * in blocks of BLOCK taken in turn, the order alternating, so that the variants share the
 * machine's drift block by block. A variant: `app` and `base` to call, its `routes`, and `cpu()`
 * (µs so far); `before()` runs before its block, `settle()` after its writes, counted.
 */
async function measure(variants) {
  for (const v of variants) {
    v.before?.();
    for (let i = 0; i < 200; i++) {
      const r = await call(v.app, "POST", v.routes, routeBody(i, "warm"), v.base);
      await call(v.app, "PATCH", `${v.routes}/${r.id}`, { description: `w${i}` }, v.base);
    }
    v.ids = [];
  }
  const out = Object.fromEntries(
    variants.map((v) => [v.name, { post: 0, patch: 0, blocks: { post: [], patch: [] } }]),
  );
  for (const op of ["post", "patch"]) {
    for (let b = 0; b * BLOCK < N; b++) {
      const order = b % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        v.before?.();
        const c0 = await v.cpu();
        for (let i = b * BLOCK; i < Math.min(N, (b + 1) * BLOCK); i++) {
          if (op === "post") v.ids.push((await call(v.app, "POST", v.routes, routeBody(i), v.base)).id);
          else await call(v.app, "PATCH", `${v.routes}/${v.ids[i]}`, { description: `d${i}` }, v.base);
        }
        await v.settle?.();
        const used = (await v.cpu()) - c0;
        out[v.name][op] += used / N;
        out[v.name].blocks[op].push(used);
      }
    }
  }
  return out;
}

/**
 * One round: a fresh database per variant, then the variants' writes in blocks of BLOCK, taken in
 * turn (the order alternating), so that the variants share the machine's drift block by block.
 * Returns per variant the µs of CPU per POST and per PATCH, and the per-block ratios to the
 * variant's baseline.
 */
async function runRound(kind, cluster) {
  const open = [];
  try {
    for (const v of VARIANTS) {
      const s = await openStore(v.build, kind, cluster);
      open.push(s);
      skipAuditInsert(v.build, v.skip);
      const app = v.build.createEdgeApp({ store: s.store });
      const edge = await call(app, "POST", "/edges/https", {
        description: "bench",
        hostports: ["bench.example.com:443"],
      });
      Object.assign(v, {
        app,
        routes: `/edges/https/${edge.id}/routes`,
        base: BASE,
        before: () => skipAuditInsert(v.build, v.skip),
        cpu: () => cpuMicros() + s.serverCpu(),
        // The index by object (a build that has one) catches up on the block's events here, so
        // that its cost is counted in the block's, as the background task's would be.
        settle: async () => {
          if (s.store.indexAuditEvents && !process.env.NOINDEX)
            while ((await s.store.indexAuditEvents(2000)) === 2000);
        },
      });
    }
    return await measure(VARIANTS);
  } finally {
    for (const s of open) {
      await s.store.close();
      s.done();
    }
  }
}

/** `--via http` on PostgreSQL: each variant's cluster, kept across rounds. */
const variantClusters = new Map();
let startPgCluster;

/** One round over HTTP: a server process per variant (see `--via http` above). */
async function runRoundHttp(kind) {
  const { spawnServer } = await import("./lib/child.mjs");
  const servers = [];
  const dirs = [];
  try {
    for (const v of VARIANTS) {
      const server = spawnServer(
        [],
        v.name.startsWith("old") ? { EDGE_BENCH_DIST: path.resolve(arg("old")) } : {},
      );
      servers.push(server);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "edge-audit-cost-"));
      dirs.push(dataDir);
      // PostgreSQL: a cluster of its own per variant, so that its processes' CPU is the variant's.
      let own;
      if (kind === "postgres") {
        if (!variantClusters.has(v.name)) variantClusters.set(v.name, await startPgCluster());
        own = variantClusters.get(v.name);
      }
      const databaseUrl = own?.createDatabase();
      const { url, edgeId } = await server.call({
        cmd: "edge",
        dataDir,
        seed: 0,
        databaseUrl,
        noAudit: v.skip,
      });
      const databaseCpu = () => own?.pids().reduce((sum, pid) => sum + cpuSeconds(pid) * 1e6, 0) ?? 0;
      Object.assign(v, {
        app: { fetch: (req) => fetch(req) },
        routes: `/edges/https/${edgeId}/routes`,
        base: url,
        cpu: async () => (await server.call({ cmd: "cpu" })).micros + databaseCpu(),
      });
    }
    return await measure(VARIANTS);
  } finally {
    for (const s of servers) await s.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
}

const results = {};
for (const kind of STORES) {
  let cluster;
  if (kind === "postgres") {
    const pg = await import("./lib/postgres.mjs");
    cpuSeconds = pg.cpuSeconds;
    startPgCluster = pg.startCluster;
    if (arg("via", "app") !== "http") cluster = await pg.startCluster();
  }
  try {
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      const m = arg("via", "app") === "http" ? await runRoundHttp(kind) : await runRound(kind, cluster);
      rounds.push(m);
      console.error(
        `[${kind} round ${r + 1}/${ROUNDS}] ` +
          VARIANTS.filter((v) => m[v.name])
            .map(
              (v) =>
                `${v.name}: POST ${m[v.name].post.toFixed(0)} µs, PATCH ${m[v.name].patch.toFixed(0)} µs`,
            )
            .join("; "),
      );
    }
    const out = {
      via: arg("via", "app"),
      n: N,
      block: BLOCK,
      rounds: ROUNDS,
      load: os.loadavg().map((x) => round(x, 2)),
    };
    for (const op of ["post", "patch"]) {
      out[op] = {};
      for (const v of VARIANTS.filter((x) => rounds[0][x.name])) {
        const base = baseline(v);
        const entry = { micros: round(median(rounds.map((m) => m[v.name][op])), 0) };
        if (base !== v.name && rounds[0][base]) {
          // The cost: the median over rounds of the ratio of CPU per write, and the median of the
          // ratios of the blocks run next to each other (the least exposed to the machine's drift).
          entry.cost = round(median(rounds.map((m) => m[v.name][op] / m[base][op])) - 1, 3);
          entry.costByBlocks = round(
            median(rounds.flatMap((m) => m[v.name].blocks[op].map((x, i) => x / m[base].blocks[op][i]))) - 1,
            3,
          );
        }
        out[op][v.name] = entry;
      }
    }
    results[kind] = out;
    console.log(JSON.stringify({ [kind]: out }));
  } finally {
    cluster?.destroy();
    for (const c of variantClusters.values()) c.destroy();
    variantClusters.clear();
  }
}
if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(results, null, 2) + "\n");
