// What reading stored modules through the contract costs on the GET path (issue 27, item 1;
// BENCHMARKS.md "Old rows read through the contract"). Side by side, in one process, on the
// bench's route (shapes.mjs routeBody): the route row decoded as before (the modules column
// JSON.parse'd and taken as it is) and as now (rows.ts: each module parsed by the contract's
// request schema), then a whole service GET (SQLite, no HTTP, no GET cache) for scale.
//
//   npm run build && node bench/read-modules.mjs
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { needBuild } from "./lib/needs.mjs";
import { routeBody } from "./lib/shapes.mjs";
import { log, perCallMicros, round } from "./lib/stats.mjs";

const require = createRequire(import.meta.url);
needBuild(path.join(import.meta.dirname, ".."));
const { routeRow } = require("../dist/service/store/rows.js");
const { Secrets } = require("../dist/service/secrets.js");
const { SqliteStore } = require("../dist/service/store/store-sqlite.js");
const { EdgeService } = require("../dist/service/service.js");
const Database = require("libsql");

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-read-modules-"));
const store = SqliteStore.open(dir);
try {
  const service = new EdgeService(store);
  const ctx = { baseUrl: "http://edge-service.bench" };
  const edge = await service.createEdge("https", { description: "bench" }, ctx);
  const route = await service.createRoute(edge.id, routeBody(0), ctx);
  const secrets = new Secrets();
  const db = new Database(path.join(dir, "edge.db"));
  const raw = db.prepare("SELECT * FROM routes WHERE id = ?").get(route.id);
  db.close();
  // Before: what openModules did with a row holding nothing sealed.
  const before = () => ({ ...raw, modules: JSON.parse(raw.modules) });
  const now = () => routeRow(raw, secrets);
  const rounds = 5;
  const out = { before: [], now: [], serviceGet: [] };
  for (let r = 0; r < rounds; r++) {
    // Alternating, so drift of the machine's load falls on both alike.
    out.before.push((await perCallMicros(before, { batches: 10, size: 2000, warmup: 2000 })).median);
    out.now.push((await perCallMicros(now, { batches: 10, size: 2000, warmup: 2000 })).median);
    out.serviceGet.push((await perCallMicros(() => service.getRoute(edge.id, route.id, ctx))).median);
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const result = {
    modulesBytes: raw.modules.length,
    rowBeforeMicros: round(med(out.before), 2),
    rowNowMicros: round(med(out.now), 2),
    addedMicros: round(med(out.now) - med(out.before), 2),
    serviceGetMicros: round(med(out.serviceGet), 1),
    runs: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.map((x) => round(x, 2))])),
  };
  log(JSON.stringify(result));
} finally {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
