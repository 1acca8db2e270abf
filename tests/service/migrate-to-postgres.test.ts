/**
 * `edge-service migrate --from DIR --to postgres://...`: a data directory written by today's
 * service (the SQLite store) copied into an empty PostgreSQL database, then served from there
 * with the same answers; a second run into the now non-empty database is refused.
 */
import { execFileSync } from "node:child_process";
import { startServer } from "../../sdk/service/server";
import { PostgresStore } from "../../sdk/service/store-postgres";
import { SqliteStore } from "../../sdk/service/store-sqlite";
import { CLI, ensureBuilt } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { COMPATIBLE_MODULES, makeTempDir, moduleSample, raw, removeDir } from "./helpers";
import { httpTransport } from "../../sdk/transport";

beforeAll(() => {
  ensureBuilt();
});

const migrate = (...args: string[]) =>
  execFileSync(process.execPath, [CLI, "migrate", ...args], { encoding: "utf8", stdio: "pipe" });

it("copies every row, and the PostgreSQL service answers what the SQLite one did", async () => {
  const dataDir = makeTempDir("migrate");
  try {
    // Written through the service as it runs today.
    const sqlite = await startServer({ dataDir, port: 0 });
    const t = httpTransport({ baseUrl: sqlite.url, retries: 0 });
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
    await sqlite.close();

    const url = await (await sharedCluster()).createDatabase();
    const out = migrate("--from", dataDir, "--to", url);
    expect(out).toMatch(
      /^copied 2 edges, 31 routes, 1 route_saml_keys, 1 tls_ip_restrictions, 0 api_keys from /,
    );

    // Row for row the same (seqs included: the order of every list is kept).
    const source = SqliteStore.open(dataDir);
    const target = await PostgresStore.open(url);
    try {
      expect(await target.dump()).toEqual(await source.dump());
    } finally {
      source.close();
      await target.close();
    }

    const pg = await startServer({ dataDir, databaseUrl: url, port: 0 });
    try {
      const p = httpTransport({ baseUrl: pg.url, retries: 0 });
      const after = await Promise.all(
        paths.map(async (q) => (await raw(p, "GET", q)).text.split(pg.url).join("ORIGIN")),
      );
      expect(after).toEqual(before);
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
    } finally {
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
