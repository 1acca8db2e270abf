/**
 * Nothing stored changes, as a property of the whole API: generated strings over all of Unicode
 * (U+0000, lone surrogates, noncharacters, bidi controls, any code point, the pieces that break
 * SQL and JSON, 136 KB strings) go into every kind of field over HTTP, on both stores, and
 * visible ASCII or spaces into a create's `Idempotency-Key`. Each is
 * kept exactly (create, read, list and PATCH answer it byte for byte) or refused with a 400 that
 * names its field and stores nothing. What was kept then reads back the same after `secrets
 * rotate`, after `edge-service migrate` (SQLite → PostgreSQL), and after a dump of PostgreSQL
 * loaded into SQLite.
 *
 * The oracle is the test's own: a string is kept unless it holds U+0000 or does not survive a
 * round trip through UTF-8 (a lone surrogate), or breaks a field's byte limit or a header name's
 * character set. Seeded: the same cases on both stores, every run.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fc from "fast-check";
import { DESCRIPTION_MAX_BYTES, formatPath, METADATA_MAX_BYTES } from "../../sdk/contract";
import { Secrets, SecretsKey } from "../../service/secrets";
import { type RunningServer, startServer } from "../../service/http/server";
import { SqliteStore } from "../../service/store/store-sqlite";
import { httpTransport, type Transport } from "../../sdk/transport";
import { CLI, ensureBuilt } from "../support/edge-service";
import { hostileText } from "../support/hostile-text";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, raw, removeDir } from "./helpers";

/** Cases per store: seeded, so both stores see the same ones. */
const RUNS = 150;
const SEED = 46;

const KEYS = [11, 12].map((fill) => Buffer.alloc(32, fill).toString("base64"));
const RING = KEYS.map((k) => SecretsKey.parse(k, "a test key"));
const [, K2] = RING;
/** The ring as `edge-service` reads it from the environment. */
const RING_ENV = KEYS.join(",");

// ---------------------------------------------------------------- strings

const code = (n: number) => String.fromCodePoint(n);
const LONE_SURROGATE = fc.integer({ min: 0xd800, max: 0xdfff }).map((n) => String.fromCharCode(n));
const BIDI = fc.constantFrom(..."\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069");
const NONCHARACTER = fc.oneof(
  fc.integer({ min: 0xfdd0, max: 0xfdef }).map(code),
  fc
    .tuple(fc.integer({ min: 0, max: 16 }), fc.boolean())
    .map(([plane, f]) => code(plane * 0x10000 + (f ? 0xffff : 0xfffe))),
);
/** One piece of text the API keeps: any code point but U+0000, or a piece that breaks SQL, JSON or a log. */
const KEPT_UNIT = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => c !== "\u0000"),
  },
  { weight: 2, arbitrary: BIDI },
  { weight: 2, arbitrary: NONCHARACTER },
  {
    weight: 2,
    arbitrary: fc.constantFrom("'", "''", "\\", "\\'", "E'", "$$", "$1", '"', "%s", "\r\n", "ゑ", "😀"),
  },
  {
    weight: 3,
    arbitrary: hostileText(3).map((s) => s.replaceAll("\u0000", "").replace(/\p{Surrogate}/gu, "")),
  },
);
/** One piece, possibly one the API refuses. */
const ANY_UNIT = fc.oneof(
  { weight: 12, arbitrary: KEPT_UNIT },
  { weight: 1, arbitrary: fc.constant("\u0000") },
  { weight: 1, arbitrary: LONE_SURROGATE },
);
const textOf = (unit: fc.Arbitrary<string>) => fc.string({ unit, maxLength: 16 });
/** A long string: a short one repeated to about 136 KB of UTF-8 (what no field limits but the body). */
const longOf = (unit: fc.Arbitrary<string>) =>
  fc.string({ unit, minLength: 1, maxLength: 4 }).map((s) => {
    const piece = s.length > 0 ? s : "x";
    return piece.repeat(Math.ceil(136_000 / Math.max(1, Buffer.byteLength(piece)))).slice(0, 136_000);
  });

/** What follows "X-" in a header name: mostly a header name's characters, sometimes any text. */
const HEADER_NAMES = (unit: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9-]{0,12}$/) },
    { weight: 1, arbitrary: textOf(unit) },
  );

/** What follows a case's own prefix in its create's `Idempotency-Key`: visible ASCII, or a space. */
const IDEMPOTENCY_KEYS = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((n) => String.fromCharCode(n)),
  maxLength: 12,
});

/** The strings of one case, one for each kind of field. */
const FIELDS = [
  "edgeDescription",
  "edgeMetadata",
  "match",
  "description",
  "metadata",
  "headerName",
  "headerValue",
  "listItem",
  "secret",
  "patched",
  "key",
] as const;
type Field = (typeof FIELDS)[number];
type Strings = Record<Field, string>;
/** The fields without a byte limit: a long string may go there. */
const UNBOUNDED: readonly Field[] = ["match", "headerValue", "listItem", "secret"];

/** A case as a failure report shows it: each long string cut to its start and its length. */
function shown(strings: Strings): string {
  const cut = (v: string) =>
    v.length > 120 ? `${JSON.stringify(v.slice(0, 40))} + … (${v.length} UTF-16 units)` : JSON.stringify(v);
  return `{ ${FIELDS.map((f) => `${f}: ${cut(strings[f])}`).join(", ")} }`;
}

const CASE: fc.Arbitrary<Strings> = fc
  .tuple(fc.boolean(), fc.option(fc.constantFrom(...UNBOUNDED), { freq: 8 }))
  .chain(([clean, long]) => {
    const unit = clean ? KEPT_UNIT : ANY_UNIT;
    return fc.record(
      Object.fromEntries(
        FIELDS.map((f) => [
          f,
          f === long
            ? longOf(unit)
            : f === "headerName"
              ? HEADER_NAMES(unit)
              : f === "key"
                ? IDEMPOTENCY_KEYS
                : textOf(unit),
        ]),
      ) as Record<Field, fc.Arbitrary<string>>,
    );
  })
  .map((strings) => Object.assign(strings, { [fc.toStringMethod]: () => shown(strings) }));

// ---------------------------------------------------------------- the oracle

/** Kept as it is by the API: no U+0000, and the same after a round trip through UTF-8. */
const keepable = (s: string) => !s.includes("\u0000") && Buffer.from(s, "utf8").toString("utf8") === s;
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The fields a request's 400 must name: those it sends that the API does not keep, or that break a rule. */
function refusedFields(
  sent: Record<string, { text: string; limit?: number; header?: boolean }>,
): Set<string> {
  const out = new Set<string>();
  for (const [field, { text, limit, header }] of Object.entries(sent)) {
    if (
      !keepable(text) ||
      (limit !== undefined && utf8Bytes(text) > limit) ||
      (header && !HEADER_NAME.test(text))
    ) {
      out.add(field);
    }
  }
  return out;
}

/** The fields a 400 names. */
const namedFields = (json: { details: { field?: string; problems?: Array<{ field: string }> } }) =>
  new Set(json.details.problems?.map((p) => p.field) ?? [json.details.field]);

// ---------------------------------------------------------------- one case

/** What a store kept of a case: its edge and route, and what each must answer. */
interface Kept {
  edgeId: string;
  edge?: { description: string; metadata: string };
  route?: { id: string; body: Record<string, unknown>; description: string };
}

async function runCase(t: Transport, i: number, s: Strings, fallbackEdge: string): Promise<Kept> {
  const kept: Kept = { edgeId: fallbackEdge };
  // An edge.
  const edgeBody = { description: s.edgeDescription, metadata: s.edgeMetadata };
  const edge = await raw(t, "POST", "/edges/https", { body: edgeBody });
  const edgeRefused = refusedFields({
    description: { text: s.edgeDescription, limit: DESCRIPTION_MAX_BYTES },
    metadata: { text: s.edgeMetadata, limit: METADATA_MAX_BYTES },
  });
  if (edgeRefused.size > 0) {
    expect({ status: edge.status, fields: namedFields(edge.json) }).toEqual({
      status: 400,
      fields: edgeRefused,
    });
  } else {
    expect(edge.status).toBe(201);
    expect([edge.json.description, edge.json.metadata]).toEqual([s.edgeDescription, s.edgeMetadata]);
    kept.edgeId = edge.json.id;
    kept.edge = edgeBody;
  }
  // A route of it, every kind of field: top-level text, a map's key and value, a list's item, a secret.
  const headerName = `X-${s.headerName}`;
  const body = {
    match_type: "path_prefix",
    match: `/c${i}/${s.match}`,
    description: s.description,
    metadata: s.metadata,
    request_headers: { add: { [headerName]: s.headerValue } },
    user_agent_filter: { allow: [s.listItem] },
    webhook_verification: { provider: "github", secret: `s${s.secret}` },
  };
  const headerField = formatPath(["request_headers", "add", headerName]);
  const routeRefused = refusedFields({
    match: { text: body.match },
    description: { text: s.description, limit: DESCRIPTION_MAX_BYTES },
    metadata: { text: s.metadata, limit: METADATA_MAX_BYTES },
    [headerField]: { text: headerName, header: true },
    "user_agent_filter.allow[0]": { text: s.listItem },
    "webhook_verification.secret": { text: `s${s.secret}` },
  });
  if (!keepable(s.headerValue)) routeRefused.add(headerField);
  const before = (await raw(t, "GET", `/edges/https/${kept.edgeId}/routes`)).json.routes.map(
    (r: { id: string }) => r.id,
  );
  // The header's value as it arrives (fetch trims its ends); refused before the body is read.
  const key = `k${i}-${s.key}`.replace(/ +$/, "");
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    routeRefused.clear();
    routeRefused.add("Idempotency-Key");
  }
  const keyed = { body, headers: { "Idempotency-Key": key } };
  const made = await raw(t, "POST", `/edges/https/${kept.edgeId}/routes`, keyed);
  if (routeRefused.size > 0) {
    expect({ status: made.status, fields: namedFields(made.json) }).toEqual({
      status: 400,
      fields: routeRefused,
    });
    const after = (await raw(t, "GET", `/edges/https/${kept.edgeId}/routes`)).json.routes.map(
      (r: { id: string }) => r.id,
    );
    expect(after).toEqual(before);
    return kept;
  }
  expect(made.status).toBe(201);
  const route = { id: made.json.id, body, description: s.description };
  expectRoute(made.json, route);
  // The key was kept as sent: the create repeated with it answers the route it made.
  const again = await raw(t, "POST", `/edges/https/${kept.edgeId}/routes`, keyed);
  expect([again.status, again.json.id]).toEqual([made.status, route.id]);
  // A PATCH of its description.
  const patch = await raw(t, "PATCH", `/edges/https/${kept.edgeId}/routes/${route.id}`, {
    body: { description: s.patched },
  });
  const patchRefused = refusedFields({ description: { text: s.patched, limit: DESCRIPTION_MAX_BYTES } });
  if (patchRefused.size > 0) {
    expect({ status: patch.status, fields: namedFields(patch.json) }).toEqual({
      status: 400,
      fields: patchRefused,
    });
  } else {
    expect(patch.status).toBe(200);
    route.description = s.patched;
    expectRoute(patch.json, route);
  }
  kept.route = route;
  await expectKept(t, kept);
  return kept;
}

/** A route as answered: every string as sent. */
function expectRoute(answer: Record<string, any>, route: NonNullable<Kept["route"]>): void {
  const b = route.body as any;
  expect({
    match: answer.match,
    description: answer.description,
    metadata: answer.metadata,
    headers: answer.request_headers.add,
    allow: answer.user_agent_filter.allow,
    secret: answer.webhook_verification.secret,
  }).toEqual({
    match: b.match,
    description: route.description,
    metadata: b.metadata,
    headers: b.request_headers.add,
    allow: b.user_agent_filter.allow,
    secret: b.webhook_verification.secret,
  });
}

/** What a store kept of a case, read back through GET and the route's list. */
async function expectKept(t: Transport, kept: Kept): Promise<void> {
  if (kept.edge) {
    const edge = (await raw(t, "GET", `/edges/https/${kept.edgeId}`)).json;
    expect([edge.description, edge.metadata]).toEqual([kept.edge.description, kept.edge.metadata]);
  }
  if (kept.route) {
    const got = await raw(t, "GET", `/edges/https/${kept.edgeId}/routes/${kept.route.id}`);
    expect(got.status).toBe(200);
    expectRoute(got.json, kept.route);
    const list = (await raw(t, "GET", `/edges/https/${kept.edgeId}/routes`)).json.routes;
    expectRoute(
      list.find((r: { id: string }) => r.id === kept.route!.id),
      kept.route,
    );
  }
}

// ---------------------------------------------------------------- both stores, then copies

interface Served {
  server: RunningServer;
  transport: Transport;
  kept: Kept[];
}

async function serve(where: { dataDir: string; databaseUrl?: string }): Promise<Omit<Served, "kept">> {
  const server = await startServer({ ...where, port: 0, secretsKey: RING });
  return { server, transport: httpTransport({ baseUrl: server.url, retries: 0, timeoutMs: 60_000 }) };
}

async function runAll(served: Omit<Served, "kept">): Promise<Served> {
  const fallback = (await raw(served.transport, "POST", "/edges/https", { body: {} })).json.id;
  const kept: Kept[] = [];
  let i = 0;
  await fc.assert(
    fc.asyncProperty(CASE, async (strings) => {
      kept.push(await runCase(served.transport, ++i, strings, fallback));
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  return { ...served, kept };
}

async function expectAllKept(t: Transport, kept: Kept[]): Promise<void> {
  for (const k of kept) await expectKept(t, k);
}

describe("text through the API is kept exactly or refused, on both stores and their copies", () => {
  const dirs: string[] = [];
  const servers: RunningServer[] = [];
  let sqlite: Served;
  let postgres: Served;

  beforeAll(async () => {
    const cluster = await sharedCluster();
    dirs.push(makeTempDir("text-sqlite"), makeTempDir("text-pg"));
    const s = await serve({ dataDir: dirs[0]! });
    const p = await serve({ dataDir: dirs[1]!, databaseUrl: await cluster.createDatabase() });
    servers.push(s.server, p.server);
    [sqlite, postgres] = [
      { ...s, kept: [] },
      { ...p, kept: [] },
    ];
  }, 120_000);

  afterAll(async () => {
    for (const server of servers) await server.close().catch(() => undefined);
    for (const dir of dirs) removeDir(dir);
  });

  test("SQLite", async () => {
    sqlite = await runAll(sqlite);
    expect(sqlite.kept.filter((k) => k.route).length).toBeGreaterThan(RUNS / 4);
  }, 600_000);

  test("PostgreSQL", async () => {
    postgres = await runAll(postgres);
    // The same cases: the same outcomes.
    expect(postgres.kept.map((k) => [!!k.edge, !!k.route])).toEqual(
      sqlite.kept.map((k) => [!!k.edge, !!k.route]),
    );
  }, 600_000);

  test("secrets rotate: every value re-sealed, every string the same", async () => {
    for (const served of [sqlite, postgres]) {
      const { secrets } = await served.server.store.resealSecrets(K2!);
      expect(secrets).toBeGreaterThan(0);
      await expectAllKept(served.transport, served.kept);
    }
  }, 600_000);

  test("edge-service migrate, SQLite → PostgreSQL: every string the same", async () => {
    ensureBuilt();
    const to = await (await sharedCluster()).createDatabase();
    await promisify(execFile)(process.execPath, [CLI, "migrate", "--from", dirs[0]!, "--to", to], {
      env: { ...process.env, EDGE_SECRETS_KEY: RING_ENV, EDGE_DATABASE_URL: "" },
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    dirs.push(makeTempDir("text-migrated"));
    const copy = await serve({ dataDir: dirs.at(-1)!, databaseUrl: to });
    servers.push(copy.server);
    await expectAllKept(copy.transport, sqlite.kept);
  }, 600_000);

  test("a dump of PostgreSQL loaded into SQLite: every string the same", async () => {
    const dump = await postgres.server.store.dump();
    const dir = makeTempDir("text-loaded");
    dirs.push(dir);
    const target = SqliteStore.open(dir, { secrets: new Secrets(RING), auditIndexEveryMs: 0 });
    await target.load(dump);
    await target.close();
    const copy = await serve({ dataDir: dir });
    servers.push(copy.server);
    await expectAllKept(copy.transport, postgres.kept);
  }, 600_000);
});
