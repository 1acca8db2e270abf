/**
 * Several `edge-service serve` processes (the compiled CLI) on one PostgreSQL database: what a
 * load balancer in front of N replicas relies on. A write through one replica is read through the
 * other at once (each has its GET answer cache), concurrent PATCHes spread over both lose
 * nothing, a replica killed with SIGKILL loses no acknowledged write and the other keeps serving,
 * and a database restart is answered with 503 + Retry-After and recovered from without a restart.
 */
import { type Cli, ensureBuilt, killClis, startCli } from "../support/edge-service";
import { type PgCluster, sharedCluster } from "../support/postgres";
import { COMPATIBLE_MODULES, moduleSample, raw } from "./helpers";
import { EdgeClient } from "../../sdk/client";
import { httpTransport, type Transport } from "../../sdk/transport";

let cluster: PgCluster;

beforeAll(async () => {
  ensureBuilt();
  cluster = await sharedCluster();
});

afterAll(() => {
  killClis();
});

async function replicas(n: number): Promise<{ url: string; clis: Cli[]; t: Transport[] }> {
  const url = await cluster.createDatabase();
  // Started together: the schema migration runs once, under its advisory lock.
  const clis = await Promise.all(
    Array.from({ length: n }, () => startCli(["--port", "0", "--database", url, "--pool-size", "4"])),
  );
  const t = clis.map((c) => httpTransport({ baseUrl: c.url, retries: 0, timeoutMs: 60_000 }));
  return { url, clis, t };
}

/** Every route id of an edge, paged through by the project's own client. */
async function storedRouteIds(t: Transport, edgeId: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for await (const r of new EdgeClient(t).allRoutes(edgeId)) ids.add(r.id);
  return ids;
}

const ROUTE = (match: string) => ({ match_type: "path_prefix", match });

describe("replicas on one PostgreSQL database", () => {
  it("start together (one migration), and a write through one is read through the other at once", async () => {
    const { clis, t } = await replicas(2);
    const [a, b] = t as [Transport, Transport];
    const edge = await raw(a, "POST", "/edges/https", { body: { description: "shared" } });
    expect(edge.status).toBe(201);
    const route = await raw(b, "POST", `/edges/https/${edge.json.id}/routes`, { body: ROUTE("/x") });
    expect(route.status).toBe(201);
    const path = `/edges/https/${edge.json.id}/routes/${route.json.id}`;
    for (let i = 0; i < 20; i++) {
      // Both caches hold the route now...
      expect((await raw(a, "GET", path)).status).toBe(200);
      expect((await raw(b, "GET", path)).status).toBe(200);
      // ...a write through one replica...
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const patched = await raw(writer, "PATCH", path, { body: { description: `round ${i}` } });
      expect(patched.status).toBe(200);
      // ...is what the other answers next.
      expect((await raw(reader, "GET", path)).json.description).toBe(`round ${i}`);
      expect((await raw(reader, "GET", `/edges/https/${edge.json.id}`)).json.routes[0].description).toBe(
        `round ${i}`,
      );
    }
    await raw(a, "DELETE", path);
    expect((await raw(b, "GET", path)).status).toBe(404);
    for (const c of clis) c.child.kill("SIGTERM");
  });

  it("50 concurrent PATCHes of different modules, spread over both, lose nothing", async () => {
    const { clis, t } = await replicas(2);
    const edge = await raw(t[0]!, "POST", "/edges/https", { body: {} });
    const routes: string[] = [];
    for (let r = 0; r < 5; r++) {
      routes.push(
        (await raw(t[1]!, "POST", `/edges/https/${edge.json.id}/routes`, { body: ROUTE(`/${r}`) })).json.id,
      );
    }
    const modules = COMPATIBLE_MODULES.filter((m) => m !== "saml").slice(0, 10);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const route = routes[Math.floor(i / 10)]!;
        const module = modules[i % 10]!;
        return raw(t[i % 2]!, "PATCH", `/edges/https/${edge.json.id}/routes/${route}`, {
          body: { [module]: moduleSample(module, "", route).request },
        });
      }),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    for (const route of routes) {
      for (const reader of t) {
        const got = (await raw(reader, "GET", `/edges/https/${edge.json.id}/routes/${route}`)).json;
        expect(modules.filter((m) => got[m] === null)).toEqual([]);
      }
    }
    for (const c of clis) c.child.kill("SIGTERM");
  });

  it("one Idempotency-Key, the same create sent to both replicas at once: one route, one answer", async () => {
    const { clis, t } = await replicas(2);
    const edge = await raw(t[0]!, "POST", "/edges/https", { body: {} });
    for (let round = 0; round < 10; round++) {
      const send = (target: Transport) =>
        raw(target, "POST", `/edges/https/${edge.json.id}/routes`, {
          body: ROUTE(`/once/${round}`),
          headers: { "Idempotency-Key": `key-${round}` },
        });
      const answers = await Promise.all([send(t[0]!), send(t[1]!), send(t[0]!), send(t[1]!)]);
      expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
      expect(new Set(answers.map((r) => r.json.id)).size).toBe(1);
    }
    const list = await raw(t[1]!, "GET", `/edges/https/${edge.json.id}/routes?limit=100`);
    expect(list.json.routes).toHaveLength(10);
    // The same key with another body, through the other replica: refused.
    const reused = await raw(t[1]!, "POST", `/edges/https/${edge.json.id}/routes`, {
      body: ROUTE("/other"),
      headers: { "Idempotency-Key": "key-0" },
    });
    expect(reused.status).toBe(400);
    for (const c of clis) c.child.kill("SIGTERM");
  });

  it("kill -9 of one replica during a write burst: no acknowledged write lost, the other keeps serving", async () => {
    const { clis, t } = await replicas(2);
    const [a, b] = t as [Transport, Transport];
    const edge = await raw(b, "POST", "/edges/https", { body: {} });
    const acknowledged: string[] = [];
    const failedOnKilled: number[] = [];
    let n = 0;
    const burst = async (target: Transport, which: "a" | "b", until: () => boolean) => {
      while (!until()) {
        const i = n++;
        try {
          const res = await raw(target, "POST", `/edges/https/${edge.json.id}/routes`, {
            body: ROUTE(`/burst/${i}`),
          });
          if (res.status === 201) acknowledged.push(res.json.id);
          else if (which === "b")
            throw new Error(`the surviving replica answered ${res.status}: ${res.text}`);
        } catch (e) {
          if (which === "b") throw e;
          failedOnKilled.push(i); // the killed replica's connections break: never acknowledged
        }
      }
    };
    let killed = false;
    let stop = false;
    const bursts = [
      ...Array.from({ length: 4 }, () => burst(a, "a", () => killed)),
      ...Array.from({ length: 4 }, () => burst(b, "b", () => stop)),
    ];
    while (acknowledged.length < 100) await new Promise((r) => setTimeout(r, 10));
    clis[0]!.child.kill("SIGKILL");
    killed = true;
    const at = acknowledged.length;
    while (acknowledged.length < at + 100) await new Promise((r) => setTimeout(r, 10));
    stop = true;
    await Promise.all(bursts);
    expect(await clis[0]!.exit).toEqual({ code: null, signal: "SIGKILL" });

    // Every acknowledged create is stored, read back through the survivor.
    const stored = await storedRouteIds(b, edge.json.id);
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    clis[1]!.child.kill("SIGTERM");
  });

  it("a PostgreSQL restart during a burst: 503 with Retry-After, nothing acknowledged lost, service resumes", async () => {
    const { clis, t } = await replicas(2);
    const edge = await raw(t[0]!, "POST", "/edges/https", { body: {} });
    const route = await raw(t[0]!, "POST", `/edges/https/${edge.json.id}/routes`, { body: ROUTE("/p") });
    const path = `/edges/https/${edge.json.id}/routes/${route.json.id}`;
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    let unavailableWithoutRetryAfter = 0;
    let n = 0;
    let stop = false;
    const burst = async (target: Transport) => {
      while (!stop) {
        const i = n++;
        const res =
          i % 3 === 2
            ? await raw(target, "GET", path)
            : await raw(target, "POST", `/edges/https/${edge.json.id}/routes`, { body: ROUTE(`/r/${i}`) });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 201) acknowledged.push(res.json.id);
        if (res.status === 503) {
          if (res.headers.get("retry-after") === null) unavailableWithoutRetryAfter++;
          expect(res.json.error_code).toBe("ERR_EDGE_503");
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const bursts = [...t, ...t].map(burst);
    while (acknowledged.length < 50) await new Promise((r) => setTimeout(r, 10));
    await cluster.restartAsync({ downMs: 500 });
    const after = acknowledged.length;
    // Resumes by itself: writes are acknowledged again after the restart.
    while (acknowledged.length < after + 50) await new Promise((r) => setTimeout(r, 10));
    stop = true;
    await Promise.all(bursts);

    expect([...statuses.keys()].filter((s) => ![200, 201, 503].includes(s))).toEqual([]);
    expect(statuses.get(503) ?? 0).toBeGreaterThan(0); // the outage was seen...
    expect(unavailableWithoutRetryAfter).toBe(0); // ...and always said when to retry
    const stored = await storedRouteIds(t[1]!, edge.json.id);
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    for (const c of clis) c.child.kill("SIGTERM");
  });
});
