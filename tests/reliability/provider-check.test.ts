/**
 * The providers' `check`, property-based: whatever the engine hands it (any JS value, valid
 * inputs with one mutation, values still unknown in a preview, pathological nesting), it never
 * throws and always answers `{inputs, failures}` with each failure naming a property; what it
 * accepts is a fixed point (checking it again changes nothing) and the service accepts it too;
 * and `diff` of accepted inputs against a stored route always answers definitely.
 */
import fc from "fast-check";
import {
  edgeCreateSchema,
  ROUTE_MODULE_NAMES,
  type RouteModuleName,
  routeCreateSchema,
  tlsIpRestrictionMutateSchema,
  mapPaths,
} from "../../sdk/contract";
import { fromWire, toCamel, toWire } from "../../provider/model/case";
import { MODULE_PROPERTY, routeCreateRequest } from "../../provider/model/route";
import { containsUnknown, UNKNOWN } from "../../provider/model/unknown";
import { isSecretWrapper } from "../../provider/engine/secrets";
import { SECRET_LEAVES } from "../../provider/model";
import { isProps } from "../../provider/model/check";
import { providers } from "../../provider/runtime";
import { EDGE_ID, ROUTE_ID, storedOutputs } from "../provider/support";
import { routeConfigOf } from "../../provider/model/route";
import type { RouteInputs } from "../../provider/model/types";
import {
  edgeBodyArb,
  type Json,
  MODULE_BODY,
  modulesArb,
  mutate,
  mutationArb,
  Tally,
  topSegment,
} from "./fuzz";
import { FC_SEED } from "./support";

const RUNS = 400;
const tally = new Tally();
afterAll(() => tally.write("provider-check"));

type Kind = keyof typeof providers;
const KINDS = Object.keys(providers) as Kind[];

/**
 * Calls check and asserts the shape of its answer; returns it, its inputs without the secret
 * wrappers the provider puts on credential leaves: the engine strips them before it hands inputs
 * to a provider that does not accept secrets (the dynamic host), so later calls never see them.
 */
async function checked(kind: Kind, olds: unknown, news: unknown) {
  let result: any;
  try {
    result = await providers[kind].check!(olds as any, news as any);
  } catch (e) {
    throw new Error(`${kind}.check threw ${(e as Error)?.stack ?? e} for ${safe(news)}`);
  }
  if (result && typeof result === "object" && isProps(result.inputs)) {
    // Only the credential leaves are wrapped (walked along their paths: an input nested 30,000
    // deep is not walked whole).
    const unwrap = (v: unknown) => (isSecretWrapper(v) ? v.value : v);
    result = { ...result, inputs: mapPaths(result.inputs, SECRET_LEAVES[kind], unwrap, { whole: true }) };
  }
  const where = `${kind}.check(${safe(news)}) → ${safe(result)}`;
  if (!result || typeof result !== "object") throw new Error(`no answer: ${where}`);
  if (!result.inputs || typeof result.inputs !== "object" || Array.isArray(result.inputs))
    throw new Error(`inputs is not an object: ${where}`);
  if (!Array.isArray(result.failures)) throw new Error(`failures is not a list: ${where}`);
  for (const f of result.failures) {
    if (
      typeof f?.property !== "string" ||
      typeof f?.reason !== "string" ||
      f.reason === "" ||
      failureProperty(f) === undefined
    ) {
      throw new Error(`a failure without a property or a reason: ${where}`);
    }
  }
  tally.add(kind, result.failures.length === 0 ? "accepted" : "failures");
  return result as { inputs: Record<string, unknown>; failures: Array<{ property: string; reason: string }> };
}

/**
 * The property a failure is about. Where the engine would print a credential with a property's
 * value, the provider names no property and the reason starts with the path instead
 * (`webhookVerification.secret is [secret]: ...`, `oauth: expected object`).
 */
function failureProperty(f: { property: string; reason: string }): string | undefined {
  if (f.property !== "") return f.property;
  // A bracketed key is JSON-quoted when it is not a word (`oauth["]"]`), so it may hold a "]".
  return /^([A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*|\[(?:"(?:[^"\\]|\\.)*"|[^\]]*)\])*))(?: is |: )/.exec(
    f.reason,
  )?.[1];
}

function safe(v: unknown): string {
  try {
    return (JSON.stringify(v) ?? String(v)).slice(0, 600);
  } catch {
    return "(unprintable)";
  }
}

const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
  withTypedArray: true,
  withUnicodeString: true,
  maxDepth: 4,
});

test("any JS value as news (and as olds): check never throws and answers a failure list", async () => {
  for (const kind of KINDS) {
    await fc.assert(
      fc.asyncProperty(anything, anything, async (olds, news) => {
        await checked(kind, olds, news);
      }),
      { numRuns: RUNS, seed: FC_SEED },
    );
    // And objects whose values are anything, under the property names the provider knows.
    const names = [
      "edgeId",
      "adopt",
      "matchType",
      "match",
      "description",
      "metadata",
      "hostports",
      "enabled",
      "ipPolicyIds",
      ...Object.values(MODULE_PROPERTY),
    ];
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom(...names), anything, { maxKeys: 8 }), async (news) => {
        await checked(kind, {}, news);
      }),
      { numRuns: RUNS, seed: FC_SEED },
    );
  }
});

/** Valid Pulumi-side inputs of each kind (camelCase), from the same generators as the service's. */
const VALID: Record<Kind, fc.Arbitrary<Json>> = {
  httpsEdge: edgeBodyArb.map((b) => fromWire(b) as Json),
  tlsEdge: edgeBodyArb.map((b) => fromWire(b) as Json),
  tlsEdgeIpRestriction: MODULE_BODY.ip_restriction.map(
    (b) => ({ ...(fromWire(b) as object), edgeId: "edgtls_x" }) as Json,
  ),
  httpsEdgeRoute: fc
    .tuple(
      fc.constantFrom("exact_path", "path_prefix"),
      fc.string({ maxLength: 30 }),
      modulesArb,
      fc.boolean(),
    )
    .map(([matchType, description, modules, adopt]) => ({
      edgeId: EDGE_ID,
      matchType,
      match: "/m",
      description,
      adopt,
      ...(fromWire(modules) as Record<string, Json>),
    })),
};

/** The service's schema for what each kind sends, given canonical inputs. */
function serviceAccepts(kind: Kind, inputs: Record<string, unknown>): boolean {
  const { edgeId: _e, adopt: _a, __provider: _p, ...rest } = inputs;
  switch (kind) {
    case "httpsEdgeRoute":
      return routeCreateSchema.safeParse(routeCreateRequest(routeConfigOf(inputs as unknown as RouteInputs)))
        .success;
    case "tlsEdgeIpRestriction":
      return tlsIpRestrictionMutateSchema.safeParse(toWire(rest)).success;
    default:
      return edgeCreateSchema.safeParse(toWire(rest)).success;
  }
}

/** Replaces the value at a random path by the engine's "unknown" marker (a preview before an output resolves). */
const withUnknown = (v: Json, pick: number) => mutate(v, { kind: "set", pick, value: UNKNOWN }).body;

test("valid inputs with one mutation: no throw; failures name the mutated property; accepted inputs are a fixed point the service accepts", async () => {
  for (const kind of KINDS) {
    await fc.assert(
      fc.asyncProperty(
        VALID[kind],
        mutationArb,
        fc.option(fc.nat(), { freq: 4 }),
        async (valid, mutation, unknownAt) => {
          const base = await checked(kind, {}, valid);
          expect([kind, base.failures]).toEqual([kind, []]);
          const { body, path } = mutate(valid, mutation);
          const news = unknownAt === null ? body : withUnknown(body, unknownAt);
          const result = await checked(kind, {}, news);
          if (result.failures.length > 0) {
            if (
              unknownAt === null &&
              path.length > 0 &&
              typeof body === "object" &&
              body !== null &&
              !Array.isArray(body)
            ) {
              const top = String(path[0]);
              // Every failure is about the mutated property (or about the route's one-auth-module rule it broke).
              // camelCase complaints name the path as written, joined with dots.
              for (const failure of result.failures) {
                const property = failureProperty(failure) ?? "";
                const r = topSegment(property);
                const about =
                  r === top ||
                  r === toCamel(top) ||
                  property.startsWith(`${top}.`) ||
                  property === "(inputs)" ||
                  ["oauth", "oidc", "saml"].includes(top);
                if (!about) {
                  throw new Error(
                    `${kind}: mutated ${JSON.stringify(path)}, failure names ${property}: ${safe(result.failures)} for ${safe(news)}`,
                  );
                }
              }
            }
            return;
          }
          if (containsUnknown(news)) return; // not judged until known
          // A fixed point: checking the canonical inputs again, as the engine does when they come back
          // (as the olds, and in the news through ignoreChanges), accepts them unchanged...
          const again = await checked(kind, result.inputs, result.inputs);
          expect([kind, again.failures]).toEqual([kind, []]);
          expect(again.inputs).toEqual(result.inputs);
          // ...and what check accepts, the service accepts (no surprise 400 at `up` after a clean preview).
          if (!serviceAccepts(kind, result.inputs))
            throw new Error(`${kind}: check accepted what the service refuses: ${safe(result.inputs)}`);
        },
      ),
      { numRuns: RUNS, seed: FC_SEED },
    );
  }
});

test("diff of accepted route inputs against a stored route always answers definitely", async () => {
  const stored = await storedOutputs(
    routeConfigOf(
      (
        await checked(
          "httpsEdgeRoute",
          {},
          { edgeId: EDGE_ID, matchType: "path_prefix", match: "/app", backend: { backendId: "b" } },
        )
      ).inputs as unknown as RouteInputs,
    ),
  );
  await fc.assert(
    fc.asyncProperty(VALID.httpsEdgeRoute, mutationArb, fc.boolean(), async (valid, mutation, mutated) => {
      const news = mutated ? mutate(valid, mutation).body : valid;
      const { inputs, failures } = await checked("httpsEdgeRoute", {}, news);
      if (failures.length > 0) return;
      const diff = await providers.httpsEdgeRoute.diff!(ROUTE_ID, stored, inputs as never);
      expect(typeof diff.changes).toBe("boolean");
      expect(Array.isArray(diff.replaces)).toBe(true);
      // The same inputs against themselves (as stored): no change.
      const same = await providers.httpsEdgeRoute.diff!(
        ROUTE_ID,
        await storedOutputs(routeConfigOf(inputs as unknown as RouteInputs)),
        inputs as never,
      );
      if (!containsUnknown(inputs)) expect([safe(inputs), same.changes]).toEqual([safe(inputs), false]);
    }),
    { numRuns: RUNS, seed: FC_SEED },
  );
});

test("pathological inputs (30 000-deep nesting, 100 000-item lists, huge strings, odd keys) fail cleanly", async () => {
  let deepArray: unknown = 1;
  for (let i = 0; i < 30_000; i++) deepArray = [deepArray];
  let deepObject: unknown = 1;
  for (let i = 0; i < 30_000; i++) deepObject = { a: deepObject };
  const huge = "x".repeat(5_000_000);
  const cases: Array<[Kind, Record<string, unknown>]> = [
    ["httpsEdgeRoute", { edgeId: EDGE_ID, matchType: "exact_path", match: "/d", description: deepArray }],
    ["httpsEdgeRoute", { edgeId: EDGE_ID, matchType: "exact_path", match: "/d", backend: deepObject }],
    [
      "httpsEdgeRoute",
      { edgeId: EDGE_ID, matchType: "exact_path", match: "/d", requestHeaders: { add: { X: deepObject } } },
    ],
    [
      "httpsEdgeRoute",
      {
        edgeId: EDGE_ID,
        matchType: "exact_path",
        match: "/d",
        ipRestriction: { ipPolicyIds: Array(100_000).fill(5) },
      },
    ],
    ["httpsEdgeRoute", { edgeId: EDGE_ID, matchType: "exact_path", match: huge, description: huge }],
    ["httpsEdgeRoute", { edgeId: deepArray, matchType: deepObject, match: Symbol("s") }],
    [
      "httpsEdgeRoute",
      JSON.parse('{"__proto__": {"matchType": "exact_path"}, "constructor": 1, "edgeId": "e"}'),
    ],
    ["tlsEdgeIpRestriction", { edgeId: "edgtls_x", ipPolicyIds: deepArray }],
    ["httpsEdge", { hostports: Array(100_000).fill("bad host") }],
    ["tlsEdge", { description: deepObject, metadata: huge }],
  ];
  for (const [kind, news] of cases) {
    const result = await checked(kind, {}, news);
    expect(result.failures.length).toBeGreaterThan(0);
  }
  // Unknown values anywhere are never judged: a preview of a fresh stack passes check.
  const unknownEverywhere = await checked(
    "httpsEdgeRoute",
    {},
    {
      edgeId: UNKNOWN,
      matchType: UNKNOWN,
      match: UNKNOWN,
      backend: UNKNOWN,
      oidc: { issuer: UNKNOWN, clientId: "c", clientSecret: UNKNOWN },
    },
  );
  expect(unknownEverywhere.failures).toEqual([]);
});

test("every module's valid sample is accepted by check (the ground of the mutation property)", async () => {
  for (const m of ROUTE_MODULE_NAMES as RouteModuleName[]) {
    await fc.assert(
      fc.asyncProperty(MODULE_BODY[m], async (body) => {
        const inputs = {
          edgeId: EDGE_ID,
          matchType: "exact_path",
          match: "/s",
          ...(fromWire({ [m]: body }) as object),
        };
        expect([m, (await checked("httpsEdgeRoute", {}, inputs)).failures]).toEqual([m, []]);
      }),
      { numRuns: 30, seed: FC_SEED },
    );
  }
});

test("an unset numBuckets is absent from canonical inputs; a 0 kept from 0.1's old inputs checks again", async () => {
  const news = {
    edgeId: EDGE_ID,
    matchType: "exact_path",
    match: "/b",
    circuitBreaker: { trippedDuration: 30 },
  };
  const first = await checked("httpsEdgeRoute", {}, news);
  expect(first.inputs.circuitBreaker).not.toHaveProperty("numBuckets");
  // ignoreChanges: the engine puts the old inputs' circuitBreaker into the news.
  expect(await checked("httpsEdgeRoute", first.inputs, first.inputs)).toEqual(first);
  // State written by pulumi-edge 0.1 holds the unset value as 0: accepted, and canonical again.
  const legacy = {
    ...first.inputs,
    circuitBreaker: { ...(first.inputs.circuitBreaker as object), numBuckets: 0 },
  };
  expect(await checked("httpsEdgeRoute", legacy, legacy)).toEqual(first);
  // A 0 the program writes on a fresh route, or on one whose buckets are set, is still refused.
  const zero = { ...news, circuitBreaker: { numBuckets: 0 } };
  const bucketsSet = {
    ...first.inputs,
    circuitBreaker: { ...(first.inputs.circuitBreaker as object), numBuckets: 8 },
  };
  for (const olds of [{}, bucketsSet]) {
    expect((await checked("httpsEdgeRoute", olds, zero)).failures).toEqual([
      // As the engine prints it: the module, then the nested field and its value.
      { property: "circuitBreaker", reason: "numBuckets is 0: must be between 1 and 128" },
    ]);
  }
});
