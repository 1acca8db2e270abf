/**
 * Nothing at rest answers a guess of a keyed create's secrets (issue 35, finding 1): what an
 * object keeps of the create that made it (`create_request`) is an HMAC under a key of the store's
 * (sealed like the secrets), never a hash anyone can recompute from a guessed body. And the
 * `Idempotency-Key` still does its work: a repeat of a create (same key, same body) answers the
 * object after a restart, after `secrets rotate` twice, after the upgrade of a store that kept the
 * plain digests, and on PostgreSQL after `edge-service migrate`; another body under the same key
 * is still a 400. On both stores, through real servers and the compiled CLI.
 */
import { createHash } from "node:crypto";
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { FINGERPRINT_KEY, FINGERPRINT_PREFIX } from "../../service/store/fingerprints";
import { type RunningServer, startServer } from "../../service/http/server";
import { PG_KEYED_FINGERPRINTS_SCHEMA } from "../../service/store/store-postgres";
import { KEYED_FINGERPRINTS_SCHEMA } from "../../service/store/store-sqlite";
import { httpTransport } from "../../sdk/transport";
import { ensureBuilt } from "../support/edge-service";
import { raw, type RawResponse } from "./helpers";
import {
  type Key,
  newKey as newKeyIn,
  type Place,
  placesOf,
  queryPlace,
  runCli,
  tempDirs,
} from "./sealed-store";

jest.setTimeout(300_000);

const dirs = tempDirs();
beforeAll(() => ensureBuilt());
afterAll(() => dirs.removeAll());

const newKey = (): Key => newKeyIn(dirs.make);
const { sqlite: sqlitePlace, postgres: postgresPlace } = placesOf(dirs.make, "fingerprint");
const PLACES: Array<[string, () => Promise<Place>]> = [
  ["SQLite", sqlitePlace],
  ["PostgreSQL", postgresPlace],
];

/** The secret of the report. */
const SECRET = "hunter2";
const EDGE_BODY = { description: "keyed edge", metadata: "m" };
const ROUTE_BODY = {
  match_type: "path_prefix",
  match: "/hooks",
  webhook_verification: { provider: "github", secret: SECRET },
};
const RESTRICTION_BODY = { enabled: true, ip_policy_ids: ["ipp_1", "ipp_2"] };
/** A valid body of each create other than the one made: under the same key, a 400. */
const OTHER_BODY = {
  edges: { ...EDGE_BODY, description: "another" },
  routes: { ...ROUTE_BODY, webhook_verification: { provider: "github", secret: "hunter3" } },
  tls_ip_restrictions: { ip_policy_ids: ["ipp_3"] },
};

/** The keyed creates of one run: method, path, body and key of each (paths known once the edges are). */
interface Create {
  table: "edges" | "routes" | "tls_ip_restrictions";
  method: string;
  path: string;
  body: object;
  key: string;
  id?: string;
}

function serve(place: Place, keys: Key[]): Promise<RunningServer> {
  return startServer({
    dataDir: place.dataDir,
    databaseUrl: place.databaseUrl,
    port: 0,
    secretsKey: keys.map((k) => k.key),
  });
}

const send = (server: RunningServer, c: Create, body: object = c.body): Promise<RawResponse> =>
  raw(httpTransport({ baseUrl: server.url, retries: 0 }), c.method, c.path, {
    body,
    headers: { "Idempotency-Key": c.key },
  });

/** Makes an HTTPS edge, a route with a webhook secret, a TLS edge and its IP restriction, each keyed. */
async function createAll(server: RunningServer, tag: string): Promise<Create[]> {
  const edge: Create = {
    table: "edges",
    method: "POST",
    path: "/edges/https",
    body: EDGE_BODY,
    key: `e-${tag}`,
  };
  edge.id = (await send(server, edge)).json.id as string;
  const route: Create = {
    table: "routes",
    method: "POST",
    path: `/edges/https/${edge.id}/routes`,
    body: ROUTE_BODY,
    key: `r-${tag}`,
  };
  const tls = (
    await raw(httpTransport({ baseUrl: server.url, retries: 0 }), "POST", "/edges/tls", { body: {} })
  ).json.id as string;
  const restriction: Create = {
    table: "tls_ip_restrictions",
    method: "PUT",
    path: `/edges/tls/${tls}/ip_restriction`,
    body: RESTRICTION_BODY,
    key: `t-${tag}`,
  };
  for (const c of [route, restriction]) {
    const res = await send(server, c);
    expect(res.status).toBe(c.method === "POST" ? 201 : 200);
    c.id = c.table === "routes" ? (res.json.id as string) : tls;
  }
  return [edge, route, restriction];
}

/** Each create repeated: the object it made, answered as a replay; another body under its key: 400. */
async function expectReplays(server: RunningServer, creates: Create[]): Promise<void> {
  for (const c of creates) {
    const again = await send(server, c);
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([
      c.method === "POST" ? 201 : 200,
      "true",
    ]);
    if (c.table !== "tls_ip_restrictions") expect(again.json.id).toBe(c.id);
    const other = await send(server, c, OTHER_BODY[c.table]);
    expect([other.status, other.json.details.field]).toEqual([400, "Idempotency-Key"]);
  }
}

/** What each object keeps of its create, straight from the database, by create key. */
async function storedRequests(place: Place): Promise<Record<string, string>> {
  const rows = await queryPlace(
    place,
    `SELECT create_key AS k, create_request AS r FROM edges WHERE create_key IS NOT NULL
     UNION ALL SELECT create_key, create_request FROM routes WHERE create_key IS NOT NULL
     UNION ALL SELECT create_key, create_request FROM tls_ip_restrictions WHERE create_key IS NOT NULL`,
  );
  return Object.fromEntries(rows.map((r) => [r.k!, r.r!]));
}

const storedKey = async (place: Place): Promise<string | undefined> =>
  (await queryPlace(place, `SELECT value FROM meta WHERE key = '${FINGERPRINT_KEY}'`))[0]?.value;

/** The request as the service spells it (method, path, body), the text an unkeyed digest was of. */
const requestOf = (c: Create) => `${c.method} ${c.path} ${JSON.stringify(c.body)}`;

/** Every common hash of a create's body, of its request and of the secret, in every common encoding. */
function commonHashes(c: Create): string[] {
  const out: string[] = [];
  for (const text of [JSON.stringify(c.body), requestOf(c), SECRET]) {
    for (const algorithm of ["md5", "sha1", "sha256", "sha512"]) {
      for (const encoding of ["hex", "base64", "base64url"] as const) {
        out.push(createHash(algorithm).update(text).digest(encoding));
      }
    }
  }
  return out;
}

/** The oracle: sha256 of "POST /edges/https/<edge>/routes " + the body, base64. */
const oracle = (c: Create) => createHash("sha256").update(requestOf(c)).digest("base64");

function expectNoOracle(stored: Record<string, string>, creates: Create[]): void {
  for (const c of creates) {
    const value = stored[c.key]!;
    expect(value).not.toContain(oracle(c));
    expect(value).toMatch(new RegExp(`^${FINGERPRINT_PREFIX}[A-Za-z0-9_-]{43}$`));
    const hit = commonHashes(c).find(
      (h) => value.includes(h) || h.includes(value.slice(FINGERPRINT_PREFIX.length)),
    );
    expect(hit).toBeUndefined();
  }
}

const rotate = (place: Place, from: Key, to: Key) =>
  runCli(["secrets", "rotate", "--from-key-file", from.file, "--to-key-file", to.file, ...place.flags]);

describe.each(PLACES)("keyed creates' fingerprints, on %s", (_name, makePlace) => {
  it("answer no guess, and a repeat replays after a restart and two rotations", async () => {
    const place = await makePlace();
    const [k1, k2, k3] = [newKey(), newKey(), newKey()];
    let server = await serve(place, [k1]);
    let creates: Create[];
    try {
      creates = await createAll(server, "a");
      await expectReplays(server, creates);
    } finally {
      await server.close();
    }
    const stored = await storedRequests(place);
    expect(Object.keys(stored).sort()).toEqual(creates.map((c) => c.key).sort());
    expectNoOracle(stored, creates);
    // The key is sealed like the secrets: a copy of the database without the secrets key holds none.
    expect(await storedKey(place)).toMatch(new RegExp(`^sealed:v1:${k1.key.id}:`));

    server = await serve(place, [k1]);
    try {
      await expectReplays(server, creates);
    } finally {
      await server.close();
    }
    for (const [from, to] of [
      [k1, k2],
      [k2, k3],
    ] as const) {
      const out = await rotate(place, from, to);
      expect([out.code, out.stderr]).toEqual([0, ""]);
      expect(await storedKey(place)).toMatch(new RegExp(`^sealed:v1:${to.key.id}:`));
      server = await serve(place, [to]);
      try {
        await expectReplays(server, creates);
      } finally {
        await server.close();
      }
    }
    // The fingerprints themselves never change: only the key's seal does.
    expect(await storedRequests(place)).toEqual(stored);
  });

  it("in a store that seals nothing, the key is stored as it is, beside the plaintext secrets", async () => {
    const place = await makePlace();
    const server = await serve(place, []);
    try {
      const creates = await createAll(server, "plain");
      expectNoOracle(await storedRequests(place), creates);
    } finally {
      await server.close();
    }
    expect(Buffer.from((await storedKey(place))!, "base64")).toHaveLength(32);
    // Sealing the store (rotate from no key) seals the key with the secrets.
    const k = newKey();
    const out = await runCli(["secrets", "rotate", "--to-key-file", k.file, ...place.flags]);
    expect([out.code, out.stderr]).toEqual([0, ""]);
    expect(await storedKey(place)).toMatch(new RegExp(`^sealed:v1:${k.key.id}:`));
  });

  it("the upgrade keys the plain digests an earlier version kept: a repeat of those creates replays", async () => {
    const place = await makePlace();
    const k1 = newKey();
    let server = await serve(place, [k1]);
    let creates: Create[];
    try {
      creates = await createAll(server, "old");
    } finally {
      await server.close();
    }
    await asWrittenBeforeKeyedFingerprints(place, creates);
    const before = await storedRequests(place);
    for (const c of creates) expect(before[c.key]).toBe(oracle(c)); // the oracle, as the issue found it

    server = await serve(place, [k1]);
    try {
      expectNoOracle(await storedRequests(place), creates);
      await expectReplays(server, creates);
    } finally {
      await server.close();
    }
    expect(await storedKey(place)).toMatch(new RegExp(`^sealed:v1:${k1.key.id}:`));
  });
});

describe("PostgreSQL replicas started together on a new database", () => {
  it("agree on one key: a create through one replays through each other", async () => {
    const place = await postgresPlace();
    const k1 = newKey();
    // Started at once: each open makes the key unless another's open made it first.
    const replicas = await Promise.all([serve(place, [k1]), serve(place, [k1]), serve(place, [k1])]);
    try {
      const creates = await createAll(replicas[0]!, "together");
      for (const r of replicas) await expectReplays(r, creates);
      expect(await queryPlace(place, `SELECT value FROM meta WHERE key = '${FINGERPRINT_KEY}'`)).toHaveLength(
        1,
      );
    } finally {
      for (const r of replicas) await r.close();
    }
  });
});

describe("edge-service migrate carries the fingerprint key", () => {
  it("a repeat of a create made on SQLite replays on PostgreSQL; another body is a 400", async () => {
    const source = await sqlitePlace();
    const k1 = newKey();
    let server = await serve(source, [k1]);
    let creates: Create[];
    try {
      creates = await createAll(server, "m");
    } finally {
      await server.close();
    }
    const target: Place = { ...(await postgresPlace()), dataDir: source.dataDir };
    const migrate = () =>
      runCli([
        "migrate",
        "--from",
        source.dataDir,
        "--to",
        target.databaseUrl!,
        "--secrets-key-file",
        k1.file,
      ]);
    // A server running on the target holds its own key from its start: the copy waits for it to stop.
    const early = await serve(target, [k1]);
    try {
      const refused = await migrate();
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`a server is running on the target database (`);
      expect(refused.stderr).toContain(`(${early.url})`);
    } finally {
      await early.close();
    }
    const out = await migrate();
    expect([out.code, out.stderr]).toEqual([0, ""]);
    expect(await storedRequests(target)).toEqual(await storedRequests(source));
    expect(await storedKey(target)).toMatch(new RegExp(`^sealed:v1:${k1.key.id}:`));
    server = await serve(target, [k1]);
    try {
      await expectReplays(server, creates);
    } finally {
      await server.close();
    }
  });
});

/**
 * The store as the version before keyed fingerprints left it: its schema (SQLite 7, PostgreSQL 5),
 * each keyed create's request kept as its plain SHA-256 (base64), no fingerprint key. The rows
 * are today's (written by the service); only what that version did not have is taken back.
 */
async function asWrittenBeforeKeyedFingerprints(place: Place, creates: Create[]): Promise<void> {
  const version = (place.kind === "sqlite" ? KEYED_FINGERPRINTS_SCHEMA : PG_KEYED_FINGERPRINTS_SCHEMA) - 1;
  const statements: Array<[string, string[]]> = creates.map((c) => [
    `UPDATE ${c.table} SET create_request = $1 WHERE create_key = $2`,
    [oracle(c), c.key],
  ]);
  statements.push([`DELETE FROM meta WHERE key = '${FINGERPRINT_KEY}'`, []]);
  statements.push(["UPDATE meta SET value = $1 WHERE key = 'schema_version'", [String(version)]]);
  statements.push(["DROP TABLE IF EXISTS servers", []]); // a later schema's, made again by its migration
  if (place.kind === "sqlite") {
    const db = new Database(path.join(place.dataDir, "edge.db"));
    try {
      for (const [sql, args] of statements) db.prepare(sql.replace(/\$(\d)/g, "?$1")).run(...args);
    } finally {
      db.close();
    }
    return;
  }
  const client = new Client({ connectionString: place.databaseUrl });
  await client.connect();
  try {
    for (const [sql, args] of statements) await client.query(sql, args);
  } finally {
    await client.end();
  }
}
