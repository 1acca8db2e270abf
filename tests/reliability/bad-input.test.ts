/**
 * Bad input, property-based (fast-check): for every mutating operation of the API, valid bodies
 * with one random mutation, arbitrary JSON, and arbitrary bytes under arbitrary content types.
 * The property of every answer (see `judge`): never a 5xx; a 4xx is typed (error shape, a code of
 * the catalogue, the operation id), names the field when a field is at fault, and changed nothing
 * in the database. Over real HTTP and in-process.
 */
import { storeFingerprint } from "../support/fingerprint";
import fc from "fast-check";
import {
  edgeCreateSchema,
  httpsEdgeSchema,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
  routeSchema,
  tlsEdgeSchema,
  tlsIpRestrictionSchema,
} from "../../sdk/contract";
import { FIXTURES, type Fixture, raw } from "../service/helpers";
import {
  edgeBodyArb,
  freshMatch,
  type Json,
  judge,
  MODULE_BODY,
  mutate,
  mutationArb,
  outcome,
  routeCreateArb,
  routePatchArb,
  Tally,
  tlsRestrictionArb,
  topSegment,
} from "./fuzz";
import { FC_SEED } from "./support";
import { scaled } from "../support/machine";

// A property of thousands of requests runs minutes on the idle machine, longer under load; a
// timeout would leave it running into the next test (which then sees the database change).
jest.setTimeout(scaled(600_000));

/** Runs per property and operation; the HTTP fixture runs a third of them (same code path behind the socket). */
const RUNS = { mutation: 300, json: 100, bytes: 100 };
const runsFor = (fx: Fixture, n: number) => (fx.kind === "http" ? Math.ceil(n / 3) : n);

interface Operation {
  name: string;
  method: "POST" | "PATCH" | "PUT";
  path: () => string;
  valid: fc.Arbitrary<Json>;
  /** Fills what a valid body needs per run (a fresh match). */
  prepare?: (body: Json) => Json;
  /** The schema a 2xx answer must satisfy. */
  response: { safeParse(v: unknown): { success: boolean } };
  /** Undoes an accepted create, so the database stays small. */
  cleanup?: (res: { json: any }) => Promise<void>;
  /** Top-level fields whose rules involve another field (a mutation of one may be reported at the other). */
  related?: Record<string, string[]>;
}

const withMatch = (body: Json): Json =>
  body && typeof body === "object" && !Array.isArray(body) && body.match === "MATCH"
    ? { ...body, match: freshMatch() }
    : body;

describe.each(FIXTURES)("bad input %s", (_label, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  let tlsId: string;
  let patchRouteId: string;
  const moduleRoute: Partial<Record<RouteModuleName, string>> = {};
  const tally = new Tally();
  const ops: Operation[] = [];

  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge({ description: "fuzz" })).id;
    tlsId = (await fx.client.createTlsEdge({})).id;
    patchRouteId = (await fx.client.createRoute(edgeId, { match_type: "path_prefix", match: "/patched" })).id;
    for (const m of ROUTE_MODULE_NAMES) {
      moduleRoute[m] = (
        await fx.client.createRoute(edgeId, { match_type: "exact_path", match: `/module/${m}` })
      ).id;
    }
    const deleteEdge = (kind: "https" | "tls") => async (res: { json: any }) => {
      await raw(fx.transport, "DELETE", `/edges/${kind}/${res.json.id}`);
    };
    ops.push(
      {
        name: "POST /edges/https",
        method: "POST",
        path: () => "/edges/https",
        valid: edgeBodyArb as fc.Arbitrary<Json>,
        response: httpsEdgeSchema,
        cleanup: deleteEdge("https"),
      },
      {
        name: "POST /edges/tls",
        method: "POST",
        path: () => "/edges/tls",
        valid: edgeBodyArb as fc.Arbitrary<Json>,
        response: tlsEdgeSchema,
        cleanup: deleteEdge("tls"),
      },
      {
        name: "POST routes",
        method: "POST",
        path: () => `/edges/https/${edgeId}/routes`,
        valid: routeCreateArb,
        prepare: withMatch,
        response: routeSchema,
        cleanup: async (res) => {
          await raw(fx.transport, "DELETE", `/edges/https/${edgeId}/routes/${res.json.id}`);
        },
      },
      {
        name: "PATCH route",
        method: "PATCH",
        path: () => `/edges/https/${edgeId}/routes/${patchRouteId}`,
        valid: routePatchArb,
        response: routeSchema,
      },
      {
        name: "PUT tls ip_restriction",
        method: "PUT",
        path: () => `/edges/tls/${tlsId}/ip_restriction`,
        valid: tlsRestrictionArb,
        response: tlsIpRestrictionSchema,
      },
      ...ROUTE_MODULE_NAMES.map((m): Operation => ({
        name: `PUT module ${m}`,
        method: "PUT",
        path: () => `/edges/https/${edgeId}/routes/${moduleRoute[m]}/${m}`,
        valid: MODULE_BODY[m],
        response: ROUTE_MODULES[m].response,
        related: m === "webhook_verification" ? { provider: ["secret"], secret: ["provider"] } : undefined,
      })),
    );
    // Sanity: every generated valid body is accepted as is (the mutations below start from valid ground).
    expect(edgeCreateSchema.safeParse({}).success).toBe(true);
  });

  afterAll(async () => {
    tally.write(`bad-input-${fx?.kind}`);
    await fx?.close();
  });

  /** Sends one body, judges the answer, cleans an accepted create up; returns the verdict. */
  async function attempt(op: Operation, body: unknown, opts: { contentType?: string | null } = {}) {
    const before = await storeFingerprint(fx.store);
    const res = await raw(fx.transport, op.method, op.path(), { body, contentType: opts.contentType });
    const after = await storeFingerprint(fx.store);
    const context = `${op.method} ${op.path()} ${typeof body === "string" ? body : body instanceof Uint8Array ? Buffer.from(body).toString("hex") : JSON.stringify(body)}`;
    const verdict = judge(res, { before, after }, context);
    if (verdict.status < 400) {
      if (!op.response.safeParse(res.json).success)
        throw new Error(
          `a ${res.status} answer breaks the contract: ${res.text.slice(0, 500)}\n  request: ${context.slice(0, 500)}`,
        );
      await op.cleanup?.(res);
    }
    return verdict;
  }

  test("every operation accepts its generated valid bodies (the ground the mutations start from)", async () => {
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(op.valid, async (valid) => {
          const v = await attempt(op, op.prepare ? op.prepare(valid) : valid);
          tally.add(`${op.name} (valid)`, outcome(v));
          expect([op.name, v.status]).toEqual([op.name, op.method === "POST" ? 201 : 200]);
        }),
        { numRuns: runsFor(fx, 20), seed: FC_SEED },
      );
    }
  });

  test("valid bodies with one mutation: no 5xx, typed 4xx naming the mutated field, nothing changed", async () => {
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(op.valid, mutationArb, async (valid, mutation) => {
          const { body, path } = mutate(op.prepare ? op.prepare(valid) : valid, mutation);
          const v = await attempt(op, body);
          tally.add(op.name, outcome(v));
          if (v.field !== undefined && path.length > 0) {
            // The field reported is the one mutated (or inside it, or a field whose rule involves it).
            const top = String(path[0]);
            const reported = topSegment(v.field);
            const allowed = [top, ...(op.related && Object.hasOwn(op.related, top) ? op.related[top]! : [])];
            if (!allowed.includes(reported)) {
              throw new Error(
                `mutated ${JSON.stringify(path)} but the answer names ${v.field}: ${JSON.stringify(body).slice(0, 500)}`,
              );
            }
          }
        }),
        { numRuns: runsFor(fx, RUNS.mutation), seed: FC_SEED },
      );
    }
  });

  test("arbitrary JSON bodies: no 5xx, typed 4xx, nothing changed", async () => {
    const anyBody = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
    );
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(anyBody, async (body) => {
          tally.add(`${op.name} (any JSON)`, outcome(await attempt(op, JSON.stringify(body))));
        }),
        { numRuns: runsFor(fx, RUNS.json), seed: FC_SEED },
      );
    }
  });

  test("arbitrary bytes under arbitrary content types: 400/413/415, typed, nothing changed", async () => {
    const invalidUtf8 = fc.constantFrom(
      [0xff],
      [0xc0, 0x80], // overlong NUL
      [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded in UTF-8
      [0xe2, 0x82], // truncated 3-byte sequence
      [0xf8, 0x88, 0x80, 0x80, 0x80], // 5-byte form
      [0x80],
    );
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      // A valid body whose string value carries invalid UTF-8.
      invalidUtf8.map((b) =>
        Buffer.concat([Buffer.from('{"description":"a'), Buffer.from(b), Buffer.from('"}')]),
      ),
      // A valid body truncated at a random point.
      fc
        .tuple(fc.nat(), fc.constant('{"match_type":"exact_path","match":"/t","backend":{"backend_id":"b"}}'))
        .map(([n, s]) => Buffer.from(s.slice(0, n % s.length))),
      // A byte-order mark, NULs, JSON with trailing garbage, lone surrogate escapes.
      fc
        .constantFrom(
          '\uFEFF{"description":"bom"}',
          '{"description":"a\\u0000b"}',
          "{} {}",
          '{"description":"\\udc00"}',
          '{"a":1,}',
          "NaN",
          "1e999",
          '"str"',
          "[]",
          "null",
          "",
        )
        .map((s) => Buffer.from(s)),
    );
    const contentType = fc.constantFrom<string | null>(
      "application/json",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json; charset=latin1",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json-patch+json",
      "",
      null,
    );
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(bytes, contentType, async (body, type) => {
          const v = await attempt(op, new Uint8Array(body), { contentType: type });
          tally.add(`${op.name} (bytes)`, outcome(v));
        }),
        { numRuns: runsFor(fx, RUNS.bytes), seed: FC_SEED },
      );
    }
  });
});
