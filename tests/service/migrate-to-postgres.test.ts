/**
 * `edge-service migrate --from DIR --to postgres://...`: a data directory written by today's
 * service (the SQLite store) copied into an empty PostgreSQL database, then served from there
 * with the same answers, the audit trail's included (the same events under the same ids, found by
 * object and paged alike; a new event numbered after every copied one); a second run into the now
 * non-empty database is refused, and so is one into a database that holds only audit events.
 */
import { execFileSync } from "node:child_process";
import { Client } from "pg";
import { createKey } from "../../service/api-keys";
import { startServer } from "../../service/http/server";
import { PostgresStore } from "../../service/store/store-postgres";
import { SqliteStore } from "../../service/store/store-sqlite";
import { CLI, ensureBuilt } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { COMPATIBLE_MODULES, makeTempDir, moduleSample, raw, removeDir } from "./helpers";
import { httpTransport, type Transport } from "../../sdk/transport";

beforeAll(() => {
  ensureBuilt();
});

const migrate = (...args: string[]) =>
  execFileSync(process.execPath, [CLI, "migrate", ...args], { encoding: "utf8", stdio: "pipe" });

/** Every page of `GET /audit_events?…` as answered (`before_id` paging), the origin masked. */
async function auditPages(t: Transport, origin: string, query: string): Promise<string[]> {
  const pages: string[] = [];
  let next: string | null = `/audit_events${query}`;
  while (next !== null) {
    const res = await raw(t, "GET", next.startsWith(origin) ? next.slice(origin.length) : next);
    expect(res.status).toBe(200);
    pages.push(res.text.split(origin).join("ORIGIN"));
    next = res.json.next_page_uri as string | null;
  }
  return pages;
}

const seqOf = (id: string): number => Number(/^aud_(\d+)$/.exec(id)![1]);

it("copies every row, and the PostgreSQL service answers what the SQLite one did", async () => {
  const dataDir = makeTempDir("migrate");
  try {
    // A named key (its create is an event of the trail), which every request then presents.
    const keys = SqliteStore.open(dataDir);
    const apiKey = await createKey(keys, "ops", "write");
    await keys.close();
    // Written through the service as it runs today.
    const sqlite = await startServer({ dataDir, port: 0 });
    const t = httpTransport({ baseUrl: sqlite.url, retries: 0, apiKey });
    const edge = (
      await raw(t, "POST", "/edges/https", { body: { description: "e", hostports: ["a.example.com:443"] } })
    ).json;
    const full: Record<string, unknown> = { match_type: "path_prefix", match: "/full" };
    for (const m of COMPATIBLE_MODULES) full[m] = moduleSample(m, "", "").request;
    await raw(t, "POST", `/edges/https/${edge.id}/routes`, { body: full });
    const keyed: string[] = [];
    for (let i = 0; i < 30; i++) {
      const { json } = await raw(t, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "exact_path", match: `/r/${i}`, backend: { backend_id: `b${i}` } },
        headers: { "Idempotency-Key": `key-${i}` },
      });
      keyed.push(json.id);
    }
    const gone = (
      await raw(t, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "exact_path", match: "/gone" },
      })
    ).json;
    await raw(t, "DELETE", `/edges/https/${edge.id}/routes/${gone.id}`);
    const patched = await raw(t, "PATCH", `/edges/https/${edge.id}/routes/${keyed[0]}`, {
      body: { description: "patched" },
    });
    expect(patched.status).toBe(200);
    const tls = (await raw(t, "POST", "/edges/tls", { body: { metadata: "m" } })).json;
    await raw(t, "PUT", `/edges/tls/${tls.id}/ip_restriction`, { body: { ip_policy_ids: ["p2", "p1"] } });
    const paths = [
      `/edges/https/${edge.id}`,
      `/edges/https/${edge.id}/routes?limit=7`,
      `/edges/tls/${tls.id}`,
      "/edges/https",
      "/edges/tls",
    ];
    const before = await Promise.all(
      paths.map(async (p) => (await raw(t, "GET", p)).text.split(sqlite.url).join("ORIGIN")),
    );
    // The trail: whole, by pages of 7, and by object (a route's three events, a deleted one's, a key's).
    const trailQueries = [
      "?limit=100",
      "?limit=7",
      `?object_id=${keyed[0]}`,
      `?object_id=${gone.id}&limit=1`,
      `?object_id=${edge.id}`,
      "?object_id=ops",
    ];
    const trailBefore = await Promise.all(trailQueries.map((q) => auditPages(t, sqlite.url, q)));
    const events = (await raw(t, "GET", "/audit_events?limit=100")).json.audit_events as Array<{
      id: string;
      operation: string;
      object_id: string;
      key: string | null;
      request_id: string | null;
    }>;
    expect(events.map((e) => e.operation).slice(-2)).toEqual(["create_https_edge", "create_api_key"]);
    expect(events.filter((e) => e.object_id === keyed[0]).map((e) => e.operation)).toEqual([
      "update_route",
      "create_route",
    ]);
    expect(events.filter((e) => e.object_id === gone.id).map((e) => e.operation)).toEqual([
      "delete_route",
      "create_route",
    ]);
    expect(events[0]).toMatchObject({ key: "ops", request_id: expect.any(String) });
    await sqlite.close();

    const url = await (await sharedCluster()).createDatabase();
    const out = migrate("--from", dataDir, "--to", url);
    expect(out).toMatch(
      new RegExp(
        `^copied 2 edges, 31 routes, 1 route_saml_keys, 1 tls_ip_restrictions, 1 api_keys, ${events.length} audit_events from `,
      ),
    );

    // Row for row the same (seqs included: the order of every list is kept, the events' ids too).
    const source = SqliteStore.open(dataDir, { auditIndexEveryMs: 0 });
    const target = await PostgresStore.open(url, { auditIndexEveryMs: 0 });
    try {
      const dumped = await source.dump();
      expect(Object.keys(dumped)).not.toContain("audit_by_object");
      expect(dumped.audit_events).toHaveLength(events.length);
      expect(await target.dump()).toEqual(dumped);
    } finally {
      await source.close();
      await target.close();
    }

    const pg = await startServer({ dataDir, databaseUrl: url, port: 0 });
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      const p = httpTransport({ baseUrl: pg.url, retries: 0, apiKey });
      const after = await Promise.all(
        paths.map(async (q) => (await raw(p, "GET", q)).text.split(pg.url).join("ORIGIN")),
      );
      expect(after).toEqual(before);
      // The same trail, whether the lookups by object scan the copied events or the rebuilt index
      // (the copy carries none of it: the server's indexer fills it from the copied events).
      expect(await Promise.all(trailQueries.map((q) => auditPages(p, pg.url, q)))).toEqual(trailBefore);
      const indexed = async () =>
        Number((await db.query("SELECT count(*) AS n FROM audit_by_object")).rows[0].n);
      for (let i = 0; i < 100 && (await indexed()) < events.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await indexed()).toBe(events.length);
      expect(await Promise.all(trailQueries.map((q) => auditPages(p, pg.url, q)))).toEqual(trailBefore);
      // The keys of creates, copied with their routes, still answer a retried create; a new route sorts first.
      const retried = await raw(p, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "exact_path", match: "/r/3", backend: { backend_id: "b3" } },
        headers: { "Idempotency-Key": "key-3" },
      });
      expect([retried.status, retried.json.id]).toEqual([201, keyed[3]]);
      const fresh = await raw(p, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "exact_path", match: "/new" },
      });
      expect((await raw(p, "GET", `/edges/https/${edge.id}/routes?limit=1`)).json.routes[0].id).toBe(
        fresh.json.id,
      );
      // A new change's event is numbered after every copied one, and heads the trail.
      const newest = (await raw(p, "GET", "/audit_events?limit=1")).json.audit_events[0];
      expect(newest).toMatchObject({ operation: "create_route", object_id: fresh.json.id, key: "ops" });
      expect(seqOf(newest.id)).toBeGreaterThan(Math.max(...events.map((e) => seqOf(e.id))));
    } finally {
      await db.end();
      await pg.close();
    }

    // Into a database that holds data: refused, with what to do.
    expect(() => migrate("--from", dataDir, "--to", url)).toThrow(
      /already holds data \(table edges\); load into an empty database/,
    );
  } finally {
    removeDir(dataDir);
  }
});

it("refuses a database that holds only audit events, copying nothing", async () => {
  const dataDir = makeTempDir("migrate-audit");
  const otherDir = makeTempDir("migrate-audit-pg");
  try {
    const sqlite = await startServer({ dataDir, port: 0 });
    await raw(httpTransport({ baseUrl: sqlite.url, retries: 0 }), "POST", "/edges/tls", { body: {} });
    await sqlite.close();
    // A server ran on the target: its edge is gone, the events of its create and delete stay.
    const url = await (await sharedCluster()).createDatabase();
    const pg = await startServer({ dataDir: otherDir, databaseUrl: url, port: 0 });
    try {
      const t = httpTransport({ baseUrl: pg.url, retries: 0 });
      const tls = (await raw(t, "POST", "/edges/tls", { body: {} })).json;
      await raw(t, "DELETE", `/edges/tls/${tls.id}`);
    } finally {
      await pg.close();
    }
    expect(() => migrate("--from", dataDir, "--to", url)).toThrow(
      /already holds data \(table audit_events\); load into an empty database \(a new one: createdb NAME\)/,
    );
    const target = await PostgresStore.open(url, { auditIndexEveryMs: 0 });
    try {
      const dump = await target.dump();
      expect([dump.edges.length, dump.audit_events.length]).toEqual([0, 2]);
    } finally {
      await target.close();
    }
  } finally {
    removeDir(dataDir);
    removeDir(otherDir);
  }
});

it("says what is wrong with its arguments", async () => {
  const empty = makeTempDir("migrate-empty");
  try {
    expect(() => migrate("--from", empty)).toThrow(/migrate needs --from DIR .* and --to postgres:\/\//);
    expect(() => migrate("--from", empty, "--to", "postgres://x@127.0.0.1:1/x")).toThrow(
      /holds no edge.db: pass the data directory/,
    );
  } finally {
    removeDir(empty);
  }
});
