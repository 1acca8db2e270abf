/**
 * PostgreSQL's write path in fewer round trips (issue 36): a transaction's start goes with its
 * first statement and a route write's COMMIT with the write, in one simple query each, the values
 * written in as SQL literals (PgConn in service/store/store-postgres-conn.ts). On a real database: how many
 * queries each request sends, that hostile text reads back byte for byte and never runs as SQL,
 * and that a last write that fails, or a statement after it, changes nothing it should not.
 */
import fc from "fast-check";
import pg from "pg";
import { EdgeService, type RequestContext } from "../../service/service";
import { PostgresStore } from "../../service/store/store-postgres";
import { sqlLiterals } from "../../service/store/store-postgres-conn";
import { ApiError } from "../../service/errors";
import { SQL } from "../../service/store/statements";
import { hostileText } from "../support/hostile-text";
import { sharedCluster } from "../support/postgres";
import { IDP_METADATA } from "./helpers";

const ctx: RequestContext = { baseUrl: "http://edge.test" };
const routeBody = (match: string) => ({
  match_type: "path_prefix",
  match,
  description: "a route",
  circuit_breaker: { num_buckets: 10, error_threshold_percentage: 0.5, volume_threshold: 20 },
});

let store: PostgresStore;
let service: EdgeService;
let edgeId: string;
let url: string;

beforeAll(async () => {
  url = await (await sharedCluster()).createDatabase();
  // No background rounds: every query counted is the request's own.
  store = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 2 });
  service = new EdgeService(store);
  edgeId = (await service.createEdge("https", { hostports: ["round-trips.example.com:443"] }, ctx)).id;
}, 120_000);

afterAll(async () => {
  await store?.close();
});

/** The queries `fn` sends (node-postgres: one query, one round trip), and its result. */
async function queriesOf<T>(fn: () => Promise<T>): Promise<{ result: T; queries: string[] }> {
  const queries: string[] = [];
  const query = pg.Client.prototype.query;
  const spy = jest.spyOn(pg.Client.prototype, "query").mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    const first = args[0];
    queries.push(typeof first === "string" ? first : String((first as { text?: string }).text));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query);
  try {
    return { result: await fn(), queries };
  } finally {
    spy.mockRestore();
  }
}

/**
 * The queries of the last of 4 runs of `fn`: by then each connection of the pool (2) has PREPAREd
 * what it sends, once.
 */
async function steadyQueries(fn: (i: number) => Promise<unknown>): Promise<string[]> {
  let last: string[] = [];
  for (let i = 0; i < 4; i++) last = (await queriesOf(() => fn(i))).queries;
  return last;
}

describe("PostgreSQL round trips per request", () => {
  test("a PATCH of a route: its start with the locked read, its COMMIT with the write (2)", async () => {
    const route = await service.createRoute(edgeId, routeBody("/patch-me"), ctx);
    const queries = await steadyQueries((i) =>
      service.updateRoute(edgeId, route.id, { description: `patched ${i}` }, ctx),
    );
    expect(queries).toHaveLength(2);
    expect(queries[0]).toMatch(
      /^BEGIN; EXECUTE inline_secrets_lock_shared; EXECUTE inline_route_get_locked\('/,
    );
    expect(queries[1]).toMatch(/^EXECUTE inline_route_update_with_event\(.*\); COMMIT$/s);
    expect((await service.getRoute(edgeId, route.id, ctx)).description).toBe("patched 3");
  });

  test("a keyed create: start, key lock and lookup; the edge; the insert with its COMMIT (3)", async () => {
    const queries = await steadyQueries((i) =>
      service.createRoute(edgeId, routeBody(`/keyed-${i}`), { ...ctx, idempotencyKey: `key-${i}` }),
    );
    expect(queries).toHaveLength(3);
    expect(queries[0]).toMatch(
      /^BEGIN; EXECUTE inline_secrets_lock_shared; EXECUTE inline_create_key_lock\('\d+', 'key-3'\); EXECUTE inline_find_created\('key-3'\)$/,
    );
    expect(queries[2]).toMatch(/^EXECUTE inline_route_insert_with_event\(.*\); COMMIT$/s);
  });

  test("a read: its snapshot's start with its one statement, then COMMIT (2)", async () => {
    const route = await service.createRoute(edgeId, routeBody("/read-me"), ctx);
    const queries = await steadyQueries(() => service.getRoute(edgeId, route.id, ctx));
    expect(queries).toEqual([
      expect.stringMatching(/^BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; EXECUTE inline_route_get\('/),
      "COMMIT",
    ]);
  });

  test("a transaction that sends no statement is never opened", async () => {
    const { queries } = await queriesOf(async () => {
      await store.write(async () => "nothing to write");
      await store
        .write(async () => Promise.reject(new Error("refused before any statement")))
        .catch(() => undefined);
      await store.read(async () => "nothing to read");
    });
    expect(queries).toEqual([]);
  });

  test("a SAML route's write is not its transaction's last: the key is made after it", async () => {
    const route = await service.createRoute(edgeId, routeBody("/saml-later"), ctx);
    const { queries } = await queriesOf(() =>
      service.putModule(edgeId, route.id, "saml", { idp_metadata: IDP_METADATA }, ctx),
    );
    expect(queries.filter((q) => q.includes("COMMIT"))).toEqual(["COMMIT"]);
    expect((await service.getRoute(edgeId, route.id, ctx)).saml?.idp_metadata).toBeDefined();
  });
});

describe("values written in as SQL literals", () => {
  test("sqlLiterals: each kind of value, and what it refuses", () => {
    expect(sqlLiterals([])).toBe("");
    expect(sqlLiterals(["edghts_1", 42, null])).toBe("('edghts_1', '42', NULL)");
    expect(sqlLiterals(["it's"])).toBe("('it''s')");
    expect(sqlLiterals(["a\\b"])).toBe("( E'a\\\\b')");
    expect(sqlLiterals([Buffer.from("/a")])).toBe("( E'\\\\x2f61')");
    expect(sqlLiterals(["nul \u0000 inside"])).toBeUndefined();
    expect(sqlLiterals([Number.NaN])).toBeUndefined();
  });

  test.each([
    ["on", "on"],
    ["off", "off"],
  ])(
    "hostile text in every written field reads back exactly (standard_conforming_strings %s)",
    async (_, conforming) => {
      const database = new URL(url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      // A store whose connections are all opened under the setting.
      await admin.query(`ALTER DATABASE ${database} SET standard_conforming_strings = ${conforming}`);
      const under = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 2 });
      try {
        const probe = new pg.Client({ connectionString: url });
        await probe.connect();
        expect(
          (await probe.query("SHOW standard_conforming_strings")).rows[0].standard_conforming_strings,
        ).toBe(conforming);
        await probe.end();
        const svc = new EdgeService(under);
        let n = 0;
        await fc.assert(
          fc.asyncProperty(hostileText(40), async (text) => {
            // Without NUL (PostgreSQL's text holds none) and with lone surrogates made U+FFFD: as
            // the service's JSON decoding hands text over.
            const clean = Buffer.from(text.replaceAll("\u0000", ""), "utf8").toString("utf8");
            const i = ++n;
            const key = `k-${conforming}-${i}-${clean.replace(/[^\x21-\x7e]/g, "")}`.slice(0, 200);
            const body = {
              ...routeBody(`/hostile/${conforming}/${i}/${clean}`),
              description: clean,
              metadata: clean,
              request_headers: { add: { "X-Hostile": clean || "-" } },
            };
            const made = await svc.createRoute(edgeId, body, { ...ctx, idempotencyKey: key });
            const read = await svc.getRoute(edgeId, made.id, ctx);
            expect([read.match, read.description, read.metadata]).toEqual([body.match, clean, clean]);
            expect(read.request_headers?.add).toEqual({ "X-Hostile": clean || "-" });
            // The same key again: the lock and the lookup read it as it was written.
            expect((await svc.createRoute(edgeId, body, { ...ctx, idempotencyKey: key })).id).toBe(made.id);
            const patched = await svc.updateRoute(
              edgeId,
              made.id,
              { description: `${clean}'; DROP TABLE routes; --` },
              ctx,
            );
            expect(patched.description).toBe(`${clean}'; DROP TABLE routes; --`);
            const events = await svc.listAuditEvents({ object_id: made.id }, ctx);
            expect(events.audit_events[0]!.changes.description).toEqual({
              before: clean,
              after: `${clean}'; DROP TABLE routes; --`,
            });
          }),
          { numRuns: 40 },
        );
      } finally {
        await under.close();
        await admin.query(`ALTER DATABASE ${database} RESET standard_conforming_strings`);
        await admin.end();
      }
    },
    120_000,
  );

  test("a value that cannot be written in takes the driver's bind, after the start sent alone", async () => {
    const { result, queries } = await queriesOf(() =>
      store.read((tx) => tx.query(SQL.metaGet, ["with \u0000 inside"])).catch((e: unknown) => e),
    );
    // What PostgreSQL answers a NUL in text, bound: the same refusal as before this path existed.
    expect(String(result)).toMatch(/invalid byte sequence|0x00/);
    expect(queries).toEqual([
      "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
      SQL.metaGet.postgres,
      "ROLLBACK",
    ]);
    // The connection serves on.
    expect(await store.read((tx) => tx.query(SQL.metaGet, ["no such key"]))).toEqual([]);
  });

  test("a key written to break out of its literal is a key, and nothing runs", async () => {
    const key = "x'); DROP TABLE routes; SELECT ('";
    const made = await service.createRoute(edgeId, routeBody("/injected"), { ...ctx, idempotencyKey: key });
    const again = await service.createRoute(edgeId, routeBody("/injected"), { ...ctx, idempotencyKey: key });
    expect(again.id).toBe(made.id);
    expect((await service.getRoute(edgeId, made.id, ctx)).id).toBe(made.id);
  });
});

describe("a write that ends its transaction", () => {
  test("refused by the database (a duplicate match): 409, nothing of it stored, the connection still serves", async () => {
    const a = await service.createRoute(edgeId, routeBody("/taken"), ctx);
    const b = await service.createRoute(edgeId, routeBody("/free"), ctx);
    const err = await service
      .updateRoute(edgeId, b.id, { match: "/taken", description: "never" }, ctx)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(409);
    const still = await service.getRoute(edgeId, b.id, ctx);
    expect([still.match, still.description]).toEqual(["/free", "a route"]);
    const events = await service.listAuditEvents({ object_id: b.id }, ctx);
    expect(events.audit_events).toHaveLength(1);
    // Both connections of the pool answer again (neither was left in a failed transaction).
    await Promise.all([service.getRoute(edgeId, a.id, ctx), service.getRoute(edgeId, b.id, ctx)]);
  });

  test("a statement after it is refused, and the write stays committed", async () => {
    const route = await service.createRoute(edgeId, routeBody("/then-more"), ctx);
    const err = await store
      .write(async (tx) => {
        const row = (await tx.getRoute(edgeId, route.id))!;
        await tx.updateRoute(route.id, { ...row, description: "committed with its write" }, undefined, {
          last: true,
        });
        await tx.getRoute(edgeId, route.id);
      })
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/marked as its transaction's last write/);
    expect((await service.getRoute(edgeId, route.id, ctx)).description).toBe("committed with its write");
  });
});
