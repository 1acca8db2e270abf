/**
 * The client's methods (sdk/client/operations.ts) are generated from the contract's operation
 * table: the committed file must be what today's table gives, and every operation a client may
 * call must be a method of EdgeClient.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  ALL_OPERATIONS,
  camel,
  type Operation,
  OPERATIONS,
  type QueryOptionsOf,
  queryString,
} from "../../sdk/contract";
import { EdgeClient } from "../../sdk/client";

const ROOT = join(__dirname, "../..");

test("the committed client methods are what the operation table gives (else: npm run generate)", () => {
  // Run as `npm run generate` does, from the contract built from today's source (jest's global
  // setup builds dist); prettier, which formats the file, cannot be loaded inside jest's VM.
  expect(() =>
    execFileSync(process.execPath, [join(ROOT, "scripts/client-methods.js"), "--check"], { stdio: "pipe" }),
  ).not.toThrow();
});

test("every operation but the service's own (Meta) is a method of the client, named by its id", () => {
  const callable = ALL_OPERATIONS.filter((op) => op.tag !== "Meta");
  expect(callable.length).toBeGreaterThan(20);
  const methods = EdgeClient.prototype as unknown as Record<string, unknown>;
  for (const op of callable) expect(typeof methods[camel(op.id)]).toBe("function");
});

test("every operation the client calls is one the app serves (ALL_OPERATIONS walks the table)", () => {
  // The generated file reaches each operation by its place in the table (`OPS.routes.create`,
  // `OPS.modules["backend"].put`): a group the list of served operations missed would be a method
  // the app answers 404.
  const generated = readFileSync(join(ROOT, "sdk/client/operations.ts"), "utf8");
  const called = [...generated.matchAll(/this\.request\((OPS[\w.[\]"]+)/g)].map(([, ref]) => {
    const keys = [...ref!.slice(3).matchAll(/\.(\w+)|\["(\w+)"\]/g)].map(([, a, b]) => a ?? b!);
    return keys.reduce<unknown>(
      (at, k) => (typeof at === "object" && at !== null ? Reflect.get(at, k) : undefined),
      OPERATIONS,
    );
  });
  expect(called.length).toBeGreaterThan(20);
  for (const op of called) expect(ALL_OPERATIONS).toContain(op);
});

test("a required query parameter is required in the client's options and method, an optional one optional", () => {
  const op = {
    id: "count_routes",
    method: "GET",
    path: "/edges/https/{edge_id}/route_count",
    summary: "Count an edge's routes",
    tag: "Routes",
    query: z.strictObject({
      match_type: z.enum(["exact", "path_prefix"]),
      limit: z.coerce.number().int().optional(),
      before_id: z.string().default(""),
    }),
    success: { status: 204 },
    errors: [404],
  } as const satisfies Operation;
  type Options = QueryOptionsOf<typeof op>;
  // @ts-expect-error: matchType is required (tsc checks this file: npm run lint, npm test's pretest)
  const without: Options = { limit: 2 };
  const given: Options = { matchType: "path_prefix" };
  expect(queryString(op, { ...without, ...given })).toBe("?match_type=path_prefix&limit=2");

  // The generated method takes the options as required only when the query may not be empty.
  const { method } = require("../../scripts/client-methods.js") as {
    method: (o: { op: Operation; ref: string }) => string;
  };
  expect(method({ op, ref: "OPS.counts.routes" })).toContain(
    "query: QueryOptionsOf<typeof OPS.counts.routes>",
  );
  expect(method({ op: OPERATIONS.https.list, ref: "OPS.https.list" })).toContain(
    "query?: QueryOptionsOf<typeof OPS.https.list>",
  );
});
