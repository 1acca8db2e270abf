/**
 * Old data answers like new data (issue 27, item 1): a route or TLS edge stored by an earlier
 * schema (its modules JSON without a field that now has a default, written straight into the
 * database) answers the current, total shape on both stores: the same body a route created today
 * with the same request answers, and a body the contract's response schema would not complete.
 *
 * The answers are read as raw JSON (fetch, not the typed client): the client parses responses
 * through the contract, which would fill the very defaults under test.
 */
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { EdgeClient } from "../../sdk/client";
import { routeSchema, tlsEdgeSchema } from "../../sdk/contract";
import { startServer, type RunningServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { sharedCluster } from "../support/postgres";
import { expectedModule, makeTempDir, removeDir } from "./helpers";

/** Each module as an earlier schema stored it: no `enabled`, and other defaulted fields left out. */
const OLD_MODULES = {
  compression: {},
  circuit_breaker: { error_threshold_percentage: 0.5 },
  request_headers: { add: { "X-Old": "1" } },
  user_agent_filter: { deny: ["badbot"] },
  ip_restriction: { ip_policy_ids: ["ipp_office"] },
  backend: { backend_id: "bkd_old" },
};
/** A TLS edge's IP restriction as an earlier schema stored it: no `enabled`. */
const OLD_TLS_POLICY = { ip_policy_ids: ["ipp_vpn"] };

/** Where the old rows are written: a SQLite data directory, or a PostgreSQL database. */
interface Place {
  dataDir: string;
  databaseUrl?: string;
  /** Runs one UPDATE on the database directly (no service running); the rows it changed. */
  exec(sql: { sqlite: string; postgres: string }, params: string[]): Promise<number>;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) removeDir(d);
});

function sqlitePlace(): Place {
  const dataDir = makeTempDir("old-rows");
  dirs.push(dataDir);
  return {
    dataDir,
    async exec(sql, params) {
      const db = new Database(path.join(dataDir, "edge.db"));
      try {
        return db.prepare(sql.sqlite).run(...params).changes;
      } finally {
        db.close();
      }
    },
  };
}

async function postgresPlace(): Promise<Place> {
  const dataDir = makeTempDir("old-rows-pg");
  dirs.push(dataDir);
  const databaseUrl = await (await sharedCluster()).createDatabase();
  return {
    dataDir,
    databaseUrl,
    async exec(sql, params) {
      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query(sql.postgres, params)).rowCount ?? 0;
      } finally {
        await client.end();
      }
    },
  };
}

const start = (place: Place): Promise<RunningServer> =>
  startServer({ dataDir: place.dataDir, databaseUrl: place.databaseUrl, port: 0, log: () => {} });

async function getJson(server: RunningServer, route: string): Promise<unknown> {
  const res = await fetch(`${server.url}${route}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** The fields of a route that differ between two routes of one request: its identity. */
function withoutIdentity(route: unknown): unknown {
  const {
    id: _id,
    uri: _uri,
    created_at: _created,
    match: _match,
    ...rest
  } = route as Record<string, unknown>;
  return rest;
}

describe.each<[string, () => Promise<Place>]>([
  ["SQLite", async () => sqlitePlace()],
  ["PostgreSQL", postgresPlace],
])("rows of an earlier schema on %s", (_name, makePlace) => {
  let place: Place;
  let edgeId: string;
  let oldRouteId: string;
  let newRouteId: string;
  let tlsEdgeId: string;
  let spelledEdgeId: string;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    place = await makePlace();
    // Today's service makes the objects; the rows are then rewritten as an earlier one stored them.
    const first = await start(place);
    try {
      const client = new EdgeClient(httpTransport({ baseUrl: first.url, retries: 0 }));
      edgeId = (await client.createHttpsEdge({ description: "old rows" })).id;
      oldRouteId = (
        await client.createRoute(edgeId, { match_type: "path_prefix", match: "/old", ...OLD_MODULES })
      ).id;
      newRouteId = (
        await client.createRoute(edgeId, { match_type: "path_prefix", match: "/new", ...OLD_MODULES })
      ).id;
      tlsEdgeId = (await client.createTlsEdge({ description: "old policy" })).id;
      await client.putTlsIpRestriction(tlsEdgeId, { ip_policy_ids: ["ipp_vpn"] });
      spelledEdgeId = (await client.createHttpsEdge({ hostports: ["old-rows.example:443"] })).id;
    } finally {
      await first.close();
    }
    const routeRows = await place.exec(
      {
        sqlite: "UPDATE routes SET modules = ? WHERE id = ?",
        postgres: "UPDATE routes SET modules = $1 WHERE id = $2",
      },
      [JSON.stringify(OLD_MODULES), oldRouteId],
    );
    expect(routeRows).toBe(1);
    const policyRows = await place.exec(
      {
        sqlite: "UPDATE tls_ip_restrictions SET config = ? WHERE edge_id = ?",
        postgres: "UPDATE tls_ip_restrictions SET config = $1 WHERE edge_id = $2",
      },
      [JSON.stringify(OLD_TLS_POLICY), tlsEdgeId],
    );
    expect(policyRows).toBe(1);
    // A hostport as it was taken before it had one spelling.
    const edgeRows = await place.exec(
      {
        sqlite: "UPDATE edges SET hostports = ? WHERE id = ?",
        postgres: "UPDATE edges SET hostports = $1 WHERE id = $2",
      },
      [JSON.stringify(["Old-Rows.EXAMPLE:0443"]), spelledEdgeId],
    );
    expect(edgeRows).toBe(1);
    // A fresh process: nothing of the first one's (its GET cache) answers for the old rows.
    server = await start(place);
  });

  afterAll(async () => {
    await server?.close();
  });

  test("an old route answers the total shape a new route of the same request answers", async () => {
    const old = await getJson(server!, `/edges/https/${edgeId}/routes/${oldRouteId}`);
    const fresh = await getJson(server!, `/edges/https/${edgeId}/routes/${newRouteId}`);
    expect(withoutIdentity(old)).toEqual(withoutIdentity(fresh));
    // Total: the contract's response schema parses it and adds nothing (its defaults fill no gap).
    expect(routeSchema.parse(old)).toEqual(old);
    expect(old).toMatchObject({
      compression: { enabled: true },
      user_agent_filter: { enabled: true, allow: [], deny: ["badbot"] },
      request_headers: { enabled: true, add: { "X-Old": "1" }, remove: [] },
    });
  });

  test("the edge's list of routes and the module's own GET answer it too", async () => {
    const edge = (await getJson(server!, `/edges/https/${edgeId}`)) as { routes: Array<{ id: string }> };
    const listed = edge.routes.find((r) => r.id === oldRouteId);
    expect(listed).toEqual(await getJson(server!, `/edges/https/${edgeId}/routes/${oldRouteId}`));
    // The old row reads back as the contract's canonical form of what it held (defaults filled).
    const compression = await getJson(server!, `/edges/https/${edgeId}/routes/${oldRouteId}/compression`);
    expect(compression).toEqual(
      expectedModule("compression", OLD_MODULES.compression, server!.url, oldRouteId),
    );
    expect(compression).toMatchObject({ enabled: true });
  });

  test("an old edge's hostport answers in its one spelling, and holds it against every spelling", async () => {
    expect(await getJson(server!, `/edges/https/${spelledEdgeId}`)).toMatchObject({
      hostports: ["old-rows.example:443"],
    });
    const res = await fetch(`${server!.url}/edges/tls`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ hostports: ["old-rows.example:443"] }),
    });
    expect([
      res.status,
      ((await res.json()) as { details: { object_id?: string } }).details.object_id,
    ]).toEqual([409, spelledEdgeId]);
  });

  test("an old TLS edge's IP restriction answers with its default", async () => {
    const edge = await getJson(server!, `/edges/tls/${tlsEdgeId}`);
    expect(tlsEdgeSchema.parse(edge)).toEqual(edge);
    expect(edge).toMatchObject({ ip_restriction: { enabled: true, ip_policies: [{ id: "ipp_vpn" }] } });
  });
});
