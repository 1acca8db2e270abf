/**
 * What an operator runs the service with behind a load balancer: `GET /healthz` and `GET /readyz`
 * (no key, nothing revealed), `GET /metrics` in Prometheus' text format (with the key), and
 * `--log-format json` (one object per request, never a body or a secret). Real servers, the
 * compiled CLI, real databases: readiness is watched through a real PostgreSQL stop and start and
 * a schema that is not the one the service expects, on both stores.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { ERROR_CODES, OPERATION_ID_HEADER } from "../../sdk/contract";
import { createEdgeApp } from "../../service/http/app";
import { type RunningServer, startServer } from "../../service/http/server";
import { PG_SCHEMA_VERSION } from "../../service/store/store-postgres";
import { SCHEMA_VERSION, SqliteStore } from "../../service/store/store-sqlite";
import { type Cli, ensureBuilt, killClis, NO_DRAIN, spawnCli, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { expectErrorBody, makeTempDir, raw, removeDir } from "./helpers";
import { httpTransport, type Transport } from "../../sdk/transport";

const KEY = "op3rator-key.0123456789abcdefghijklmnopqrstuv";
const bearer = { authorization: `Bearer ${KEY}` };

/** One sample of the exposition: its name and labels. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus' text format, line by line; throws on any line that is not a comment or a sample. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /.test(line)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not Prometheus' text format: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g)) {
      labels[k!] = v!;
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of the sample `name` with exactly `labels` (0 when absent: a counter not yet moved). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const want = JSON.stringify(Object.entries(labels).sort());
  const hit = samples.find(
    (s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want,
  );
  return hit?.value ?? 0;
}

/** Asks `GET /readyz` until it answers `status` (bounded: a readiness result is reused for 1 s). */
async function readyzUntil(t: Transport, status: number): Promise<Awaited<ReturnType<typeof raw>>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await raw(t, "GET", "/readyz");
    if (res.status === status || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits (bounded) until `cond` holds of the CLI's stderr. */
async function stderrUntil(cli: Cli, cond: (stderr: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (!cond(cli.stderr()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return cli.stderr();
}

const jsonLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

afterAll(() => {
  killClis();
});

describe("probes and metrics (SQLite, over HTTP, with an API key)", () => {
  let dataDir: string;
  let server: RunningServer;
  let t: Transport;
  const lines: string[] = [];
  beforeAll(async () => {
    dataDir = makeTempDir("operate");
    server = await startServer({ dataDir, port: 0, apiKey: KEY, log: (l) => lines.push(l) });
    t = httpTransport({ baseUrl: server.url, retries: 0 });
  });
  afterAll(async () => {
    await server.close();
    removeDir(dataDir);
  });

  it.each(["/healthz", "/readyz"])(
    "GET %s: 200 without a key (or with a wrong one), and nothing but ok",
    async (p) => {
      for (const headers of [{}, { authorization: "Bearer wrong" }, bearer]) {
        const res = await raw(t, "GET", p, { headers });
        expect(res.status).toBe(200);
        expect(res.text).toBe('{"status":"ok"}');
        expect(res.headers.get("content-type")).toBe("application/json");
        expect(res.headers.get(OPERATION_ID_HEADER)).toMatch(/^op_/);
        // No version, no server name, no timing: HTTP's own headers and the request id only.
        const allowed = ["connection", "content-length", "content-type", "date", "keep-alive", "request-id"];
        expect(
          Array.from(res.headers as unknown as Iterable<[string, string]>, ([h]) => h).filter(
            (h) => !allowed.includes(h),
          ),
        ).toEqual([]);
      }
      // What load balancers often send.
      const head = await fetch(`${server.url}${p}`, { method: "HEAD" });
      expect(head.status).toBe(200);
    },
  );

  it("a probe sent wrong is told what is wrong (405, 404, 400), never 401", async () => {
    const post = await raw(t, "POST", "/healthz");
    expectErrorBody(post, 405, ERROR_CODES.methodNotAllowed.code, null);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expectErrorBody(await raw(t, "DELETE", "/readyz"), 405, ERROR_CODES.methodNotAllowed.code, null);
    expectErrorBody(await raw(t, "GET", "/healthz/"), 404, ERROR_CODES.notFound.code, null);
    expectErrorBody(await raw(t, "GET", "/readyz?verbose=1"), 400, ERROR_CODES.unknownField.code, "verbose");
  });

  it("everything else still needs the key: /metrics, /openapi.json, an unknown path", async () => {
    for (const p of ["/metrics", "/openapi.json", "/nowhere", "/health", "/", "/healthzz", "/edges/https"]) {
      const res = await raw(t, "GET", p);
      try {
        expectErrorBody(res, 401, ERROR_CODES.unauthorized.code, null);
      } catch (e) {
        throw new Error(`GET ${p}: ${(e as Error).message}`);
      }
    }
  });

  it("GET /metrics: Prometheus' text counting requests, latency, in flight, cache hits, replays", async () => {
    const scrape = async () => {
      const res = await raw(t, "GET", "/metrics", { headers: bearer });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
      expect(res.text).not.toContain(KEY);
      expect(res.text).not.toContain(dataDir);
      return parseExposition(res.text);
    };
    const before = await scrape();
    const delta = (after: Sample[], name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);

    const edge = await raw(t, "POST", "/edges/https", {
      body: { description: "m" },
      headers: { ...bearer, "idempotency-key": "metrics-1" },
    });
    expect(edge.status).toBe(201);
    const again = await raw(t, "POST", "/edges/https", {
      body: { description: "m" },
      headers: { ...bearer, "idempotency-key": "metrics-1" },
    });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const route = await raw(t, "POST", `/edges/https/${edge.json.id}/routes`, {
      body: { match_type: "path_prefix", match: "/m" },
      headers: bearer,
    });
    const routePath = `/edges/https/${edge.json.id}/routes/${route.json.id}`;
    for (let i = 0; i < 3; i++)
      expect((await raw(t, "GET", routePath, { headers: bearer })).status).toBe(200);
    expect((await raw(t, "GET", `${routePath}x`, { headers: bearer })).status).toBe(404);
    expect((await raw(t, "GET", "/edges/https")).status).toBe(401);
    expect((await raw(t, "GET", "/no/such/path", { headers: bearer })).status).toBe(404);

    const after = await scrape();
    const req = "edge_service_requests_total";
    expect(delta(after, req, { operation: "create_https_edge", status: "201" })).toBe(2);
    expect(delta(after, req, { operation: "create_route", status: "201" })).toBe(1);
    expect(delta(after, req, { operation: "get_route", status: "200" })).toBe(3);
    expect(delta(after, req, { operation: "get_route", status: "404" })).toBe(1);
    // Refused by the key: counted under the operation it asked for.
    expect(delta(after, req, { operation: "list_https_edges", status: "401" })).toBe(1);
    // A path of no operation: one bounded label value, never the path.
    expect(delta(after, req, { operation: "none", status: "404" })).toBe(1);
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes("/")))).toBe(false);
    // The scrape before this one was counted, this one not yet.
    expect(delta(after, req, { operation: "get_metrics", status: "200" })).toBe(1);

    const hist = "edge_service_request_duration_seconds";
    expect(delta(after, `${hist}_count`, { operation: "get_route" })).toBe(4);
    expect(valueOf(after, `${hist}_sum`, { operation: "get_route" })).toBeGreaterThan(0);
    expect(valueOf(after, `${hist}_bucket`, { operation: "get_route", le: "+Inf" })).toBe(
      valueOf(after, `${hist}_count`, { operation: "get_route" }),
    );
    // Only this scrape is in flight while it renders.
    expect(valueOf(after, "edge_service_requests_in_flight")).toBe(1);
    // The first GET of the route rendered it, the next two reused it; the unknown one rendered (and failed).
    expect(delta(after, "edge_service_response_cache_lookups_total", { result: "hit" })).toBe(2);
    expect(delta(after, "edge_service_response_cache_lookups_total", { result: "miss" })).toBe(2);
    expect(delta(after, "edge_service_idempotent_replays_total", { operation: "create_https_edge" })).toBe(1);
    // SQLite has no pool; Node.js' own metrics are there under their usual names.
    expect(after.some((s) => s.name.startsWith("edge_service_pg_pool"))).toBe(false);
    expect(valueOf(after, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(after.some((s) => s.name === "nodejs_eventloop_lag_seconds")).toBe(true);
  });

  it("metrics are off in an in-process service (nobody scrapes it): /metrics is a 404", async () => {
    const dir = makeTempDir("operate-app");
    const store = SqliteStore.open(dir);
    try {
      const app = createEdgeApp({ store });
      const res = await app.fetch(new Request("http://in-process.test/metrics"));
      expect(res.status).toBe(404);
      expect(((await res.json()) as { msg: string }).msg).toMatch(/metrics are turned off/);
      expect((await app.fetch(new Request("http://in-process.test/readyz"))).status).toBe(200);
    } finally {
      store.close();
      removeDir(dir);
    }
  });

  it("metrics can be turned off on a server: /metrics is a 404, everything else as before", async () => {
    const dir = makeTempDir("operate-off");
    const off = await startServer({ dataDir: dir, port: 0, apiKey: KEY, metrics: false });
    try {
      const o = httpTransport({ baseUrl: off.url, retries: 0 });
      expect((await raw(o, "GET", "/metrics")).status).toBe(401);
      expectErrorBody(
        await raw(o, "GET", "/metrics", { headers: bearer }),
        404,
        ERROR_CODES.notFound.code,
        null,
      );
      expect((await raw(o, "GET", "/healthz")).status).toBe(200);
    } finally {
      await off.close();
      removeDir(dir);
    }
  });
});

describe("probes are outside the rate limit", () => {
  it("a load balancer probing often is never refused, while keyed calls are limited", async () => {
    const dir = makeTempDir("operate-rate");
    const server = await startServer({ dataDir: dir, port: 0, apiKey: KEY, rateLimitPerMinute: 2 });
    try {
      const t = httpTransport({ baseUrl: server.url, retries: 0 });
      for (let i = 0; i < 10; i++) {
        expect((await raw(t, "GET", "/healthz")).status).toBe(200);
        expect((await raw(t, "GET", "/readyz")).status).toBe(200);
      }
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await raw(t, "GET", "/edges/https", { headers: bearer })).status);
      // Unless the minute turned over between two of them.
      expect([
        [200, 200, 429],
        [200, 200, 200],
      ]).toContainEqual(statuses);
      expect((await raw(t, "GET", "/healthz")).status).toBe(200);
    } finally {
      await server.close();
      removeDir(dir);
    }
  });
});

describe("readiness on SQLite", () => {
  let dataDir: string;
  let server: RunningServer;
  let t: Transport;
  const lines: string[] = [];
  beforeAll(async () => {
    dataDir = makeTempDir("operate-ready");
    server = await startServer({ dataDir, port: 0, log: (l) => lines.push(l) });
    t = httpTransport({ baseUrl: server.url, retries: 0 });
  });
  afterAll(async () => {
    await server.close();
    removeDir(dataDir);
  });

  const expectNotReady = (res: Awaited<ReturnType<typeof raw>>) => {
    expectErrorBody(res, 503, ERROR_CODES.unavailable.code, null);
    expect(res.headers.get("retry-after")).toBe("1");
    // Nothing about where the data is or what went wrong: that is in the log.
    expect(res.text).not.toContain(dataDir);
    expect(res.text).not.toMatch(/schema|edge\.db/);
  };

  it("a schema other than the one this service runs: 503, and 200 once it is back", async () => {
    expect((await readyzUntil(t, 200)).status).toBe(200);
    const db = new Database(path.join(dataDir, "edge.db"));
    try {
      db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
      expectNotReady(await readyzUntil(t, 503));
      expect((await raw(t, "GET", "/healthz")).status).toBe(200); // alive all along
      expect(lines.some((l) => l.includes(`upgraded to schema ${SCHEMA_VERSION + 1}`))).toBe(true);
      db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION));
    } finally {
      db.close();
    }
    expect((await readyzUntil(t, 200)).status).toBe(200);
    expect(lines).toContain("ready again");
  });

  it("the database file moved away (writes would be lost): 503; moved back: 200", async () => {
    const file = path.join(dataDir, "edge.db");
    fs.renameSync(file, `${file}.away`);
    try {
      expectNotReady(await readyzUntil(t, 503));
      expect(lines.some((l) => l.startsWith("not ready: ") && l.includes("cannot be opened"))).toBe(true);
    } finally {
      fs.renameSync(`${file}.away`, file);
    }
    expect((await readyzUntil(t, 200)).status).toBe(200);
  });
});

describe("PostgreSQL: readiness through a restart, pool metrics, JSON logs (the CLI)", () => {
  let cli: Cli;
  let url: string;
  let t: Transport;
  beforeAll(async () => {
    ensureBuilt();
    const cluster = await sharedCluster();
    url = await cluster.createDatabase();
    cli = await startCli(["--port", "0", "--database", url, "--pool-size", "3", "--log-format", "json"], {
      EDGE_API_KEY: KEY,
    });
    t = httpTransport({ baseUrl: cli.url, retries: 0 });
  });
  afterAll(() => {
    cli?.child.kill("SIGTERM");
  });

  it("ready 200 → PostgreSQL stopped: 503 (alive still 200) → started again: 200, without a restart", async () => {
    const cluster = await sharedCluster();
    expect((await readyzUntil(t, 200)).status).toBe(200);
    cluster.stopServer();
    let down;
    try {
      down = await readyzUntil(t, 503);
      expect((await raw(t, "GET", "/healthz")).status).toBe(200);
    } finally {
      cluster.startServer();
    }
    expectErrorBody(down, 503, ERROR_CODES.unavailable.code, null);
    expect(down.headers.get("retry-after")).toBe("1");
    expect(down.text).not.toContain(String(cluster.port));
    expect(down.text).not.toMatch(/postgres|127\.0\.0\.1|ECONNREFUSED/i);
    expect((await readyzUntil(t, 200)).status).toBe(200);
    // The operator's log says why, once per change (JSON, like every line of this service).
    const events = jsonLines(await stderrUntil(cli, (s) => s.includes('"ready again"'))).filter(
      (l) => l.msg !== "request",
    );
    const notReady = events.filter((l) => String(l.msg).startsWith("not ready: "));
    expect(notReady.length).toBeGreaterThanOrEqual(1);
    expect(notReady[0]!.level).toBe("warn");
    expect(notReady[0]!.msg).toMatch(/cannot be reached/);
    expect(events.filter((l) => l.msg === "ready again")).toHaveLength(1);
  });

  it("a schema other than the one this replica runs: 503, then 200 once it is back", async () => {
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      await db.query("UPDATE meta SET value = $1 WHERE key = 'schema_version'", [
        String(PG_SCHEMA_VERSION + 1),
      ]);
      expect((await readyzUntil(t, 503)).status).toBe(503);
      await db.query("UPDATE meta SET value = $1 WHERE key = 'schema_version'", [String(PG_SCHEMA_VERSION)]);
    } finally {
      await db.end();
    }
    expect((await readyzUntil(t, 200)).status).toBe(200);
  });

  it("/metrics tells the pool: connections in use and idle, requests waiting, its size", async () => {
    const res = await raw(t, "GET", "/metrics", { headers: bearer });
    expect(res.status).toBe(200);
    const samples = parseExposition(res.text);
    expect(valueOf(samples, "edge_service_pg_pool_max_connections")).toBe(3);
    expect(valueOf(samples, "edge_service_pg_pool_waiting_requests")).toBe(0);
    const inUse = samples.find(
      (s) => s.name === "edge_service_pg_pool_connections" && s.labels.state === "in_use",
    );
    const idle = samples.find(
      (s) => s.name === "edge_service_pg_pool_connections" && s.labels.state === "idle",
    );
    expect(inUse?.value).toBe(0); // nothing runs while the scrape is answered
    expect(idle!.value).toBeGreaterThanOrEqual(1); // the readiness checks left a connection
    expect(idle!.value).toBeLessThanOrEqual(3);
    expect(res.text).not.toContain(url);
  });

  it("--log-format json: one object per request, with the key's name, never a body, query or key", async () => {
    const marker = "BODY-MARKER-do-not-log";
    const sent: Array<{ id: string; method: string; path: string; status: number; key: string | null }> = [];
    const send = async (method: string, p: string, opts: Parameters<typeof raw>[3], key: string | null) => {
      const res = await raw(t, method, p, opts);
      sent.push({
        id: res.headers.get(OPERATION_ID_HEADER)!,
        method,
        path: p.split("?")[0]!,
        status: res.status,
        key,
      });
      return res;
    };
    const edge = await send(
      "POST",
      "/edges/https",
      { body: { description: marker }, headers: bearer },
      "bootstrap",
    );
    await send("GET", `/edges/https?limit=1&secret=${marker}`, { headers: bearer }, "bootstrap");
    await send(
      "GET",
      `/edges/https/${edge.json.id}`,
      { headers: { authorization: `Bearer ${marker}` } },
      null,
    );
    await send("GET", "/healthz", {}, null);
    await send("GET", "/nowhere", { headers: bearer }, "bootstrap");
    const stderr = await stderrUntil(cli, (s) => sent.every((r) => s.includes(r.id)));
    expect(stderr).not.toContain(marker);
    expect(stderr).not.toContain(KEY);
    const byId = new Map(
      jsonLines(stderr)
        .filter((l) => l.msg === "request")
        .map((l) => [l.request_id, l]),
    );
    const operations = ["create_https_edge", "list_https_edges", "get_https_edge", "get_healthz", null];
    sent.forEach((r, i) => {
      const line = byId.get(r.id)!;
      expect(Object.keys(line).sort()).toEqual(
        [
          "duration_ms",
          "key",
          "level",
          "method",
          "msg",
          "operation",
          "path",
          "request_id",
          "status",
          "time",
        ].sort(),
      );
      expect(line).toMatchObject({
        level: "info",
        method: r.method,
        path: r.path,
        status: r.status,
        operation: operations[i],
        key: r.key,
      });
      expect(new Date(line.time as string).toISOString()).toBe(line.time);
      expect(line.duration_ms).toEqual(expect.any(Number));
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    });
    expect(sent.map((r) => r.status)).toEqual([201, 400, 401, 200, 404]); // the query parameter is unknown: a 400;
  });
});

describe("log formats of the CLI", () => {
  beforeAll(() => ensureBuilt());

  it("the default stays plain text: time, method, path, status, duration, request id", async () => {
    const dir = makeTempDir("operate-text");
    try {
      const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dir]);
      const res = await fetch(`${cli.url}/edges/https?limit=2`);
      const id = res.headers.get(OPERATION_ID_HEADER)!;
      const stderr = await stderrUntil(cli, (s) => s.includes(id));
      const line = stderr.split("\n").find((l) => l.includes(id))!;
      expect(line).toMatch(
        new RegExp(
          `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z GET /edges/https 200 \\d+\\.\\dms ${id}$`,
        ),
      );
      cli.child.kill("SIGTERM");
      await cli.exit;
    } finally {
      removeDir(dir);
    }
  });

  it("an unknown --log-format is refused before anything starts", async () => {
    const dir = makeTempDir("operate-bad");
    try {
      const p = spawnCli(["--port", "0", "--data", dir, "--log-format", "xml"]);
      const { code } = await p.exit;
      expect(code).not.toBe(0);
      expect(p.stderr()).toContain("--log-format must be text or json, got xml");
      expect(p.stdout()).toBe("");
    } finally {
      removeDir(dir);
    }
  });
});
