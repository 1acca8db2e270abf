// How long the first start after the upgrade to SQLite schema 7 takes (the audit table rebuilt on
// its rowid, issue 28), for a trail of N events of a route create's size (~1 KB each):
//   node bench/audit-migration.cjs [N]      (after `npm run build`; default 100,000)
// A schema-6 database is filled in one transaction, checkpointed, then opened by this build.
if (!require("fs").existsSync(require("path").join(__dirname, "../dist/service/store/store-sqlite.js")))
  throw new Error("this tree is not built: run 'npm run build' first");
const Database = require("libsql");
const { MIGRATIONS, SqliteStore } = require("../dist/service/store/store-sqlite.js");
const fs = require("fs"),
  os = require("os"),
  path = require("path");
const N = Number(process.argv[2] || 100000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mig7-"));
const db = new Database(path.join(dir, "edge.db"));
db.pragma("journal_mode = WAL");
db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
for (const m of MIGRATIONS.slice(0, 6)) db.exec(m);
db.exec("INSERT INTO meta VALUES ('schema_version', '6')");
const ins = db.prepare(
  "INSERT INTO audit_events (time, operation, object_kind, object_id, edge_id, key_name, request_id, changes, truncated) VALUES (?, 'create_route', 'route', ?, 'edghts_1', 'k', 'op_1', ?, 0)",
);
const changes = JSON.stringify(
  Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`modules.m${i}.field`, { after: "x".repeat(8) }])),
);
db.exec("BEGIN");
for (let i = 0; i < N; i++)
  ins.run(new Date().toISOString(), "rt_" + i.toString(36).padStart(8, "0"), changes);
db.exec("COMMIT");
db.pragma("wal_checkpoint(TRUNCATE)");
db.close();
const size = fs.statSync(path.join(dir, "edge.db")).size;
const t0 = process.hrtime.bigint(),
  c0 = process.cpuUsage();
const store = SqliteStore.open(dir, { auditIndexEveryMs: 0 });
const ms = Number(process.hrtime.bigint() - t0) / 1e6,
  c = process.cpuUsage(c0);
console.log(
  `${N} events, ${(size / 2 ** 20).toFixed(0)} MiB: opened by this build (schema 6 upgraded) in ${ms.toFixed(0)} ms wall, ${((c.user + c.system) / 1000).toFixed(0)} ms CPU`,
);
store.close();
fs.rmSync(dir, { recursive: true });
