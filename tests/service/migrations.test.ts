/**
 * Schema migrations of a data directory: what an older pulumi-edge wrote is carried over whole
 * (a migrated route renders exactly like the same route created today), a migration that fails
 * changes nothing, and a directory from a newer version is refused.
 */
import { fingerprint } from "../support/fingerprint";
import { createHash } from "node:crypto";
import * as path from "node:path";
import Database from "libsql";
import type { Route } from "../../sdk/contract";
import { EdgeService } from "../../service/service";
import { MIGRATIONS, SCHEMA_VERSION, SqliteStore } from "../../service/store/store-sqlite";
import { expectedModule, IDP_METADATA, makeTempDir, removeDir } from "./helpers";

const ctx = { baseUrl: "http://edge.test" };

/** Route bodies (wire format) as a user would send them. */
const BODIES = {
  a: {
    match_type: "path_prefix",
    match: "/a",
    description: "with modules",
    backend: { backend_id: "bkd_1" },
    compression: {},
    circuit_breaker: { num_buckets: 12 },
  },
  b: {
    match_type: "exact_path",
    match: "/b",
    saml: { idp_metadata: IDP_METADATA },
    request_headers: { remove: ["X-B"] },
  },
  c: { match_type: "path_prefix", match: "/c", metadata: "no modules" },
} as const;

/**
 * A data directory as schema 2 left it: routes with AUTOINCREMENT seqs (one deleted, so the
 * sequence is ahead of the rows), modules in `route_modules`, a SAML key pair. The module rows
 * hold the canonical configurations of today's service, as the old one stored them.
 */
async function writeSchema2(dir: string, corruptModule = false) {
  const reference = SqliteStore.open(":memory:");
  const service = new EdgeService(reference);
  const edge = await service.createEdge(
    "https",
    { description: "old", hostports: ["old.example.com:443"] },
    ctx,
  );
  const expected = {} as Record<keyof typeof BODIES, Route>;
  for (const [k, body] of Object.entries(BODIES)) {
    expected[k as keyof typeof BODIES] = await service.createRoute(edge.id, body, ctx);
  }
  const stored = new Map<string, Record<string, unknown>>();
  for (const r of Object.values(expected))
    stored.set(r.id, (await reference.read((tx) => tx.getRoute(edge.id, r.id)))!.modules);
  const modulesOf = (r: Route) => stored.get(r.id)!;

  const db = new Database(path.join(dir, "edge.db"));
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  db.exec(MIGRATIONS[0]!);
  db.exec(MIGRATIONS[1]!);
  db.exec("INSERT INTO meta VALUES ('schema_version', '2')");
  db.prepare(
    "INSERT INTO edges (id, kind, description, metadata, hostports, created_at) VALUES (?, 'https', 'old', '', ?, ?)",
  ).run(edge.id, JSON.stringify(edge.hostports), edge.created_at);
  const insertRoute = db.prepare(
    "INSERT INTO routes (id, edge_id, match_type, match, description, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  const insertModule = db.prepare("INSERT INTO route_modules (route_id, name, config) VALUES (?, ?, ?)");
  for (const r of [expected.a, expected.b]) {
    insertRoute.run(r.id, edge.id, r.match_type, r.match, r.description, r.metadata, r.created_at);
    for (const [name, config] of Object.entries(modulesOf(r)))
      insertModule.run(r.id, name, JSON.stringify(config));
  }
  insertRoute.run("rt_deleted", edge.id, "exact_path", "/gone", "", "", expected.b.created_at);
  db.prepare("DELETE FROM routes WHERE id = 'rt_deleted'").run();
  const c = expected.c;
  insertRoute.run(c.id, edge.id, c.match_type, c.match, c.description, c.metadata, c.created_at);
  if (corruptModule) insertModule.run(c.id, "compression", "{not json");
  db.prepare("INSERT INTO route_saml_keys VALUES (?, ?, ?)").run(
    expected.b.id,
    expected.b.saml!.request_signing_certificate_pem,
    "PRIVATE KEY OF B",
  );
  db.close();
  reference.close();
  return { edgeId: edge.id, expected };
}

function raw(dir: string) {
  return new Database(path.join(dir, "edge.db"));
}

/** The first column of every row. */
const column = (db: Database.Database, sql: string) =>
  (db.prepare(sql).raw(true).all() as unknown[][]).map((r) => r[0]);

describe("schema migrations", () => {
  let dir: string;
  let store: SqliteStore | undefined;
  beforeEach(() => {
    dir = makeTempDir("migrations");
  });
  afterEach(() => {
    store?.close();
    store = undefined;
    removeDir(dir);
  });

  test("schema 2 → current: every route, module and SAML key carried over, order kept", async () => {
    const { edgeId, expected } = await writeSchema2(dir);
    store = SqliteStore.open(dir);
    const service = new EdgeService(store);

    const list = await service.listRoutes(edgeId, {}, ctx);
    expect(list.routes).toEqual([expected.c, expected.b, expected.a]); // newest first, rendered alike
    // A new route still sorts first, though schema 2's sequence had moved past a deleted one.
    const d = await service.createRoute(edgeId, { match_type: "exact_path", match: "/d" }, ctx);
    expect((await service.listRoutes(edgeId, { limit: 2 }, ctx)).routes.map((r) => r.id)).toEqual([
      d.id,
      expected.c.id,
    ]);
    // The migrated route behaves like any other: a module replaced, another deleted.
    await service.updateRoute(edgeId, expected.a.id, { compression: { enabled: false } }, ctx);
    await service.deleteModule(edgeId, expected.a.id, "backend");
    const a = await service.getRoute(edgeId, expected.a.id, ctx);
    expect([a.compression, a.backend, a.circuit_breaker]).toEqual([
      expectedModule("compression", { enabled: false }, ctx.baseUrl, a.id),
      null,
      expected.a.circuit_breaker,
    ]);
    store.close();
    store = undefined;

    const db = raw(dir);
    try {
      expect(column(db, "SELECT value FROM meta WHERE key = 'schema_version'")[0]).toBe(
        String(SCHEMA_VERSION),
      );
      expect(column(db, "PRAGMA integrity_check")[0]).toBe("ok");
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'route_modules'").all()).toEqual([]);
      expect(column(db, "SELECT private_key_pem FROM route_saml_keys")).toEqual(["PRIVATE KEY OF B"]);
    } finally {
      db.close();
    }
  });

  test("schema 3 → 4: the keys of creates move onto the objects they made; keys of objects gone are dropped", async () => {
    const db = raw(dir);
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    for (const m of MIGRATIONS.slice(0, 3)) db.exec(m);
    db.exec("INSERT INTO meta VALUES ('schema_version', '3')");
    const at = "2026-01-01T00:00:00.000Z";
    db.prepare(
      "INSERT INTO edges (id, kind, description, metadata, hostports, created_at) VALUES ('edghts_old', 'https', '', '', '[]', ?)",
    ).run(at);
    db.prepare(
      "INSERT INTO routes (id, edge_id, match_type, match, description, metadata, created_at, modules) VALUES ('edghtsrt_old', 'edghts_old', 'exact_path', '/x', '', '', ?, '{}')",
    ).run(at);
    // As schema 3's service remembered them: a digest of "METHOD path body" and the answer.
    const digest = (request: string) => createHash("sha256").update(request).digest("base64");
    const edgeBody = {};
    const routeBody = { match_type: "exact_path", match: "/x" };
    const remember = db.prepare("INSERT INTO idempotency_keys VALUES (?, ?, ?, ?)");
    remember.run(
      "k-edge",
      digest(`POST /edges/https ${JSON.stringify(edgeBody)}`),
      '{"id":"edghts_old"}',
      at,
    );
    remember.run(
      "k-route",
      digest(`POST /edges/https/edghts_old/routes ${JSON.stringify(routeBody)}`),
      '{"id":"edghtsrt_old"}',
      at,
    );
    remember.run("k-gone", "digest", '{"id":"edghts_deleted"}', at);
    db.close();

    store = SqliteStore.open(dir);
    const service = new EdgeService(store);
    const replays: string[] = [];
    const keyed = (key: string) => ({ ...ctx, idempotencyKey: key, onReplay: () => replays.push(key) });
    expect((await service.createEdge("https", edgeBody, keyed("k-edge"))).id).toBe("edghts_old");
    expect((await service.createRoute("edghts_old", routeBody, keyed("k-route"))).id).toBe("edghtsrt_old");
    expect(replays).toEqual(["k-edge", "k-route"]);
    expect((await service.createEdge("https", edgeBody, keyed("k-gone"))).id).not.toBe("edghts_deleted");
    store.close();
    store = undefined;
    const after = raw(dir);
    try {
      expect(after.prepare("SELECT name FROM sqlite_master WHERE name = 'idempotency_keys'").all()).toEqual(
        [],
      );
    } finally {
      after.close();
    }
  });

  test("after a migration, foreign keys are enforced again (an edge's delete cascades)", async () => {
    const { edgeId, expected } = await writeSchema2(dir);
    store = SqliteStore.open(dir);
    const service = new EdgeService(store);
    await expect(
      store.write((tx) =>
        tx.insertRoute({
          ...expected.c,
          id: "rt_orphan",
          edge_id: "edghts_missing",
          match: "/o",
          modules: {},
        }),
      ),
    ).rejects.toThrow(/FOREIGN KEY/);
    await service.deleteEdge("https", edgeId);
    expect(fingerprint(store)).toBe(
      ["edges:[]", "routes:[]", "route_saml_keys:[]", "tls_ip_restrictions:[]", "api_keys:[]"].join("\n"),
    );
  });

  test("a migration that fails changes nothing, and says why", async () => {
    await writeSchema2(dir, true); // a module row that is not JSON
    const before = raw(dir);
    const tables = () => column(before, "SELECT name FROM sqlite_master ORDER BY name");
    const snapshot = {
      tables: tables(),
      routes: before.prepare("SELECT * FROM routes ORDER BY seq").all(),
      modules: before.prepare("SELECT * FROM route_modules ORDER BY route_id, name").all(),
    };
    expect(() => SqliteStore.open(dir)).toThrow(/JSON/);
    expect({
      tables: tables(),
      routes: before.prepare("SELECT * FROM routes ORDER BY seq").all(),
      modules: before.prepare("SELECT * FROM route_modules ORDER BY route_id, name").all(),
    }).toEqual(snapshot);
    expect(column(before, "SELECT value FROM meta WHERE key = 'schema_version'")[0]).toBe("2");
    before.close();
  });

  test("a data directory written by a newer version is refused, untouched", () => {
    store = SqliteStore.open(dir);
    store.close();
    store = undefined;
    const db = raw(dir);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    expect(() => SqliteStore.open(dir)).toThrow(
      `the data directory ${path.resolve(dir)} was written by a newer edge-service (schema ${SCHEMA_VERSION + 1} > ${SCHEMA_VERSION}); upgrade pulumi-edge`,
    );
    expect(column(db, "SELECT value FROM meta WHERE key = 'schema_version'")[0]).toBe(
      String(SCHEMA_VERSION + 1),
    );
    db.close();
  });
});
