/**
 * Rotation that cannot break a store, and sealed means gone (issue 26, items 3 and 4), against
 * the compiled CLI (real processes, real files, a real PostgreSQL):
 * - `secrets rotate` while servers write: no write is sealed under the old key after it, no 500;
 *   a server given only the old key answers 503 naming the new one, and the store stays whole;
 * - two PostgreSQL replicas rolled one at a time onto the new key while writers write;
 * - a store left with values under two keys (what a rotation under load did before) is refused
 *   at start with the missing key named, and `rotate` given both keys repairs it;
 * - after sealing and after rotating, no byte of the plaintext nor of an old ciphertext in any
 *   file of the data directory.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import Database from "libsql";
import { Client } from "pg";
import { EdgeApiError, EdgeClient } from "../../sdk/client";
import type { Route } from "../../sdk/contract";
import { Secrets, SecretsKey } from "../../service/secrets";
import { httpTransport } from "../../sdk/transport";
import { ensureBuilt, killClis, NO_DRAIN, spawnCli, startCli, type Cli } from "../support/edge-service";
import { IDP_METADATA } from "./helpers";
import {
  type Key,
  newKey as newKeyIn,
  type Place,
  placesOf,
  queryPlace,
  runCli,
  tempDirs,
} from "./sealed-store";

jest.setTimeout(600_000);

const dirs = tempDirs();
const tempDir = dirs.make;
beforeAll(() => ensureBuilt());
afterAll(() => {
  killClis();
  dirs.removeAll();
});

const newKey = (): Key => newKeyIn(tempDir);
const { sqlite: sqlitePlace, postgres: postgresPlace } = placesOf(tempDir, "rotation");
const PLACES: Array<[string, () => Promise<Place>]> = [
  ["SQLite", sqlitePlace],
  ["PostgreSQL", postgresPlace],
];

const query = queryPlace;

/** Every sealed value stored (modules' sealed fields and SAML private keys). */
async function sealedValues(place: Place): Promise<string[]> {
  const modules = await query(place, "SELECT modules AS v FROM routes");
  const keys = await query(place, "SELECT private_key_pem AS v FROM route_saml_keys");
  return [
    ...modules.flatMap((r) => Array.from(r.v!.matchAll(/"sealed":"([^"]+)"/g), (m) => m[1]!)),
    ...keys.map((r) => r.v!),
  ];
}

/** The key ids the stored values are sealed under, with how many each. */
async function keyIdsInUse(place: Place): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of await sealedValues(place)) {
    const kid = /^sealed:v1:([0-9a-f]+):/.exec(v)?.[1] ?? "plaintext";
    out[kid] = (out[kid] ?? 0) + 1;
  }
  return out;
}

const cli = (args: string[]) => runCli(args);

const keyFlags = (keys: Key[]) => keys.flatMap((k) => ["--secrets-key-file", k.file]);

/** `edge-service serve` on `place` with the key ring `keys` (stopped with nothing in flight: no drain). */
function serve(place: Place, keys: Key[]): Promise<Cli> {
  return startCli(["--port", "0", ...NO_DRAIN, ...place.flags, ...keyFlags(keys)], { EDGE_SECRETS_KEY: "" });
}
/**
 * `serve` that is expected to refuse to start: its exit code and stderr. One that starts after
 * all is stopped within 60 s (its code then null), so a regression fails rather than hangs.
 */
async function startRefused(place: Place, keys: Key[]): Promise<{ code: number | null; stderr: string }> {
  const p = spawnCli(["--port", "0", ...place.flags, ...keyFlags(keys)], { EDGE_SECRETS_KEY: "" });
  const timer = setTimeout(() => p.child.kill("SIGKILL"), 60_000);
  const { code } = await p.exit;
  clearTimeout(timer);
  return { code, stderr: p.stderr() };
}
async function stop(p: Cli): Promise<void> {
  p.child.kill("SIGTERM");
  await p.exit;
}
const clientOf = (url: string) => new EdgeClient(httpTransport({ baseUrl: url, retries: 0 }));

/** A route body with a webhook secret (and, every fifth, a SAML module: a private key to seal). */
function routeBody(match: string, secret: string, saml: boolean) {
  return {
    match_type: "path_prefix",
    match,
    webhook_verification: { provider: "github", secret },
    ...(saml ? { saml: { idp_metadata: IDP_METADATA } } : {}),
  } as never;
}

/**
 * Writers that create routes with a secret and change earlier routes' secrets, through the
 * replicas `urls()` names at each request, until `stopWhen()` (bounded: 4,000 requests each, 240 s),
 * 10 ms apart: a replica's stop drains its keep-alive connections for seconds meanwhile, and
 * unpaced writers would spend their bound before the test is done.
 * The secret each route holds last, and every answer's status (an error's message kept).
 */
class Writers {
  readonly secrets = new Map<string, string>();
  readonly statuses: number[] = [];
  readonly errors: string[] = [];
  /** Requests in flight per base URL (a replica is stopped only when none is). */
  readonly inFlight = new Map<string, number>();
  private done = false;
  private runs: Array<Promise<void>> = [];
  private n = 0;

  constructor(
    private readonly edgeId: string,
    private readonly urls: () => string[],
  ) {}

  start(count = 2): void {
    for (let w = 0; w < count; w++) this.runs.push(this.run(w));
  }

  /** Resolves once `more` further answers have arrived. */
  async progress(more: number): Promise<void> {
    const target = this.statuses.length + more;
    const end = Date.now() + 120_000;
    while (this.statuses.length < target) {
      if (Date.now() > end) throw new Error(`writers made no progress: ${this.errors.slice(-3).join("; ")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async idle(url: string): Promise<void> {
    const end = Date.now() + 60_000;
    while ((this.inFlight.get(url) ?? 0) > 0) {
      if (Date.now() > end) throw new Error(`requests to ${url} never finished`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async stop(): Promise<void> {
    this.done = true;
    await Promise.all(this.runs);
  }

  private async run(w: number): Promise<void> {
    const end = Date.now() + 240_000;
    const mine: string[] = [];
    for (let i = 0; i < 4000 && !this.done && Date.now() < end; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 10));
      const urls = this.urls();
      const url = urls[(i + w) % urls.length]!;
      this.inFlight.set(url, (this.inFlight.get(url) ?? 0) + 1);
      const secret = `whsec-${w}-${i}-${randomBytes(6).toString("hex")}`;
      try {
        const client = clientOf(url);
        if (i % 3 === 2 && mine.length > 0) {
          const id = mine[i % mine.length]!;
          await client.updateRoute(this.edgeId, id, {
            webhook_verification: { provider: "github", secret },
          } as never);
          this.secrets.set(id, secret);
        } else {
          const route = await client.createRoute(
            this.edgeId,
            routeBody(`/w${w}/${++this.n}`, secret, i % 5 === 0),
          );
          mine.push(route.id);
          this.secrets.set(route.id, secret);
        }
        this.statuses.push(200);
      } catch (e) {
        this.statuses.push(e instanceof EdgeApiError ? e.status : -1);
        this.errors.push(e instanceof Error ? e.message : String(e));
      } finally {
        this.inFlight.set(url, this.inFlight.get(url)! - 1);
      }
    }
  }
}

/** Every route of the edge read through `url`: the secret each answers. */
async function secretsRead(url: string, edgeId: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const r of clientOf(url).allRoutes(edgeId)) {
    out.set(r.id, (r as Route).webhook_verification?.secret ?? "");
  }
  return out;
}

/** Every file of a directory (the database, its WAL, shm and journal, whatever is there), as bytes. */
function filesOf(dir: string): Array<[string, Buffer]> {
  return fs
    .readdirSync(dir)
    .map((f) => path.join(dir, f))
    .filter((f) => fs.statSync(f).isFile())
    .map((f) => [path.basename(f), fs.readFileSync(f)]);
}
/** The needles found in any file of `dir`, each with the files holding it. */
function foundIn(dir: string, needles: string[]): string[] {
  const files = filesOf(dir);
  return needles.flatMap((n) => {
    const holding = files.filter(([, b]) => b.includes(Buffer.from(n))).map(([f]) => f);
    return holding.length > 0 ? [`${n} in ${holding.join(", ")}`] : [];
  });
}

describe.each(PLACES)("secrets rotate while a server writes, on %s", (_name, makePlace) => {
  it("servers given both keys: no failed write, every value under the new key after it", async () => {
    const place = await makePlace();
    const [oldKey, newer] = [newKey(), newKey()];
    // The store records the ring's first key as the one it seals under; the second only opens.
    const server = await serve(place, [oldKey, newer]);
    const edge = await clientOf(server.url).createHttpsEdge({ description: "rotation" });
    const writers = new Writers(edge.id, () => [server.url]);
    writers.start();
    try {
      await writers.progress(20);
      expect(Object.keys(await keyIdsInUse(place))).toEqual([oldKey.key.id]);
      const rotated = await cli([
        "secrets",
        "rotate",
        "--from-key-file",
        oldKey.file,
        "--to-key-file",
        newer.file,
        ...place.flags,
      ]);
      expect(rotated.stderr).toBe("");
      expect(rotated.code).toBe(0);
      expect(rotated.stdout).toContain(`under secrets key ${newer.key.id} (was ${oldKey.key.id})`);
      // What is true of the one live server: it holds the new key.
      expect(rotated.stdout).toContain(`1 live server seals under key ${newer.key.id} from now on`);
      await writers.progress(20);
    } finally {
      await writers.stop();
    }
    expect(writers.errors).toEqual([]);
    expect(writers.statuses.every((s) => s === 200)).toBe(true);
    // Nothing under the old key, though the server wrote throughout.
    expect(Object.keys(await keyIdsInUse(place))).toEqual([newer.key.id]);
    expect(await secretsRead(server.url, edge.id)).toEqual(writers.secrets);
    await stop(server);

    // Restarted with the new key alone: it starts, and answers every value.
    const after = await serve(place, [newer]);
    try {
      expect(await secretsRead(after.url, edge.id)).toEqual(writers.secrets);
    } finally {
      await stop(after);
    }
    if (place.kind === "sqlite") {
      // The old key's ciphertexts are nowhere in the files, nor the plaintexts.
      expect(foundIn(place.dataDir, [`sealed:v1:${oldKey.key.id}:`, ...writers.secrets.values()])).toEqual(
        [],
      );
    }
  });

  it("a server given only the old key (rotate --force) answers 503 naming the new one, never 500; the store stays whole", async () => {
    const place = await makePlace();
    const [oldKey, newer] = [newKey(), newKey()];
    const server = await serve(place, [oldKey]);
    const edge = await clientOf(server.url).createHttpsEdge({ description: "rotation" });
    const writers = new Writers(edge.id, () => [server.url]);
    writers.start();
    let before: number;
    try {
      await writers.progress(20);
      const rotated = await cli([
        "secrets",
        "rotate",
        "--from-key-file",
        oldKey.file,
        "--to-key-file",
        newer.file,
        ...place.flags,
        // The server lacks the new key: refused without (see rotate-live-servers.test.ts).
        "--force",
      ]);
      expect(rotated.code).toBe(0);
      expect(rotated.stdout).toContain("1 live server lacks it (--force) and answers 503, not ready");
      before = writers.statuses.length;
      await writers.progress(10);
    } finally {
      await writers.stop();
    }
    // Every write after the rotation was refused, as 503, naming the key to give.
    const after = writers.statuses.slice(before + 2); // up to one in flight per writer at the commit
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(after)).toEqual(new Set([503]));
    expect(writers.statuses).not.toContain(500);
    expect(writers.errors.at(-1)).toContain(`secrets key ${newer.key.id}`);
    await expect(clientOf(server.url).listRoutes(edge.id)).rejects.toMatchObject({ status: 503 });
    await stop(server);
    expect(Object.keys(await keyIdsInUse(place))).toEqual([newer.key.id]);

    // The old key alone is refused at start, naming the missing key; the new one serves it all.
    const refused = await startRefused(place, [oldKey]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`sealed with secrets key ${newer.key.id}, not with the key given`);
    const fixed = await serve(place, [newer]);
    try {
      expect(await secretsRead(fixed.url, edge.id)).toEqual(writers.secrets);
    } finally {
      await stop(fixed);
    }
  });
});

describe("two PostgreSQL replicas rolled onto a new key while writers write", () => {
  it("keys added, rotated, old key dropped, one replica at a time: no 500, every value readable", async () => {
    const place = await postgresPlace();
    const [oldKey, newer] = [newKey(), newKey()];
    const replicas: Array<Cli | undefined> = [await serve(place, [oldKey]), await serve(place, [oldKey])];
    const live = () => replicas.filter((r): r is Cli => r !== undefined).map((r) => r.url);
    const edge = await clientOf(live()[0]!).createHttpsEdge({ description: "rolling" });
    const writers = new Writers(edge.id, live);
    writers.start(3);
    /** Replaces replica `i` by one with `keys`, the writers kept off it meanwhile. */
    const roll = async (i: number, keys: Key[]) => {
      const r = replicas[i]!;
      replicas[i] = undefined;
      await writers.idle(r.url);
      await stop(r);
      replicas[i] = await serve(place, keys);
      await writers.progress(10);
    };
    try {
      await writers.progress(20);
      // 1. Every replica given both keys (the store still names the old one: they seal under it).
      await roll(0, [oldKey, newer]);
      await roll(1, [oldKey, newer]);
      // 2. The rotation, writers writing through both replicas.
      const rotated = await cli([
        "secrets",
        "rotate",
        "--from-key-file",
        oldKey.file,
        "--to-key-file",
        newer.file,
        ...place.flags,
      ]);
      expect(rotated.code).toBe(0);
      await writers.progress(20);
      expect(Object.keys(await keyIdsInUse(place))).toEqual([newer.key.id]);
      // 3. The old key dropped.
      await roll(0, [newer]);
      await roll(1, [newer]);
    } finally {
      await writers.stop();
    }
    expect(writers.errors).toEqual([]);
    expect(writers.statuses.length).toBeGreaterThan(100);
    expect(writers.statuses.every((s) => s === 200)).toBe(true);
    for (const url of live()) expect(await secretsRead(url, edge.id)).toEqual(writers.secrets);
    expect(Object.keys(await keyIdsInUse(place))).toEqual([newer.key.id]);
    for (const r of replicas) if (r) await stop(r);
  });
});

describe.each(PLACES)("a store left with values under two keys, on %s", (_name, makePlace) => {
  it("is refused at start naming the missing key; secrets rotate given both keys repairs it", async () => {
    const place = await makePlace();
    const [k1, k2] = [newKey(), newKey()];
    const first = await serve(place, [k1]);
    const edge = await clientOf(first.url).createHttpsEdge({ description: "mixed" });
    const written = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      const secret = `whsec-mixed-${i}-${randomBytes(6).toString("hex")}`;
      const r = await clientOf(first.url).createRoute(edge.id, routeBody(`/m/${i}`, secret, i === 0));
      written.set(r.id, secret);
    }
    await stop(first);
    await mixUp(place, k1.key, k2.key);
    expect(await keyIdsInUse(place)).toEqual({ [k1.key.id]: 4, [k2.key.id]: 3 });

    // Neither key alone is enough, and the server says which one is missing before it serves.
    for (const [given, missing] of [
      [k2, k1],
      [k1, k2],
    ] as const) {
      const p = await startRefused(place, [given]);
      expect(p.code).toBe(1);
      expect(p.stderr).toContain(`sealed with secrets key ${missing.key.id}, not with the key given`);
    }
    // Rotating from one key alone refuses, changing nothing.
    const refused = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      k1.file,
      "--to-key-file",
      newKey().file,
      ...place.flags,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`refused, nothing was changed`);
    expect(refused.stderr).toContain(k2.key.id);
    expect(await keyIdsInUse(place)).toEqual({ [k1.key.id]: 4, [k2.key.id]: 3 });

    // The repair: both keys given, everything re-sealed under the newer.
    const repaired = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      k1.file,
      "--from-key-file",
      k2.file,
      "--to-key-file",
      k2.file,
      ...place.flags,
    ]);
    expect(repaired.stderr).toBe("");
    expect(repaired.code).toBe(0);
    expect(await keyIdsInUse(place)).toEqual({ [k2.key.id]: 7 });
    const whole = await serve(place, [k2]);
    try {
      expect(await secretsRead(whole.url, edge.id)).toEqual(written);
    } finally {
      await stop(whole);
    }
  });
});

describe("edge-service migrate of a store under two keys", () => {
  it("refuses a key ring that lacks one (nothing copied); with both, the copy needs both to serve", async () => {
    const place = await sqlitePlace();
    const [k1, k2] = [newKey(), newKey()];
    const first = await serve(place, [k1]);
    const edge = await clientOf(first.url).createHttpsEdge({ description: "mixed" });
    for (let i = 0; i < 4; i++) {
      await clientOf(first.url).createRoute(edge.id, routeBody(`/m/${i}`, `whsec-migrate-${i}`, false));
    }
    await stop(first);
    await mixUp(place, k1.key, k2.key);
    const target: Place = { ...(await postgresPlace()), dataDir: place.dataDir };
    const migrate = (keys: Key[]) =>
      cli(["migrate", "--from", place.dataDir, "--to", target.databaseUrl!, ...keyFlags(keys)]);

    const refused = await migrate([k2]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`sealed with secrets key ${k1.key.id}, not with the key given`);
    // Nothing was copied: migrate refuses a target that holds data, and the next one succeeds.
    const copied = await migrate([k2, k1]);
    expect(copied.stderr).toBe("");
    expect(copied.code).toBe(0);
    const alone = await startRefused(target, [k2]);
    expect(alone.code).toBe(1);
    expect(alone.stderr).toContain(`sealed with secrets key ${k1.key.id}, not with the key given`);
  });
});

/**
 * What a rotation under load left before the key ring: the first three sealed values re-sealed
 * under `to` behind the store's back, the meta naming `to`, and no list of the keys in use (an
 * earlier version kept none).
 */
async function mixUp(place: Place, from: SecretsKey, to: SecretsKey): Promise<void> {
  const open = new Secrets(from);
  const seal = new Secrets(to);
  const rows = await query(place, "SELECT id, modules FROM routes ORDER BY seq");
  let left = 3;
  const statements: Array<[string, string[]]> = [];
  for (const r of rows) {
    if (left === 0) break;
    const modules = r.modules!.replace(/"sealed":"([^"]+)"/, (_m, v: string) => {
      left--;
      return `"sealed":"${seal.seal(open.open(v, "test"))}"`;
    });
    statements.push(["UPDATE routes SET modules = $1 WHERE id = $2", [modules, r.id!]]);
  }
  statements.push(["UPDATE meta SET value = $1 WHERE key = 'secrets_key_id'", [to.id]]);
  statements.push(["DELETE FROM meta WHERE key = 'secrets_key_ids'", []]);
  if (place.kind === "sqlite") {
    const db = new Database(path.join(place.dataDir, "edge.db"));
    try {
      for (const [sql, args] of statements) db.prepare(sql.replace(/\$\d/g, "?")).run(...args);
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

describe("sealed means gone (SQLite): no old byte in any file of the data directory", () => {
  it("after sealing plaintext, then after rotating: neither the plaintext nor old ciphertext remains", async () => {
    const place = await sqlitePlace();
    const plain = await serve(place, []);
    const client = clientOf(plain.url);
    const edge = await client.createHttpsEdge({ description: "gone" });
    const secrets: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const secret = `whsec-PLAIN-${i}-${randomBytes(6).toString("hex")}`;
      secrets.push(secret);
      ids.push((await client.createRoute(edge.id, routeBody(`/g/${i}`, secret, i % 10 === 0))).id);
    }
    // Changed secrets leave their old values in freed space: these must go too.
    for (let i = 0; i < 10; i++) {
      const secret = `whsec-PLAIN-changed-${i}-${randomBytes(6).toString("hex")}`;
      secrets.push(secret);
      await client.updateRoute(edge.id, ids[i]!, {
        webhook_verification: { provider: "github", secret },
      } as never);
    }
    await stop(plain);
    // The control: unsealed, every secret is in the files (so the search below can fail).
    expect(foundIn(place.dataDir, secrets.slice(10))).toHaveLength(30);
    expect(foundIn(place.dataDir, ["PRIVATE KEY"]).length).toBeGreaterThan(0);

    const k1 = newKey();
    const sealed = await cli(["secrets", "rotate", "--to-key-file", k1.file, ...place.flags]);
    expect(sealed.stderr).toBe("");
    expect(sealed.code).toBe(0);
    expect(sealed.stdout).toContain("WAL emptied");
    expect(foundIn(place.dataDir, [...secrets, "PRIVATE KEY"])).toEqual([]);

    // The ciphertexts under k1 (a fragment of each), then rotated to k2.
    const old = await sealedValues(place);
    expect(old).toHaveLength(33); // 30 webhook secrets, 3 SAML private keys
    const fragments = old.map((v) => v.split(":").at(-1)!.slice(0, 24));
    expect(foundIn(place.dataDir, fragments)).toHaveLength(33); // the control
    const k2 = newKey();
    const rotated = await cli([
      "secrets",
      "rotate",
      "--from-key-file",
      k1.file,
      "--to-key-file",
      k2.file,
      ...place.flags,
    ]);
    expect(rotated.code).toBe(0);
    expect(
      foundIn(place.dataDir, [`sealed:v1:${k1.key.id}:`, ...fragments, ...secrets, "PRIVATE KEY"]),
    ).toEqual([]);
    const after = await serve(place, [k2]);
    try {
      const read = await secretsRead(after.url, edge.id);
      expect([...read.values()].sort()).toEqual([...secrets.slice(30), ...secrets.slice(10, 30)].sort());
    } finally {
      await stop(after);
    }
  });
});
