/**
 * Data at rest (issue 19, item 2): the data directory 0700 and its files 0600 (new, and tightened
 * on upgrade); secrets sealed with the service's key on both stores, with the API answering what
 * it did; plaintext rows of before the key still read and sealed on the next write;
 * `edge-service secrets rotate` re-sealing in one transaction, refusing a wrong old key; the
 * warning of a service without a key; a wrong key refused at start.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { EdgeClient } from "../../sdk/client";
import type { Route } from "../../sdk/contract";
import { Secrets, SecretsKey, UNSEALED_WARNING } from "../../service/secrets";
import { startServer } from "../../service/http/server";
import { SqliteStore } from "../../service/store/store-sqlite";
import { httpTransport } from "../../sdk/transport";
import { ensureBuilt, killClis, NO_DRAIN, spawnCli, startCli } from "../support/edge-service";
import { storeFingerprint } from "../support/fingerprint";
import { IDP_METADATA } from "./helpers";
import { type Key, newKey as newKeyIn, type Place, placesOf, runCli, tempDirs } from "./sealed-store";

const WEBHOOK_SECRET = "whsec-PLAINTEXT-7f3a91";
const OAUTH_SECRET = "oauth-PLAINTEXT-c0ffee";
const OIDC_SECRET = "oidc-PLAINTEXT-5eed42";
const PLAINTEXTS = [WEBHOOK_SECRET, OAUTH_SECRET, OIDC_SECRET];

const ROUTES = [
  {
    match_type: "path_prefix",
    match: "/wh",
    webhook_verification: { provider: "github", secret: WEBHOOK_SECRET },
  },
  {
    match_type: "path_prefix",
    match: "/oauth",
    oauth: { provider: { github: { client_id: "gh-id", client_secret: OAUTH_SECRET, teams: ["a/b"] } } },
  },
  {
    match_type: "path_prefix",
    match: "/oidc",
    oidc: { issuer: "https://idp.example.com", client_id: "oidc-id", client_secret: OIDC_SECRET },
  },
  { match_type: "path_prefix", match: "/saml", saml: { idp_metadata: IDP_METADATA } },
  // A client's secret that looks like a sealed value is stored (and answered) as given.
  {
    match_type: "path_prefix",
    match: "/lookalike",
    webhook_verification: { provider: "stripe", secret: "sealed:v1:0000000000000000:AAAA:BBBB" },
  },
];

const dirs = tempDirs();
const tempDir = dirs.make;
afterAll(() => {
  killClis();
  dirs.removeAll();
});

const newKey = (): Key => newKeyIn(tempDir);

const mode = (p: string) => fs.statSync(p).mode & 0o777;

const { sqlite: sqlitePlace, postgres: postgresPlace } = placesOf(tempDir, "sealed");

/** The stored columns that hold secrets, and the meta table, read straight from the database. */
async function rawRows(place: Place): Promise<{ modules: string[]; privateKeys: string[]; keyId?: string }> {
  const queries = {
    modules: "SELECT modules AS v FROM routes ORDER BY seq",
    privateKeys: "SELECT private_key_pem AS v FROM route_saml_keys ORDER BY route_id",
    keyId: "SELECT value AS v FROM meta WHERE key = 'secrets_key_id'",
  };
  if (place.kind === "sqlite") {
    const db = new Database(path.join(place.dataDir, "edge.db"));
    try {
      const all = (sql: string) => (db.prepare(sql).all() as Array<{ v: string }>).map((r) => r.v);
      return {
        modules: all(queries.modules),
        privateKeys: all(queries.privateKeys),
        keyId: all(queries.keyId)[0],
      };
    } finally {
      db.close();
    }
  }
  const client = new Client({ connectionString: place.databaseUrl });
  await client.connect();
  try {
    const all = async (sql: string) => (await client.query<{ v: string }>(sql)).rows.map((r) => r.v);
    return {
      modules: await all(queries.modules),
      privateKeys: await all(queries.privateKeys),
      keyId: (await all(queries.keyId))[0],
    };
  } finally {
    await client.end();
  }
}

/** A server on `place` with `key` (none: unsealed), and a client of it. */
async function serve(place: Place, key?: SecretsKey) {
  const lines: string[] = [];
  const server = await startServer({
    dataDir: place.dataDir,
    databaseUrl: place.databaseUrl,
    port: 0,
    secretsKey: key,
    log: (line) => lines.push(line),
  });
  const client = new EdgeClient(httpTransport({ baseUrl: server.url, retries: 0 }));
  return { server, client, lines };
}

/** Creates an edge with ROUTES; returns its id and the routes as the POSTs answered them. */
async function seed(client: EdgeClient): Promise<{ edgeId: string; created: Route[] }> {
  const edge = await client.createHttpsEdge({ description: "secrets" });
  const created: Route[] = [];
  for (const body of ROUTES) created.push(await client.createRoute(edge.id, body as never));
  return { edgeId: edge.id, created };
}

/** The routes of the edge as the API answers them, Refs rebased onto one origin. */
async function answers(client: EdgeClient, edgeId: string, origin: string): Promise<unknown> {
  const list = await client.listRoutes(edgeId);
  return JSON.parse(JSON.stringify(list).split(origin).join("http://origin"));
}

/** The seeded routes' secrets, echoed as the real API does (docs/decisions.md#shapes). */
function echoedSecrets(routes: Route[]): string[] {
  return [
    routes[0]!.webhook_verification!.secret,
    routes[1]!.oauth!.provider.github!.client_secret,
    routes[2]!.oidc!.client_secret,
  ];
}

describe("file modes of the SQLite data directory", () => {
  it("a new data directory is 0700, its database files 0600, whatever the umask", async () => {
    const parent = tempDir("modes");
    const dataDir = path.join(parent, "data");
    const umask = process.umask(0o002); // group-writable by default: must not leak into our files
    let store: SqliteStore;
    try {
      store = SqliteStore.open(dataDir);
    } finally {
      process.umask(umask);
    }
    try {
      await store.write(async (tx) => {
        await tx.insertEdge({
          id: "edghts_1",
          kind: "https",
          description: "",
          metadata: "",
          hostports: [],
          created_at: new Date().toISOString(),
        });
      });
      expect(mode(dataDir).toString(8)).toBe("700");
      const files = fs.readdirSync(dataDir).sort();
      expect(files).toEqual(["edge.db", "edge.db-shm", "edge.db-wal"]);
      for (const f of files) expect([f, mode(path.join(dataDir, f)).toString(8)]).toEqual([f, "600"]);
    } finally {
      store.close();
    }
  });

  it("an existing 0755 directory with 0644 files (an older version's) is tightened at open", () => {
    const dataDir = tempDir("upgrade");
    // What the previous version left: a database in WAL mode, files world-readable.
    const old = new Database(path.join(dataDir, "edge.db"));
    old.pragma("journal_mode = WAL");
    old.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
    const files = ["edge.db", "edge.db-wal", "edge.db-shm"].map((f) => path.join(dataDir, f));
    for (const f of files) fs.chmodSync(f, 0o644);
    fs.chmodSync(dataDir, 0o755);
    const store = SqliteStore.open(dataDir);
    try {
      expect(mode(dataDir).toString(8)).toBe("700");
      for (const f of files) expect([f, mode(f).toString(8)]).toEqual([f, "600"]);
    } finally {
      store.close();
      old.close();
    }
  });

  it("refuses a shared directory (sticky bit, like /tmp) rather than closing it", () => {
    const dataDir = tempDir("sticky");
    fs.chmodSync(dataDir, 0o1777);
    expect(() => SqliteStore.open(dataDir)).toThrow(/shared directory.*--data/);
    expect(mode(dataDir).toString(8)).toBe("777");
  });
});

describe.each([
  ["SQLite", sqlitePlace],
  ["PostgreSQL", postgresPlace],
])("secrets at rest on %s", (_name, makePlace) => {
  it("are sealed in the rows, under the key's id, and the API answers them as before", async () => {
    const { key } = newKey();
    // The same requests against a service without a key: what the API answered before.
    const plainPlace = await makePlace();
    const plain = await serve(plainPlace);
    let before: unknown;
    try {
      const { edgeId } = await seed(plain.client);
      before = await answers(plain.client, edgeId, plain.server.url);
      // Without a key the rows hold the secrets as they are (the control of the check below).
      const rows = await rawRows(plainPlace);
      for (const s of PLAINTEXTS) expect(rows.modules.join("\n")).toContain(s);
      expect(rows.privateKeys[0]).toContain("PRIVATE KEY");
    } finally {
      await plain.server.close();
    }

    const place = await makePlace();
    const sealed = await serve(place, key);
    try {
      const { edgeId, created } = await seed(sealed.client);
      expect(echoedSecrets(created)).toEqual(PLAINTEXTS);
      expect(created[4]!.webhook_verification!.secret).toBe("sealed:v1:0000000000000000:AAAA:BBBB");
      const after = await answers(sealed.client, edgeId, sealed.server.url);
      // Ids, times and the SAML certificate differ between the two services; nothing else does.
      const strip = (v: unknown) =>
        JSON.stringify(v)
          .replace(/"(id|edge_id|created_at|request_signing_certificate_pem)":"[^"]*"/g, '"$1":"…"')
          .replace(/(edghtsrt|edghts)_[A-Za-z0-9]+/g, "ID");
      expect(strip(after)).toBe(strip(before));
      expect(echoedSecrets((await sealed.client.listRoutes(edgeId)).routes.reverse())).toEqual(PLAINTEXTS);

      const rows = await rawRows(place);
      expect(rows.keyId).toBe(key.id);
      const text = rows.modules.join("\n");
      for (const s of PLAINTEXTS) expect(text).not.toContain(s);
      expect(text.match(new RegExp(`"sealed:v1:${key.id}:`, "g"))).toHaveLength(4);
      expect(rows.privateKeys).toHaveLength(1);
      expect(rows.privateKeys[0]).toMatch(new RegExp(`^sealed:v1:${key.id}:`));
      expect(rows.privateKeys[0]).not.toContain("PRIVATE KEY");
      if (place.kind === "sqlite") {
        // The database files themselves, byte for byte: no secret anywhere in them.
        const bytes = ["edge.db", "edge.db-wal"]
          .map((f) => path.join(place.dataDir, f))
          .filter((f) => fs.existsSync(f))
          .map((f) => fs.readFileSync(f).toString("latin1"))
          .join("");
        for (const s of [...PLAINTEXTS, "PRIVATE KEY"]) expect(bytes).not.toContain(s);
      }
    } finally {
      await sealed.server.close();
    }
  });

  it("reads the plaintext rows of before the key, and seals them on the next write", async () => {
    const place = await makePlace();
    const plain = await serve(place);
    const { edgeId, created } = await seed(plain.client);
    const before = await answers(plain.client, edgeId, plain.server.url);
    await plain.server.close();

    const { key } = newKey();
    const sealed = await serve(place, key);
    try {
      expect(sealed.lines).not.toContain(UNSEALED_WARNING);
      expect(await answers(sealed.client, edgeId, sealed.server.url)).toEqual(before);
      expect((await rawRows(place)).modules.join("\n")).toContain(OAUTH_SECRET);
      // A write of the route seals its secrets.
      await sealed.client.updateRoute(edgeId, created[1]!.id, { description: "touched" });
      const text = (await rawRows(place)).modules.join("\n");
      expect(text).not.toContain(OAUTH_SECRET);
      expect(text).toContain(WEBHOOK_SECRET); // not written since: still as it was
      const route = await sealed.client.getRoute(edgeId, created[1]!.id);
      expect(route.oauth!.provider.github!.client_secret).toBe(OAUTH_SECRET);
    } finally {
      await sealed.server.close();
    }
  });

  it("a wrong key, or none, is refused at start with what to do; the data is unchanged", async () => {
    const place = await makePlace();
    const { key } = newKey();
    const first = await serve(place, key);
    await seed(first.client);
    await first.server.close();
    const rows = await rawRows(place);

    await expect(serve(place, newKey().key)).rejects.toThrow(
      new RegExp(`sealed with secrets key ${key.id}, not with the key given .*secrets rotate`),
    );
    await expect(serve(place)).rejects.toThrow(
      new RegExp(`sealed with secrets key ${key.id}, and no key was given: give that key`),
    );
    expect(await rawRows(place)).toEqual(rows);
  });

  it("secrets rotate re-seals every value under the new key: the old one no longer opens them", async () => {
    ensureBuilt();
    const place = await makePlace();
    // Rows of before any key (plaintext), then rows sealed with the old key.
    const plain = await serve(place);
    const { edgeId: plainEdge } = await seed(plain.client);
    await plain.server.close();
    const oldKey = newKey();
    const first = await serve(place, oldKey.key);
    const { edgeId } = await seed(first.client);
    const before = {
      sealed: await answers(first.client, edgeId, first.server.url),
      plain: await answers(first.client, plainEdge, first.server.url),
    };
    await first.server.close();

    const newer = newKey();
    const out = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      oldKey.file,
      "--to-key-file",
      newer.file,
      ...place.flags,
    ]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    // 4 secrets per seed (3 client secrets, the look-alike) + 1 SAML key, twice.
    expect(out.stdout).toContain(`re-sealed 10 secrets of`);
    expect(out.stdout).toContain(`under secrets key ${newer.key.id} (was ${oldKey.key.id})`);

    const rows = await rawRows(place);
    expect(rows.keyId).toBe(newer.key.id);
    const text = rows.modules.join("\n") + rows.privateKeys.join("\n");
    for (const s of [...PLAINTEXTS, "PRIVATE KEY"]) expect(text).not.toContain(s);
    expect(text).not.toContain(oldKey.key.id);
    const values = [...rows.privateKeys, ...Array.from(text.matchAll(/"sealed":"([^"]+)"/g), (m) => m[1]!)];
    expect(values).toHaveLength(10);
    for (const v of values) {
      expect(v).toMatch(new RegExp(`^sealed:v1:${newer.key.id}:`));
      expect(() => new Secrets(oldKey.key).open(v, "v")).toThrow(/which this service was not given/);
      expect(() => new Secrets(newer.key).open(v, "v")).not.toThrow();
    }

    // The service does not start with the old key; with the new one it answers what it did.
    await expect(serve(place, oldKey.key)).rejects.toThrow(/not with the key given/);
    const after = await serve(place, newer.key);
    try {
      expect(await answers(after.client, edgeId, after.server.url)).toEqual(before.sealed);
      expect(await answers(after.client, plainEdge, after.server.url)).toEqual(before.plain);
    } finally {
      await after.server.close();
    }
  });

  it("secrets rotate with a wrong old key, or a value it cannot open, refuses and changes nothing", async () => {
    ensureBuilt();
    const place = await makePlace();
    const oldKey = newKey();
    const first = await serve(place, oldKey.key);
    const { edgeId } = await seed(first.client);
    await seed(first.client);
    const stored = await storeFingerprint(first.server.store);
    const rows = await rawRows(place);
    await first.server.close();
    const unchanged = async () => {
      const s = await serve(place, oldKey.key);
      try {
        expect(await storeFingerprint(s.server.store)).toBe(stored);
      } finally {
        await s.server.close();
      }
      expect(await rawRows(place)).toEqual(rows);
    };

    const wrong = newKey();
    const target = newKey();
    const refused = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      wrong.file,
      "--to-key-file",
      target.file,
      ...place.flags,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /secrets rotate refused, nothing was changed: the old key .* does not open/,
    );
    expect(refused.stderr).toContain(`--from-key-file`);
    await unchanged();

    // One value the old key does not open (altered), in the last route written that holds one:
    // the re-sealing of the rows before it is rolled back with it.
    const last = rows.modules.filter((m) => m.includes('"sealed":"sealed:v1:')).at(-1)!;
    const altered = last.replace(
      /("sealed":"sealed:v1:[0-9a-f]+:[^:]+:)(.)/,
      (_m, head: string, c: string) => head + (c === "A" ? "B" : "A"),
    );
    expect(altered).not.toBe(last);
    await setModules(place, last, altered);
    const tamperedRows = await rawRows(place);
    const broken = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      oldKey.file,
      "--to-key-file",
      target.file,
      ...place.flags,
    ]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/refused, nothing was changed.*does not open with secrets key/);
    expect(await rawRows(place)).toEqual(tamperedRows);
    expect(edgeId).toBeTruthy();
  });
});

/** Rewrites one route's modules column as it is stored (a test's tampering). */
async function setModules(place: Place, from: string, to: string): Promise<void> {
  if (place.kind === "sqlite") {
    const db = new Database(path.join(place.dataDir, "edge.db"));
    try {
      expect(db.prepare("UPDATE routes SET modules = ? WHERE modules = ?").run(to, from).changes).toBe(1);
    } finally {
      db.close();
    }
    return;
  }
  const client = new Client({ connectionString: place.databaseUrl });
  await client.connect();
  try {
    expect(
      (await client.query("UPDATE routes SET modules = $1 WHERE modules = $2", [to, from])).rowCount,
    ).toBe(1);
  } finally {
    await client.end();
  }
}

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, env, 60_000);

describe("edge-service serve and its secrets key", () => {
  beforeAll(() => ensureBuilt());

  it("says at start, in one line on stderr, that secrets are stored unsealed without a key", async () => {
    const dataDir = tempDir("warn");
    const p = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir], { EDGE_SECRETS_KEY: "" });
    try {
      await waitFor(() => p.stderr().includes("stored unsealed"));
      const lines = p
        .stderr()
        .split("\n")
        .filter((l) => l.includes("secrets"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(UNSEALED_WARNING);
    } finally {
      p.child.kill("SIGTERM");
      await p.exit;
    }
  });

  it("with EDGE_SECRETS_KEY or --secrets-key-file says nothing of the kind, and seals", async () => {
    const { base64, file, key } = newKey();
    for (const [args, env] of [
      [[], { EDGE_SECRETS_KEY: base64 }],
      [["--secrets-key-file", file], { EDGE_SECRETS_KEY: "" }],
    ] as Array<[string[], Record<string, string>]>) {
      const place: Place = { kind: "sqlite", dataDir: tempDir("keyed"), flags: [] };
      const p = await startCli(["--port", "0", ...NO_DRAIN, "--data", place.dataDir, ...args], env);
      try {
        const client = new EdgeClient(httpTransport({ baseUrl: p.url, retries: 0 }));
        await seed(client);
        expect(p.stderr()).not.toContain("unsealed");
        expect((await rawRows(place)).keyId).toBe(key.id);
      } finally {
        p.child.kill("SIGTERM");
        await p.exit;
      }
    }
  });

  it("refuses to start with a key that is not the data's, or a malformed one, saying what to do", async () => {
    const dataDir = tempDir("wrongkey");
    const { base64 } = newKey();
    const first = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir], {
      EDGE_SECRETS_KEY: base64,
    });
    first.child.kill("SIGTERM");
    await first.exit;

    const wrong = spawnCli(["--port", "0", "--data", dataDir], { EDGE_SECRETS_KEY: newKey().base64 });
    expect((await wrong.exit).code).toBe(1);
    expect(wrong.stderr()).toMatch(
      /not with the key given .*give the key they were sealed with .*secrets rotate/,
    );

    const malformed = spawnCli(["--port", "0", "--data", dataDir], { EDGE_SECRETS_KEY: "too-short" });
    expect((await malformed.exit).code).toBe(1);
    expect(malformed.stderr()).toContain("EDGE_SECRETS_KEY must hold a key of 32 bytes, base64-encoded");
  });
});

async function waitFor(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}
