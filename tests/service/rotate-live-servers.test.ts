/**
 * Readiness that agrees with what requests get, and a rotation that knows the live servers
 * (issue 35, finding 7). A server that lacks the key the store's secrets are sealed under (moved
 * by `secrets rotate` while it ran) answers 503 to every request that seals or opens one: its
 * `/readyz` says 503 too, the reason logged once, and 200 once restarted with the key. Each server
 * records in the store that it is alive and which keys it holds; `secrets rotate` refuses while a
 * live one lacks the new key, naming it, unless `--force`, and its closing message says which live
 * servers seal under the new key. The compiled CLI on both stores, and two PostgreSQL replicas.
 */
import { hostname } from "node:os";
import { startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import {
  type Cli,
  ensureBuilt,
  killClis,
  linesWith,
  loggedLines,
  NO_DRAIN,
  startCli,
} from "../support/edge-service";
import { raw } from "./helpers";
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
afterAll(() => {
  killClis();
  dirs.removeAll();
});

const newKey = (): Key => newKeyIn(dirs.make);
const { sqlite: sqlitePlace, postgres: postgresPlace } = placesOf(dirs.make, "live");
const PLACES: Array<[string, () => Promise<Place>]> = [
  ["SQLite", sqlitePlace],
  ["PostgreSQL", postgresPlace],
];

/** A server a test stops only between its own requests (no drain to wait out). */
const serve = (place: Place, keys: Key[]): Promise<Cli> =>
  startCli([
    "--port",
    "0",
    ...NO_DRAIN,
    ...place.flags,
    ...keys.flatMap((k) => ["--secrets-key-file", k.file]),
  ]);

async function stop(cli: Cli): Promise<void> {
  cli.child.kill("SIGTERM");
  await cli.exit;
}

const rotate = (place: Place, from: Key, to: Key, ...more: string[]) =>
  runCli([
    "secrets",
    "rotate",
    "--from-key-file",
    from.file,
    "--to-key-file",
    to.file,
    ...place.flags,
    ...more,
  ]);

const readyz = async (cli: Cli) =>
  (await raw(httpTransport({ baseUrl: cli.url, retries: 0 }), "GET", "/readyz")).status;

/** Asks `/readyz` until it answers `status` (bounded: a result is reused for a second). */
async function readyzUntil(cli: Cli, status: number): Promise<number> {
  const end = Date.now() + 20_000;
  for (;;) {
    const got = await readyz(cli);
    if (got === status || Date.now() > end) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const keyIdOf = async (place: Place) =>
  (await queryPlace(place, "SELECT value FROM meta WHERE key = 'secrets_key_id'"))[0]?.value;

describe.each(PLACES)("a server without the store's sealing key, on %s", (_name, makePlace) => {
  it("answers /readyz 503 (the reason logged once), and 200 once restarted with the key", async () => {
    const place = await makePlace();
    const [oldKey, newer] = [newKey(), newKey()];
    const server = await serve(place, [oldKey]);
    let restarted: Cli | undefined;
    try {
      expect(await readyz(server)).toBe(200);
      const rotated = await rotate(place, oldKey, newer, "--force");
      expect([rotated.code, rotated.stderr]).toEqual([0, ""]);
      expect(await readyzUntil(server, 503)).toBe(503);
      // What a request gets agrees: a create that seals a secret is refused, naming the key.
      const edge = await raw(httpTransport({ baseUrl: server.url, retries: 0 }), "POST", "/edges/https", {
        body: {},
      });
      const route = await raw(
        httpTransport({ baseUrl: server.url, retries: 0 }),
        "POST",
        `/edges/https/${edge.json.id}/routes`,
        {
          body: {
            match_type: "path_prefix",
            match: "/s",
            webhook_verification: { provider: "github", secret: "s" },
          },
        },
      );
      expect([route.status, route.json.msg]).toEqual([
        503,
        expect.stringContaining(`secrets key ${newer.key.id}`),
      ]);
      // Probed again and again (checks a second apart): still 503, the reason told once.
      for (let i = 0; i < 6; i++) {
        expect(await readyz(server)).toBe(503);
        await new Promise((r) => setTimeout(r, 400));
      }
      const told = await loggedLines(server, "not ready: ");
      expect(told).toHaveLength(1);
      expect(told[0]).toContain(
        `this server was not given secrets key ${newer.key.id}, which the store's secrets are sealed under`,
      );
      expect(told[0]).toContain("restart it with that key");
      await stop(server);

      restarted = await serve(place, [newer]);
      expect(await readyz(restarted)).toBe(200);
      expect(linesWith(restarted, "not ready")).toEqual([]);
    } finally {
      if (server.child.exitCode === null) await stop(server);
      if (restarted) await stop(restarted);
    }
  });
});

describe.each(PLACES)("secrets rotate and the live servers, on %s", (_name, makePlace) => {
  it("refuses while a live server lacks the new key, naming it, changing nothing; a stopped or dead one does not count", async () => {
    const place = await makePlace();
    const [oldKey, newer] = [newKey(), newKey()];
    const server = await serve(place, [oldKey]);
    try {
      const refused = await rotate(place, oldKey, newer);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).toContain(
        `secrets rotate refused, nothing was changed: 1 live server on ${place.kind === "sqlite" ? place.dataDir : ""}`,
      );
      expect(refused.stderr).toContain(`lacks the new secrets key ${newer.key.id}`);
      // Named as an operator finds it: host, pid, where it listens, since when, its keys.
      expect(refused.stderr).toMatch(
        new RegExp(
          `  ${hostname()} pid ${server.child.pid} \\(${server.url}\\), started \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, secrets keys ${oldKey.key.id}, last heard of \\d+\\.\\d s ago\\n`,
        ),
      );
      expect(refused.stderr).toContain("or pass --force");
      expect(await keyIdOf(place)).toBe(oldKey.key.id);
      expect(await readyz(server)).toBe(200);
    } finally {
      await stop(server);
    }
    // A clean stop takes the server's record with it.
    expect(await queryPlace(place, "SELECT id FROM servers")).toEqual([]);
    // One not heard of for three beats (a crashed server's row) is not alive.
    await queryPlace(
      place,
      "INSERT INTO servers (id, host, pid, url, started_at, key_ids, beat_ms, seen_ms) VALUES ('crashed', 'gone', 1, 'http://gone', '2026-01-01T00:00:00.000Z', 'none', 5000, 1000)",
    );
    const rotated = await rotate(place, oldKey, newer);
    expect([rotated.code, rotated.stderr]).toEqual([0, ""]);
    expect(rotated.stdout).toContain(
      `No live server is recorded on the store: servers started from now on need key ${newer.key.id}.`,
    );
    expect(await keyIdOf(place)).toBe(newer.key.id);
  });

  it("a server beats while it runs: its record is fresh, with its keys", async () => {
    const place = await makePlace();
    const k = newKey();
    const server = await startServer({
      dataDir: place.dataDir,
      databaseUrl: place.databaseUrl,
      port: 0,
      secretsKey: k.key,
      heartbeatMs: 100,
    });
    try {
      const seen = async () => Number((await queryPlace(place, "SELECT seen_ms FROM servers"))[0]!.seen_ms);
      const first = await seen();
      await new Promise((r) => setTimeout(r, 500));
      expect(await seen()).toBeGreaterThan(first);
      const [row] = await queryPlace(place, "SELECT host, pid, url, key_ids FROM servers");
      expect({ ...row, pid: Number(row!.pid) }).toEqual({
        host: hostname(),
        pid: process.pid,
        url: server.url,
        key_ids: k.key.id,
      });
    } finally {
      await server.close();
    }
    expect(await queryPlace(place, "SELECT id FROM servers")).toEqual([]);
  });
});

describe("two PostgreSQL replicas, one without the new key", () => {
  it("rotate names that one only; once both hold it, rotates and says both seal under it", async () => {
    const place = await postgresPlace();
    const [oldKey, newer] = [newKey(), newKey()];
    const a = await serve(place, [oldKey, newer]);
    let b = await serve(place, [oldKey]);
    try {
      const refused = await rotate(place, oldKey, newer);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("1 live server on");
      expect(refused.stderr).toContain(`pid ${b.child.pid} (${b.url})`);
      expect(refused.stderr).not.toContain(`pid ${a.child.pid} `);

      await stop(b);
      b = await serve(place, [oldKey, newer]);
      const rotated = await rotate(place, oldKey, newer);
      expect([rotated.code, rotated.stderr]).toEqual([0, ""]);
      expect(rotated.stdout).toContain(
        `2 live servers seal under key ${newer.key.id} from now on (${hostname()} pid ${a.child.pid}, ${hostname()} pid ${b.child.pid}).`,
      );
      expect(rotated.stdout).not.toContain("lack");
      expect([await readyz(a), await readyz(b)]).toEqual([200, 200]);
    } finally {
      await stop(a);
      await stop(b);
    }
  });
});
