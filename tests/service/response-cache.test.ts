/**
 * GET answers are reused while the data is unchanged (ResponseCache + Store.changeCounter). What
 * must hold: a commit by anyone (this connection, another connection, another process sharing the
 * data directory) is seen by the very next GET, errors are never kept, and memory is bounded.
 */
import { execFileSync } from "node:child_process";
import { createEdgeApp } from "../../service/http/app";
import { ResponseCache } from "../../service/http/response-cache";
import type { Store } from "../../service/store/store";
import { PostgresStore } from "../../service/store/store-postgres";
import { SqliteStore } from "../../service/store/store-sqlite";
import { sharedCluster } from "../support/postgres";
import { CLI, ensureBuilt } from "../support/edge-service";
import { makeTempDir, removeDir } from "./helpers";

describe("ResponseCache", () => {
  it("renders once while the counter stands still, again as soon as it moves", async () => {
    let counter = 1;
    let renders = 0;
    const cache = new ResponseCache(() => counter, 1_000);
    const render = async () => ({ n: ++renders });
    expect(String(await cache.json("/a", render))).toBe('{"n":1}');
    expect(String(await cache.json("/a", render))).toBe('{"n":1}');
    counter++;
    expect(String(await cache.json("/a", render))).toBe('{"n":2}');
    expect(renders).toBe(2);
  });

  it("takes an asynchronous counter (PostgreSQL's) alike", async () => {
    let counter = "1:1:";
    let renders = 0;
    const cache = new ResponseCache(async () => counter, 1_000);
    const render = async () => ({ n: ++renders });
    await cache.json("/a", render);
    await cache.json("/a", render);
    counter = "1:2:";
    expect(String(await cache.json("/a", render))).toBe('{"n":2}');
    expect(renders).toBe(2);
  });

  it("does not keep a body under a counter that moved while it was rendered", async () => {
    let counter = 1;
    let renders = 0;
    const cache = new ResponseCache(() => counter, 1_000);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // A slow render of the data as of counter 1...
    const slow = cache.json("/a", async () => {
      await gate;
      return { n: ++renders, old: true };
    });
    // ...meanwhile a write (counter 2) and another GET, which renders the new data.
    await Promise.resolve();
    counter = 2;
    expect(String(await cache.json("/b", async () => ({ b: ++renders })))).toBe('{"b":1}');
    release();
    expect(String(await slow)).toBe('{"n":2,"old":true}');
    // The old body was not kept under counter 2: "/a" renders afresh.
    expect(String(await cache.json("/a", async () => ({ n: ++renders })))).toBe('{"n":3}');
  });

  it("keeps nothing when rendering throws", async () => {
    const cache = new ResponseCache(() => 0, 1_000);
    await expect(
      cache.json("/a", async () => {
        throw new Error("not found");
      }),
    ).rejects.toThrow("not found");
    // Nothing was kept for "/a": the next GET renders.
    expect(String(await cache.json("/a", async () => ({ ok: true })))).toBe('{"ok":true}');
  });

  it("stays within its bound, dropping the oldest entries first", async () => {
    const cache = new ResponseCache(() => 0, 50); // each entry: 2 (key) + 12 (body) bytes
    let renders = 0;
    const render = async () => ({ v: `${++renders}`.padStart(4, "0") }); // {"v":"0001"}
    for (const key of ["/1", "/2", "/3", "/4"]) await cache.json(key, render);
    expect(renders).toBe(4);
    await cache.json("/4", render); // kept
    await cache.json("/3", render); // kept
    expect(renders).toBe(4);
    await cache.json("/1", render); // dropped (the oldest): rendered again, and "/2" makes room for it
    expect(renders).toBe(5);
    await cache.json("/2", render);
    expect(renders).toBe(6);
    let bigRenders = 0;
    const big = async () => ({ v: "x".repeat(100), n: ++bigRenders });
    expect(String(await cache.json("/big", big))).toContain("xxx"); // larger than the bound: served, not kept
    await cache.json("/big", big);
    expect(bigRenders).toBe(2);
  });

  it("with a bound of 0 renders every time", async () => {
    let renders = 0;
    const cache = new ResponseCache(() => 0, 0);
    await cache.json("/a", async () => ++renders);
    await cache.json("/a", async () => ++renders);
    expect(renders).toBe(2);
  });
});

describe("Store.changeCounter", () => {
  let dir: string;
  let a: SqliteStore;
  let b: SqliteStore;
  beforeEach(() => {
    dir = makeTempDir("counter");
    a = SqliteStore.open(dir);
    b = SqliteStore.open(dir);
  });
  afterEach(() => {
    a.close();
    b.close();
    removeDir(dir);
  });

  const edge = (id: string) => ({
    id,
    kind: "https" as const,
    description: "",
    metadata: "",
    hostports: [],
    created_at: new Date().toISOString(),
  });

  it("stands still while nothing is committed", async () => {
    const before = a.changeCounter();
    await a.read((tx) => tx.listEdges("https", 10));
    expect(a.changeCounter()).toBe(before);
  });

  it("moves on a commit of its own connection", async () => {
    const before = a.changeCounter();
    await a.write((tx) => tx.insertEdge(edge("edghts_own")));
    expect(a.changeCounter()).not.toBe(before);
  });

  it("moves on a commit of another connection", async () => {
    const before = a.changeCounter();
    await b.write((tx) => tx.insertEdge(edge("edghts_other")));
    expect(a.changeCounter()).not.toBe(before);
  });

  it("moves on a commit of another process sharing the data directory", () => {
    ensureBuilt();
    const before = a.changeCounter();
    execFileSync(process.execPath, [
      CLI,
      "request",
      "POST",
      "/edges/https",
      "--body",
      '{"description":"from another process"}',
      "--data",
      dir,
    ]);
    expect(a.changeCounter()).not.toBe(before);
  });

  it("works for an in-memory database (no WAL index to read)", async () => {
    const mem = SqliteStore.open(":memory:");
    const before = mem.changeCounter();
    expect(mem.changeCounter()).toBe(before);
    await mem.write((tx) => tx.insertEdge(edge("edghts_mem")));
    expect(mem.changeCounter()).not.toBe(before);
    mem.close();
  });
});

describe("PostgresStore.changeCounter", () => {
  // A failover's new primary is another server, whose snapshot may read as the old one's did
  // (transaction ids the old primary gave out but never replicated are given out again), with
  // other rows: a GET cached on the old primary must not be answered from the new one. A restart
  // is the same case on one machine: the snapshot reads the same, the server is another.
  it("moves when the server changes, even with no write and the same snapshot", async () => {
    const cluster = await sharedCluster();
    // One connection: the audit index's snapshot query and the counter's run on the same one.
    const store = await PostgresStore.open(await cluster.createDatabase(), {
      auditIndexEveryMs: 0,
      poolSize: 1,
    });
    try {
      const before = await store.changeCounter();
      await store.indexAuditEvents(100);
      expect(await store.changeCounter()).toBe(before);
      await cluster.restartAsync({ downMs: 100 });
      // The pool's connections died with the old server: the first reads may fail, then reconnect.
      let after: string | number | undefined;
      for (let attempt = 1; after === undefined; attempt++) {
        after = await Promise.resolve(store.changeCounter()).catch((e: unknown) => {
          if (attempt >= 50) throw e;
          return undefined;
        });
      }
      const snapshot = (counter: string | number) => String(counter).split(" ").at(-1);
      expect(snapshot(after)).toBe(snapshot(before));
      expect(after).not.toBe(before);
    } finally {
      await store.close();
    }
  });
});

/**
 * Two connections to one database: on SQLite two connections to one data directory (a server and
 * a provider), on PostgreSQL two stores on one database (two replicas).
 */
const STORES: Array<[string, () => Promise<() => Promise<Store>>]> = [
  [
    "SQLite",
    async () => {
      const dir = makeTempDir("cached-get");
      dirs.push(dir);
      return async () => SqliteStore.open(dir);
    },
  ],
  [
    "PostgreSQL (two replicas)",
    async () => {
      const url = await (await sharedCluster()).createDatabase();
      return () => PostgresStore.open(url);
    },
  ],
];
const dirs: string[] = [];

describe.each(STORES)("cached GET answers through the app, %s", (_name, database) => {
  let stores: Store[];
  let open: () => Promise<Store>;
  beforeEach(async () => {
    stores = [];
    open = await database();
  });
  afterEach(async () => {
    for (const s of stores) await s.close();
    for (const d of dirs.splice(0)) removeDir(d);
  });

  /** An app on its own connection to the shared data directory, as a server or a provider has. */
  const app = async (responseCacheBytes?: number) => {
    const store = await open();
    stores.push(store);
    const edgeApp = createEdgeApp({ store, responseCacheBytes });
    return async (method: string, path: string, body?: unknown) => {
      const res = await edgeApp.fetch(
        new Request(`http://edge.test${path}`, {
          method,
          headers: body === undefined ? {} : { "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
      const text = await res.text();
      return { status: res.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown>, res };
    };
  };

  it("a write through another connection shows in the next GET of a cached route", async () => {
    const server = await app();
    const provider = await app();
    const edge = await server("POST", "/edges/https", { description: "e" });
    const edgeId = edge.json.id as string;
    const route = await server("POST", `/edges/https/${edgeId}/routes`, {
      match_type: "path_prefix",
      match: "/a",
      circuit_breaker: { error_threshold_percentage: 0.5, num_buckets: 10 },
    });
    const path = `/edges/https/${edgeId}/routes/${route.json.id as string}`;
    const first = await server("GET", path);
    expect((await server("GET", path)).json).toEqual(first.json); // now from the cache

    await provider("PATCH", path, { circuit_breaker: { error_threshold_percentage: 0.5, num_buckets: 20 } });
    const after = await server("GET", path);
    expect((after.json.circuit_breaker as { num_buckets: number }).num_buckets).toBe(20);

    await provider("DELETE", path);
    expect((await server("GET", path)).status).toBe(404);
  });

  it("answers exactly what a fresh rendering answers, operation ids apart", async () => {
    const cached = await app();
    const fresh = await app(0);
    const edge = await cached("POST", "/edges/https", { description: "e" });
    const edgeId = edge.json.id as string;
    const paths = [`/edges/https/${edgeId}`, `/edges/https/${edgeId}/routes`, "/edges/https?limit=1"];
    for (let i = 0; i < 3; i++) {
      await cached("POST", `/edges/https/${edgeId}/routes`, { match_type: "path_prefix", match: `/${i}` });
      for (const path of paths) {
        const [x, y] = [await cached("GET", path), await fresh("GET", path)];
        expect(x.status).toBe(200);
        expect(x.json).toEqual(y.json);
        expect(x.res.headers.get("content-type")).toBe("application/json");
        expect(x.res.headers.get("request-id")).toMatch(/^op_/);
        expect(x.res.headers.get("request-id")).not.toBe(y.res.headers.get("request-id"));
      }
    }
  });

  it("the Ref origin is part of the key: another host gets its own links", async () => {
    const call = await app();
    const edge = await call("POST", "/edges/https", { description: "e" });
    const path = `/edges/https/${edge.json.id as string}`;
    const store = stores[0]!;
    const direct = createEdgeApp({ store });
    const viaA = await (await direct.fetch(new Request(`http://a.test${path}`))).json();
    const viaB = await (await direct.fetch(new Request(`http://b.test${path}`))).json();
    expect(viaA.uri).toBe(`http://a.test${path}`);
    expect(viaB.uri).toBe(`http://b.test${path}`);
  });
});
