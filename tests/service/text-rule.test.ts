/**
 * What text the API keeps (sdk/contract/text.ts): one rule checks every string a request carries,
 * and refuses U+0000 and lone surrogates with a 400 naming the field, storing nothing, on both
 * stores; everything else reads back byte for byte. Before the rule, SQLite cut a string at
 * U+0000 (three distinct matches listed as "/n" three times) and both stores turned a lone
 * surrogate into U+FFFD (two distinct matches then collided).
 */
import Database from "libsql";
import * as path from "node:path";
import type { z } from "zod";
import {
  ALL_OPERATIONS,
  ERROR_CODES,
  idempotencyKeySchema,
  isKeptText,
  TEXT_RULE,
  textProblem,
} from "../../sdk/contract";
import { expectRejected, fillIds, FIXTURES, type Fixture, raw, REJECTED, type Rejection } from "./helpers";

const V = ERROR_CODES.validation.code;

/** The strings of a schema (its input side), by path, each with whether the rule checks it. */
function stringsOf(schema: z.ZodType, at: string, out: Map<string, boolean>): void {
  const def = (schema as any)._zod.def;
  const inner = (s: z.ZodType, where = at) => stringsOf(s, where, out);
  switch (def.type) {
    case "string":
      out.set(at, (out.get(at) ?? true) && (def.checks ?? []).includes(TEXT_RULE));
      return;
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
      return inner(def.innerType);
    case "object":
      for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        inner(field, at.endsWith(" ") ? `${at}${key}` : `${at}.${key}`);
      }
      return;
    case "array":
      return inner(def.element, `${at}[]`);
    case "record":
      inner(def.keyType, `${at}{key}`);
      return inner(def.valueType, `${at}{}`);
    case "union":
      for (const option of def.options as z.ZodType[]) inner(option);
      return;
    case "pipe":
      inner(def.in);
      return inner(def.out);
    case "boolean":
    case "number":
    case "enum":
    case "literal":
    case "transform":
      return;
    default:
      throw new Error(`the walk does not know a zod ${def.type} (at "${at}"): teach it`);
  }
}

describe("one rule, on every string a request carries", () => {
  test("every string of every operation's body and query parameters is checked by TEXT_RULE", () => {
    const strings = new Map<string, boolean>();
    for (const op of ALL_OPERATIONS) {
      if (op.body) stringsOf(op.body.schema, `${op.id} body `, strings);
      if (op.query) stringsOf(op.query, `${op.id} query `, strings);
    }
    const paths = [...strings.keys()];
    // The walk reached fields, list items and map keys of bodies, and query parameters.
    for (const seen of [
      "create_route body match",
      "create_route body request_headers.add{key}",
      "create_route body user_agent_filter.allow[]",
      "put_oauth_module body provider.github.teams[]",
      "list_routes query before_id",
    ]) {
      expect(paths).toContain(seen);
    }
    expect(paths.filter((p) => strings.get(p) === false)).toEqual([]);
  });

  test("and the Idempotency-Key header's", () => {
    const strings = new Map<string, boolean>();
    stringsOf(idempotencyKeySchema, "Idempotency-Key", strings);
    expect([...strings]).toEqual([["Idempotency-Key", true]]);
  });

  test.each([
    ["", undefined],
    ["every other control character \u0001\u001f\u007f\u0085 kept", undefined],
    [
      "noncharacters \ufffe\uffff\ufdd0\u{10ffff}, bidi \u202e\u2066, emoji 😀, private use \ue000",
      undefined,
    ],
    ["a\u0000b", "must not hold U+0000 (NUL, at UTF-16 offset 1): the API does not keep it; leave it out"],
    [
      "/s\ud800",
      "must be well-formed Unicode: it holds half of a surrogate pair alone (\\ud800, at UTF-16 offset 2), which is no character; send the whole character or leave it out",
    ],
    ["😀\udc00", expect.stringContaining("(\\udc00, at UTF-16 offset 2)")],
    ["\udc00\ud800", expect.stringContaining("(\\udc00, at UTF-16 offset 0)")],
  ])("textProblem(%j)", (text, problem) => {
    expect(textProblem(text)).toEqual(problem);
    expect(isKeptText(text)).toBe(problem === undefined);
  });
});

/** What a client sends that the API does not keep: where, and the field the 400 names. */
const REFUSED: Rejection[] = [
  ["route match with U+0000", "POST", "/edges/https/{edge}/routes", { match: "/n\u0000a" }, "match"],
  [
    "route match with a lone high surrogate",
    "POST",
    "/edges/https/{edge}/routes",
    { match: "/s\ud800" },
    "match",
  ],
  [
    "route match with a lone low surrogate",
    "POST",
    "/edges/https/{edge}/routes",
    { match: "/s\udfff" },
    "match",
  ],
  [
    "route match with a pair reversed",
    "POST",
    "/edges/https/{edge}/routes",
    { match: "/\udc00\ud800" },
    "match",
  ],
  [
    "route description with U+0000",
    "POST",
    "/edges/https/{edge}/routes",
    { description: "d\u0000" },
    "description",
  ],
  ["route metadata with U+0000", "POST", "/edges/https/{edge}/routes", { metadata: "\u0000" }, "metadata"],
  [
    "a header value",
    "POST",
    "/edges/https/{edge}/routes",
    { request_headers: { add: { "X-A": "v\u0000" } } },
    'request_headers.add["X-A"]',
  ],
  [
    "a list's item",
    "POST",
    "/edges/https/{edge}/routes",
    { user_agent_filter: { allow: ["ok", "\ud83d"] } },
    "user_agent_filter.allow[1]",
  ],
  [
    "a secret",
    "POST",
    "/edges/https/{edge}/routes",
    { webhook_verification: { provider: "github", secret: "s\udbff" } },
    "webhook_verification.secret",
  ],
  [
    "a PATCH's description",
    "PATCH",
    "/edges/https/{edge}/routes/{route}",
    { description: "\ud800" },
    "description",
  ],
  ["a PATCH's match", "PATCH", "/edges/https/{edge}/routes/{route}", { match: "/p\u0000" }, "match"],
  [
    "a module PUT",
    "PUT",
    "/edges/https/{edge}/routes/{route}/response_headers",
    { add: { "X-B": "\udfff" } },
    'add["X-B"]',
  ],
  ["an edge's description", "POST", "/edges/https", { description: "e\u0000" }, "description"],
  ["a TLS edge's metadata", "POST", "/edges/tls", { metadata: "\ud800x" }, "metadata"],
].map(([what, method, path, body, field]) => ({
  case: String(what),
  method: String(method),
  path: String(path),
  body:
    path === "/edges/https/{edge}/routes"
      ? { match_type: "path_prefix", match: "/ok", ...(body as object) }
      : body,
  status: 400,
  code: V,
  field: String(field),
}));

describe.each(FIXTURES)("%s", (_, make) => {
  let fx: Fixture;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    fx = await make();
    ids.edge = (await fx.client.createHttpsEdge()).id;
    ids.route = (await fx.client.createRoute(ids.edge, { match_type: "path_prefix", match: "/kept" })).id;
  }, 120_000);
  afterAll(async () => {
    await fx?.close();
  });

  test.each(REFUSED)(REJECTED, async (r) => {
    const res = await expectRejected(fx, fillIds(r, ids));
    expect(res.json.msg).toMatch(/U\+0000|surrogate/);
  });

  test("a path identifier with U+0000 is a 400 naming it; a query parameter too", async () => {
    await expectRejected(fx, {
      method: "GET",
      path: "/edges/https/a%00b",
      status: 400,
      code: V,
      field: "id",
    });
    await expectRejected(fx, {
      method: "GET",
      path: "/edges/https?before_id=a%00",
      status: 400,
      code: V,
      field: "before_id",
    });
  });

  test("matches that differ only after U+0000 or in a lone surrogate are never stored as one", async () => {
    const edge = (await fx.client.createHttpsEdge()).id;
    for (const match of ["/n\u0000a", "/n\u0000b", "/n\u0000c", "/s\ud800", "/s\udbff"]) {
      const res = await raw(fx.transport, "POST", `/edges/https/${edge}/routes`, {
        body: { match_type: "exact_path", match },
      });
      expect(res.status).toBe(400);
    }
    expect((await fx.client.listRoutes(edge)).routes).toEqual([]);
  });

  test("everything else is kept byte for byte, in every field, through create, read, list and PATCH", async () => {
    const odd =
      "\u0001\u0008\u001b[31m\u007f\u0085 \u00a0\u00ad\u200b\u200d\u202e\u2066 \ufeff\ufffe\uffff\ufdd0\ue000 " +
      "\u{1fffe}\u{10ffff} 😀👩‍👩‍👧 é e\u0301 ' '' \\ \\' E'x' $$ $1 %s \" \n\r\t";
    const edge = await raw(fx.transport, "POST", "/edges/https", {
      body: { description: odd, metadata: odd },
    });
    expect(edge.status).toBe(201);
    expect([edge.json.description, edge.json.metadata]).toEqual([odd, odd]);
    const long = `/long/${"ゑ\\'😀".repeat(12_000)}`; // 136 KB of UTF-8
    const body = {
      match_type: "path_prefix",
      match: long,
      description: odd,
      metadata: odd,
      request_headers: { add: { "X-Odd": odd } },
      user_agent_filter: { allow: [odd, long] },
      webhook_verification: { provider: "github", secret: odd },
    };
    const made = await raw(fx.transport, "POST", `/edges/https/${edge.json.id}/routes`, { body });
    expect(made.status).toBe(201);
    const got = (await raw(fx.transport, "GET", `/edges/https/${edge.json.id}/routes/${made.json.id}`)).json;
    const listed = (await raw(fx.transport, "GET", `/edges/https/${edge.json.id}/routes`)).json.routes[0];
    for (const route of [made.json, got, listed]) {
      expect([route.match, route.description, route.metadata]).toEqual([long, odd, odd]);
      expect(route.request_headers.add).toEqual({ "X-Odd": odd });
      expect(route.user_agent_filter.allow).toEqual([odd, long]);
      expect(route.webhook_verification.secret).toBe(odd);
    }
    const patched = await raw(fx.transport, "PATCH", `/edges/https/${edge.json.id}/routes/${made.json.id}`, {
      body: { description: `${odd}!` },
    });
    expect(patched.json.description).toBe(`${odd}!`);
    expect(patched.json.match).toBe(long);
    const edgeRead = (await raw(fx.transport, "GET", `/edges/https/${edge.json.id}`)).json;
    expect([edgeRead.description, edgeRead.metadata]).toEqual([odd, odd]);
  });
});

describe("a value stored before the rule is read as it was written", () => {
  test("a module's header value holding U+0000 (SQLite), through GET and a PATCH of another field", async () => {
    const fx = await FIXTURES[1]![1]();
    try {
      const edge = (await fx.client.createHttpsEdge()).id;
      const route = (
        await raw(fx.transport, "POST", `/edges/https/${edge}/routes`, {
          body: { match_type: "path_prefix", match: "/old", request_headers: { add: { "X-Old": "before" } } },
        })
      ).json.id;
      // As an earlier version stored it: the module's JSON escapes the U+0000.
      const db = new Database(path.join(fx.dataDir, "edge.db"));
      db.prepare("UPDATE routes SET modules = replace(modules, 'before', ?) WHERE id = ?").run(
        "be\\u0000fore",
        route,
      );
      db.close();
      const read = await raw(fx.transport, "GET", `/edges/https/${edge}/routes/${route}`);
      expect(read.status).toBe(200);
      expect(read.json.request_headers.add).toEqual({ "X-Old": "be\u0000fore" });
      const patched = await raw(fx.transport, "PATCH", `/edges/https/${edge}/routes/${route}`, {
        body: { description: "changed" },
      });
      expect(patched.status).toBe(200);
      expect(patched.json.request_headers.add).toEqual({ "X-Old": "be\u0000fore" });
    } finally {
      await fx.close();
    }
  });
});
