/**
 * The rules of a store transaction, held alike by both stores (service/store/sql-tx.ts and
 * store-sql.ts, written once over each store's driver), and PostgreSQL's refusal of a database
 * whose text is not UTF-8 (service/store/store-steps.ts, encodingProblem).
 *
 * Before, the last-write rule threw on PostgreSQL only (a wrong mark passed every SQLite test);
 * a SQLite transaction's handle was the store itself, usable after its transaction; a write
 * grouped after a rotation sealed under the old key (the group's cached key); and a LATIN1
 * database answered 500 to writes while readiness said 200.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { EdgeService, type RequestContext } from "../../service/service";
import { Secrets, SecretsKey } from "../../service/secrets";
import type { Store, StoreTx } from "../../service/store/store";
import { PG_SCHEMA_VERSION, PostgresStore } from "../../service/store/store-postgres";
import { SqliteStore } from "../../service/store/store-sqlite";
import { CLI, ensureBuilt } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, removeDir, STORE_PLACES, type StorePlace } from "./helpers";

const ctx: RequestContext = { baseUrl: "http://edge.test" };
const key = (fill: number) => SecretsKey.parse(Buffer.alloc(32, fill).toString("base64"), "a test key");
const K1 = key(1);
const K2 = key(2);

describe.each(STORE_PLACES)("%s", (_, makePlace) => {
  let place: StorePlace;
  let store: Store;
  let service: EdgeService;
  let edgeId: string;

  beforeAll(async () => {
    place = await makePlace();
    // Every server holds the new key before a rotation (its ring), and seals under the store's.
    store = await place.open(new Secrets([K1, K2]));
    service = new EdgeService(store);
    edgeId = (await service.createEdge("https", {}, ctx)).id;
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    place?.remove();
  });

  test("a statement after the write marked as its transaction's last is refused", async () => {
    const route = await service.createRoute(edgeId, { match_type: "path_prefix", match: "/last" }, ctx);
    const err = await store
      .write(async (tx) => {
        const row = (await tx.getRoute(edgeId, route.id))!;
        await tx.updateRoute(route.id, { ...row, description: "the last write" }, undefined, { last: true });
        await tx.getEdge("https", edgeId);
      })
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(
      /statement edge_get after route_update, which was marked as its transaction's last write/,
    );
  });

  test("a statement through a transaction's handle once the transaction is over is refused", async () => {
    let kept: StoreTx | undefined;
    await store.read(async (tx) => {
      kept = tx;
    });
    await expect(kept!.getEdge("https", edgeId)).rejects.toThrow(/after its transaction ended/);
    await store.write(async (tx) => {
      kept = tx;
    });
    await expect(kept!.deleteEdge("https", edgeId)).rejects.toThrow(/after its transaction ended/);
    expect((await service.getEdge("https", edgeId, ctx)).id).toBe(edgeId);
  });

  test("a write queued right after a rotation seals under the new key", async () => {
    const body = (secret: string) => ({
      match_type: "path_prefix",
      match: `/sealed-${secret}`,
      webhook_verification: { provider: "github", secret },
    });
    // Queued in one turn of the event loop: on SQLite, one group commit holds all three.
    const [before, , after] = await Promise.all([
      service.createRoute(edgeId, body("before"), ctx),
      store.resealSecrets(K2),
      service.createRoute(edgeId, body("after"), ctx),
    ]);
    await store.close();
    // Only the new key: every secret must be sealed under it.
    store = await place.open(new Secrets([K2]));
    service = new EdgeService(store);
    for (const [route, secret] of [
      [before, "before"],
      [after, "after"],
    ] as const) {
      expect((await service.getRoute(edgeId, route.id, ctx)).webhook_verification?.secret).toBe(secret);
    }
  });
});

describe("PostgreSQL: a database whose text is not UTF-8", () => {
  let admin: pg.Client;
  let cluster: Awaited<ReturnType<typeof sharedCluster>>;
  let databases = 0;

  /** A new database in `encoding`, its URL and name. */
  async function database(encoding: string): Promise<{ url: string; name: string }> {
    const name = `edge_enc_${process.pid}_${++databases}`;
    await admin.query(
      `CREATE DATABASE ${name} ENCODING '${encoding}' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`,
    );
    return { url: cluster.url(name), name };
  }

  const tablesOf = async (url: string): Promise<number> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
      );
      return rows[0].n;
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    cluster = await sharedCluster();
    admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
  }, 120_000);
  afterAll(async () => {
    await admin?.end();
  });

  test.each(["LATIN1", "SQL_ASCII"])(
    "%s is refused at open, left untouched, with what to do",
    async (encoding) => {
      const { url } = await database(encoding);
      const err = await PostgresStore.open(url, { auditIndexEveryMs: 0 }).catch((e: unknown) => e);
      expect(String(err)).toContain(`stores text in the ${encoding} encoding, not UTF-8`);
      expect(String(err)).toContain("createdb --encoding=UTF8 --template=template0");
      expect(await tablesOf(url)).toBe(0);
    },
  );

  test("a UTF8 database whose connections are told to speak SJIS: they speak UTF-8 all the same", async () => {
    const { url, name } = await database("UTF8");
    await admin.query(`ALTER DATABASE ${name} SET client_encoding = 'SJIS'`);
    const store = await PostgresStore.open(`${url}?options=-c%20client_encoding%3DSJIS`, {
      auditIndexEveryMs: 0,
    });
    try {
      const service = new EdgeService(store);
      const edge = (await service.createEdge("https", {}, ctx)).id;
      // In SJIS the second byte of a character may be 0x5c (a backslash) or 0x27 (a quote).
      const text = "ゑ表ソ\\'é";
      const route = await service.createRoute(
        edge,
        { match_type: "path_prefix", match: `/${text}`, request_headers: { add: { "X-T": text } } },
        ctx,
      );
      expect((await service.getRoute(edge, route.id, ctx)).request_headers?.add).toEqual({ "X-T": text });
      // What another program reads, over a connection that asks for UTF-8: the same text.
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      await other.query("SET client_encoding = 'UTF8'");
      const { rows } = await other.query("SELECT modules FROM routes WHERE id = $1", [route.id]);
      await other.end();
      expect(JSON.parse(rows[0].modules).request_headers.add).toEqual({ "X-T": text });
    } finally {
      await store.close();
    }
  });

  test("serve, migrate and keys refuse it, saying the same (exit 1)", async () => {
    ensureBuilt();
    const { url } = await database("LATIN1");
    const dir = makeTempDir("latin1-source");
    try {
      await SqliteStore.open(dir, { auditIndexEveryMs: 0 }).close();
      const runs = [
        ["serve", "--port", "0", "--database", url],
        ["keys", "list", "--database", url],
        ["migrate", "--from", dir, "--to", url],
      ];
      for (const args of runs) {
        const run = await promisify(execFile)(process.execPath, [CLI, ...args], {
          encoding: "utf8",
          env: { ...process.env, EDGE_API_KEY: "", EDGE_DATABASE_URL: "" },
          timeout: 60_000,
        }).then(
          () => ({ code: 0, stderr: "" }),
          (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? "" }),
        );
        expect({ args: args.slice(0, 2), code: run.code }).toEqual({ args: args.slice(0, 2), code: 1 });
        expect(run.stderr).toContain("stores text in the LATIN1 encoding, not UTF-8");
      }
      expect(await tablesOf(url)).toBe(0);
    } finally {
      removeDir(dir);
    }
  }, 180_000);

  test("readiness says so of a database swapped for one in LATIN1 under a running store", async () => {
    const { url, name } = await database("UTF8");
    const store = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 2 });
    try {
      expect(await store.whyNotReady()).toBeUndefined();
      // An operator restores a backup into a database made with the wrong encoding, same name.
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.query(
        `CREATE DATABASE ${name} ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`,
      );
      const restored = new pg.Client({ connectionString: url });
      await restored.connect();
      await restored.query("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      await restored.query("INSERT INTO meta VALUES ('schema_version', $1)", [String(PG_SCHEMA_VERSION)]);
      await restored.end();
      // The pool finds its connections cut: the first probes may say the database is unreachable.
      let why: string | undefined;
      for (let i = 0; i < 20 && !/LATIN1/.test(why ?? ""); i++) why = await store.whyNotReady();
      expect(why).toContain("stores text in the LATIN1 encoding, not UTF-8");
    } finally {
      await store.close();
    }
  });

  test("a UTF8 database is served (the cluster's own template)", async () => {
    const { url } = await database("UTF8");
    const store = await PostgresStore.open(url, { auditIndexEveryMs: 0 });
    try {
      expect(await store.whyNotReady()).toBeUndefined();
      expect(await tablesOf(url)).toBeGreaterThan(5);
    } finally {
      await store.close();
    }
  });
});
