/**
 * GET answers are reused while the data is unchanged (ResponseCache + Store.changeCounter). What
 * must hold: a commit by anyone (this connection, another connection, another process sharing the
 * data directory) is seen by the very next GET, errors are never kept, and memory is bounded.
 */
import { execFileSync } from "node:child_process";
import { createEdgeApp } from "../../sdk/service/app";
import { ResponseCache } from "../../sdk/service/response-cache";
import { Store } from "../../sdk/service/store";
import { CLI, ensureBuilt } from "../support/edge-service";
import { makeTempDir, removeDir } from "./helpers";

describe("ResponseCache", () => {
  it("renders once while the counter stands still, again as soon as it moves", () => {
    let counter = 1;
    let renders = 0;
    const cache = new ResponseCache(() => counter, 1_000);
    const render = () => ({ n: ++renders });
    expect(String(cache.json("/a", render))).toBe('{"n":1}');
    expect(String(cache.json("/a", render))).toBe('{"n":1}');
    counter++;
    expect(String(cache.json("/a", render))).toBe('{"n":2}');
    expect(renders).toBe(2);
  });

  it("keeps nothing when rendering throws", () => {
    const cache = new ResponseCache(() => 0, 1_000);
    expect(() =>
      cache.json("/a", () => {
        throw new Error("not found");
      }),
    ).toThrow("not found");
    // Nothing was kept for "/a": the next GET renders.
    expect(String(cache.json("/a", () => ({ ok: true })))).toBe('{"ok":true}');
  });

  it("stays within its bound, dropping the oldest entries first", () => {
    const cache = new ResponseCache(() => 0, 50); // each entry: 2 (key) + 12 (body) bytes
    let renders = 0;
    const render = () => ({ v: `${++renders}`.padStart(4, "0") }); // {"v":"0001"}
    for (const key of ["/1", "/2", "/3", "/4"]) cache.json(key, render);
    expect(renders).toBe(4);
    cache.json("/4", render); // kept
    cache.json("/3", render); // kept
    expect(renders).toBe(4);
    cache.json("/1", render); // dropped (the oldest): rendered again, and "/2" makes room for it
    expect(renders).toBe(5);
    cache.json("/2", render);
    expect(renders).toBe(6);
    let bigRenders = 0;
    const big = () => ({ v: "x".repeat(100), n: ++bigRenders });
    expect(String(cache.json("/big", big))).toContain("xxx"); // larger than the bound: served, not kept
    cache.json("/big", big);
    expect(bigRenders).toBe(2);
  });

  it("with a bound of 0 renders every time", () => {
    let renders = 0;
    const cache = new ResponseCache(() => 0, 0);
    cache.json("/a", () => ++renders);
    cache.json("/a", () => ++renders);
    expect(renders).toBe(2);
  });
});

describe("Store.changeCounter", () => {
  let dir: string;
  let a: Store;
  let b: Store;
  beforeEach(() => {
    dir = makeTempDir("counter");
    a = Store.open(dir);
    b = Store.open(dir);
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

  it("stands still while nothing is committed", () => {
    const before = a.changeCounter();
    a.read(() => a.listEdges("https", 10));
    expect(a.changeCounter()).toBe(before);
  });

  it("moves on a commit of its own connection", () => {
    const before = a.changeCounter();
    a.write(() => a.insertEdge(edge("edghts_own")));
    expect(a.changeCounter()).not.toBe(before);
  });

  it("moves on a commit of another connection", () => {
    const before = a.changeCounter();
    b.write(() => b.insertEdge(edge("edghts_other")));
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

  it("works for an in-memory database (no WAL index to read)", () => {
    const mem = Store.open(":memory:");
    const before = mem.changeCounter();
    expect(mem.changeCounter()).toBe(before);
    mem.write(() => mem.insertEdge(edge("edghts_mem")));
    expect(mem.changeCounter()).not.toBe(before);
    mem.close();
  });
});

describe("cached GET answers through the app", () => {
  let dir: string;
  let stores: Store[];
  beforeEach(() => {
    dir = makeTempDir("cached-get");
    stores = [];
  });
  afterEach(() => {
    for (const s of stores) s.close();
    removeDir(dir);
  });

  /** An app on its own connection to the shared data directory, as a server or a provider has. */
  const app = (responseCacheBytes?: number) => {
    const store = Store.open(dir);
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
    const server = app();
    const provider = app();
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
    const cached = app();
    const fresh = app(0);
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
    const call = app();
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
