/**
 * Generators and judges of the bad-input properties: valid request bodies of every operation,
 * single mutations of them, and the rule every answer must obey (no 5xx; a 4xx has the error
 * shape of docs/decisions.md#errors, a catalogued code, a field when one field is at fault; a
 * rejection changes nothing).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { z } from "zod";
import {
  AUTH_MODULES,
  edgeCreateSchema,
  ERROR_CODES,
  isAuthModule,
  isRouteModuleName,
  OPERATION_ID_HEADER,
  ROUTE_MODULE_NAMES,
  routeCreateSchema,
  type RouteModuleName,
} from "../../sdk/contract";
import type { RawResponse } from "../service/helpers";
import { bodyOf, MODULE_BODY } from "../support/request-bodies";
import { ROOT } from "./support";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonPath = Array<string | number>;

// ---------------------------------------------------------------- valid bodies

export { MODULE_BODY };

const NON_AUTH = ROUTE_MODULE_NAMES.filter((m) => !isAuthModule(m));

/** A set of modules a route may carry at once: any non-auth modules, at most one auth module. */
export const modulesArb: fc.Arbitrary<Record<string, Json>> = fc
  .tuple(
    fc.subarray(NON_AUTH, { maxLength: 6 }),
    fc.constantFrom<RouteModuleName | null>(null, ...AUTH_MODULES),
  )
  .chain(([mods, auth]) => {
    const names = auth ? [...mods, auth] : mods;
    return fc
      .tuple(...names.map((m) => MODULE_BODY[m]))
      .map((bodies) => Object.fromEntries(names.map((m, i) => [m, bodies[i]!])));
  });

export const edgeBodyArb = bodyOf(edgeCreateSchema);

/** A route's own fields but its selector and modules (description, metadata, ...), from its schema. */
const routeFieldsArb = bodyOf(
  z.strictObject(
    Object.fromEntries(
      Object.entries(routeCreateSchema.shape).filter(
        ([k]) => k !== "match" && k !== "match_type" && !isRouteModuleName(k),
      ),
    ),
  ),
);

let matchCounter = 0;
/** A match no other route has (fresh per call). */
export const freshMatch = () => `/fuzz/${process.pid}/${++matchCounter}`;

export const routeCreateArb = fc
  .tuple(fc.constantFrom("exact_path", "path_prefix"), routeFieldsArb, modulesArb)
  .map(
    ([match_type, fields, modules]) =>
      ({ match_type, match: "MATCH", ...fields, ...modules }) as Record<string, Json>,
  );

export const routePatchArb = fc
  .tuple(routeFieldsArb, fc.subarray(NON_AUTH, { maxLength: 4 }))
  .chain(([fields, mods]) =>
    fc.tuple(...mods.map((m) => MODULE_BODY[m])).map((bodies) => ({
      ...fields,
      ...Object.fromEntries(mods.map((m, i) => [m, bodies[i]!])),
    })),
  ) as fc.Arbitrary<Record<string, Json>>;

export const tlsRestrictionArb = MODULE_BODY.ip_restriction;

// ---------------------------------------------------------------- mutations

/** Values that break types and limits in the ways that matter. */
export const nastyValue: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
  fc.constantFrom<Json>(
    "",
    " ",
    "\u0000",
    "a".repeat(300),
    "é".repeat(200),
    "😀".repeat(100),
    "x".repeat(5000),
    "<EntityDescriptor>",
    "../../etc/passwd",
    "%2F..%2F",
    "__proto__",
    "constructor",
    -1,
    0,
    1.5,
    -0,
    4294967296,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    true,
    false,
    null,
    [],
    {},
    [null],
    { "": "" },
    JSON.parse('{"__proto__": 1}') as Json,
  ),
);

const keyArb = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    "enabled",
    "id",
    "uri",
    "__proto__",
    "constructor",
    "prototype",
    "Enabled",
    "backendId",
    "match_type",
    "x-y",
    "",
  ),
);

export type Mutation =
  | { kind: "delete"; pick: number }
  | { kind: "set"; pick: number; value: Json }
  | { kind: "addKey"; pick: number; key: string; value: Json };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("set" as const), pick: fc.nat(), value: nastyValue }),
  fc.record({ kind: fc.constant("addKey" as const), pick: fc.nat(), key: keyArb, value: nastyValue }),
);

/** Every path of a JSON value (root first). */
export function pathsOf(value: unknown, at: JsonPath = []): JsonPath[] {
  const out: JsonPath[] = [at];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...at, i])));
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...at, k]));
  }
  return out;
}

/** Applies one mutation to a copy of `body`; returns the new body and the path it touched. */
export function mutate(body: Json, m: Mutation): { body: Json; path: JsonPath } {
  const copy = JSON.parse(JSON.stringify(body)) as Json;
  const candidates =
    m.kind === "addKey"
      ? pathsOf(copy).filter((p) => {
          const v = getAt(copy, p);
          return v !== null && typeof v === "object" && !Array.isArray(v);
        })
      : pathsOf(copy);
  const p = candidates[m.pick % candidates.length]!;
  if (m.kind === "addKey") {
    const target = getAt(copy, p) as Record<string, Json>;
    // defineProperty: "__proto__" becomes an own key, as JSON.parse makes it on the server.
    Object.defineProperty(target, m.key, {
      value: m.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    return { body: copy, path: [...p, m.key] };
  }
  if (p.length === 0) return { body: m.kind === "delete" ? {} : m.value, path: p };
  const parent = getAt(copy, p.slice(0, -1)) as any;
  const last = p[p.length - 1]!;
  if (m.kind === "delete") {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else {
    Object.defineProperty(parent, last, {
      value: m.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { body: copy, path: p };
}

function getAt(v: Json, p: JsonPath): Json | undefined {
  let cur: any = v;
  for (const seg of p) cur = cur?.[seg];
  return cur;
}

/** The first segment of a `details.field` path: `a.b` → a, `["x y"].b` → x y, `[3]` → 3. */
export function topSegment(field: string): string {
  if (field.startsWith("[")) {
    const m = /^\[("(?:[^"\\]|\\.)*"|\d+)\]/.exec(field);
    return m ? String(JSON.parse(m[1]!)) : field;
  }
  return /^[^.[]*/.exec(field)![0];
}

// ---------------------------------------------------------------- the judge

const CODE_BY_STATUS = new Map<number, Set<string>>();
for (const { code, status } of Object.values(ERROR_CODES)) {
  if (!CODE_BY_STATUS.has(status)) CODE_BY_STATUS.set(status, new Set());
  CODE_BY_STATUS.get(status)!.add(code);
}

export interface Verdict {
  status: number;
  code?: string;
  field?: string;
}

/**
 * The rule of every answer: never 5xx; a 4xx is JSON with exactly error_code, status_code, msg,
 * details; a catalogued code for that status; the operation id of the header repeated in the
 * body; validation errors name a field; and the database is unchanged. Throws (with the request
 * in the message) when any of it fails.
 */
export function judge(
  res: RawResponse,
  fingerprints: { before: string; after: string },
  context: string,
): Verdict {
  const fail = (why: string): never => {
    throw new Error(
      `${why}\n  request: ${context.slice(0, 800)}\n  answer: ${res.status} ${res.text.slice(0, 800)}`,
    );
  };
  if (res.status >= 500) fail("a 5xx answer to a client's input");
  if (res.status < 400) return { status: res.status };
  if (!/^application\/json/.test(res.headers.get("content-type") ?? "")) fail("a 4xx that is not JSON");
  const body = res.json;
  if (!body || typeof body !== "object") fail("a 4xx without a JSON object body");
  const keys = Object.keys(body).sort().join(",");
  if (keys !== "details,error_code,msg,status_code") fail(`error body keys are ${keys}`);
  if (body.status_code !== res.status) fail("status_code differs from the HTTP status");
  if (!CODE_BY_STATUS.get(res.status)?.has(body.error_code))
    fail(`error_code ${body.error_code} is not the catalogue's for ${res.status}`);
  if (typeof body.msg !== "string" || body.msg.length === 0) fail("msg is empty");
  const op = res.headers.get(OPERATION_ID_HEADER);
  if (!op || body.details?.operation_id !== op)
    fail("details.operation_id does not repeat the Request-Id header");
  const field = body.details.field;
  const fieldExpected =
    body.error_code === ERROR_CODES.validation.code || body.error_code === ERROR_CODES.unknownField.code;
  if (fieldExpected && (typeof field !== "string" || field.length === 0))
    fail("a validation error that names no field");
  if (field !== undefined && typeof field !== "string") fail("details.field is not a string");
  if (fingerprints.before !== fingerprints.after) fail("a rejected request changed the database");
  return { status: res.status, code: body.error_code, field };
}

// ---------------------------------------------------------------- figures

/** Tallies of outcomes, written to .test-work/reliability/ for RELIABILITY.md. */
export class Tally {
  private readonly counts: Record<string, Record<string, number>> = {};
  add(operation: string, outcome: string, n = 1): void {
    const op = (this.counts[operation] ??= {});
    op[outcome] = (op[outcome] ?? 0) + n;
  }
  total(): number {
    return Object.values(this.counts).reduce((n, o) => n + Object.values(o).reduce((a, b) => a + b, 0), 0);
  }
  write(name: string): void {
    const dir = path.join(ROOT, ".test-work", "reliability");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, `${name}.json`),
      JSON.stringify({ total: this.total(), ...this.counts }, null, 2),
    );
  }
}

export const outcome = (v: Verdict) => (v.status < 400 ? `${v.status}` : `${v.status} ${v.code}`);
