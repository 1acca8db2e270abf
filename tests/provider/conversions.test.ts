/**
 * How often one update converts and validates, on the packaged face's real provider against the
 * embedded service (in memory): one change of `circuitBreaker.numBuckets`, the calls the engine
 * makes for it in `pulumi up --skip-preview` (Check, Diff, Update). The brain decodes once at the
 * entry of each call and encodes once on exit: each call passes zod once over the program's or
 * the state's values, converts camelCase ⇄ wire at most once each way, and never goes through JSON
 * text to compare.
 */
import { z } from "zod";
import * as contract from "../../sdk/contract";
import { EdgeClient } from "../../sdk/client";
import * as client from "../../provider/client";
import * as caseModule from "../../provider/model/case";
import * as planModule from "../../provider/plan/route";
import { EdgeProvider } from "../../provider/plugin/provider";
import type { Transport } from "../../sdk/transport";
import { closeEmbeddedStores, embeddedTransport } from "../../service/embedded";

/** The service runs in this process: what it does while answering is not the provider's, and not counted. */
let inService = false;
const service = embeddedTransport({ dataDir: ":memory:" });
const transport: Transport = {
  baseUrl: service.baseUrl,
  async send(request, options) {
    inService = true;
    try {
      return await service.send(request, options);
    } finally {
      inService = false;
    }
  },
};

const URN = "urn:pulumi:dev::conversions::edge:index:HttpsEdgeRoute::api";
const EDGE_URN = "urn:pulumi:dev::conversions::edge:index:HttpsEdge::web";

/** Every top-level parse of a contract schema (nested schemas run inside and are not counted). */
function countParses(): { counts: Map<string, number>; restore: () => void } {
  const counts = new Map<string, number>();
  const restores: Array<() => void> = [];
  const seen = new Set<object>();
  const wrap = (name: string, schema: unknown) => {
    if (!(schema instanceof z.ZodType) || seen.has(schema)) return;
    seen.add(schema);
    for (const method of ["parse", "safeParse"] as const) {
      const original = schema[method].bind(schema) as (...a: unknown[]) => unknown;
      Object.defineProperty(schema, method, {
        configurable: true,
        writable: true,
        value: (...args: unknown[]) => {
          if (!inService) counts.set(name, (counts.get(name) ?? 0) + 1);
          return original(...args);
        },
      });
      restores.push(() => delete (schema as unknown as Record<string, unknown>)[method]);
    }
  };
  for (const [name, value] of Object.entries(contract)) wrap(name, value);
  for (const [name, m] of Object.entries(contract.ROUTE_MODULES)) {
    wrap(`${name}.request`, m.request);
    wrap(`${name}.response`, m.response);
  }
  return { counts, restore: () => restores.forEach((r) => r()) };
}

interface Tally {
  zod: number;
  toWire: number;
  fromWire: number;
  plans: number;
  stringify: number;
}

async function measure<T>(run: () => Promise<T>): Promise<{ value: T; tally: Tally }> {
  const parses = countParses();
  const counted = <F extends (...a: never[]) => unknown>(f: F) => {
    let n = 0;
    const wrapped = ((...a: Parameters<F>) => {
      if (!inService) n++;
      return f(...a);
    }) as unknown as F;
    return { wrapped, count: () => n };
  };
  const toWire = counted(caseModule.toWire);
  const fromWire = counted(caseModule.fromWire);
  const plans = counted(planModule.planRoute);
  const stringify = counted(JSON.stringify);
  jest.spyOn(caseModule, "toWire").mockImplementation(toWire.wrapped);
  jest.spyOn(caseModule, "fromWire").mockImplementation(fromWire.wrapped);
  jest.spyOn(planModule, "planRoute").mockImplementation(plans.wrapped);
  jest.spyOn(JSON, "stringify").mockImplementation(stringify.wrapped);
  try {
    const value = await run();
    const zod = [...parses.counts.values()].reduce((a, b) => a + b, 0);
    return {
      value,
      tally: {
        zod,
        toWire: toWire.count(),
        fromWire: fromWire.count(),
        plans: plans.count(),
        stringify: stringify.count(),
      },
    };
  } finally {
    parses.restore();
    for (const f of [caseModule.toWire, caseModule.fromWire, planModule.planRoute, JSON.stringify]) {
      (f as unknown as jest.Mock).mockRestore?.();
    }
  }
}

afterAll(() => closeEmbeddedStores());

test("one numBuckets change: Check, Diff and Update each decode once and encode once", async () => {
  jest.spyOn(client, "edgeClient").mockReturnValue(new EdgeClient(transport));
  const provider = new EdgeProvider();
  const edge = await provider.create(EDGE_URN, (await provider.check(EDGE_URN, {}, {})).inputs);
  const program = (numBuckets: number) => ({
    edgeId: edge.id,
    matchType: "path_prefix",
    match: "/api",
    backend: { backendId: "bkd_1" },
    circuitBreaker: { numBuckets, errorThresholdPercentage: 0.5 },
    requestHeaders: { add: { "X-Foo": "bar" } },
  });
  const first = (await provider.check(URN, {}, program(10))).inputs;
  const created = await provider.create(URN, first);

  const check = await measure(() => provider.check(URN, first, program(12)));
  const news = check.value.inputs;
  const diff = await measure(() => provider.diff(created.id, URN, created.outs, news));
  expect(diff.value.changes).toBe(true);
  const update = await measure(() => provider.update(created.id, URN, created.outs, news));
  expect((update.value.outs as { circuitBreaker: { numBuckets: number } }).circuitBreaker.numBuckets).toBe(
    12,
  );

  const report = { check: check.tally, diff: diff.tally, update: update.tally };
  console.log(`conversions per call: ${JSON.stringify(report)}`);
  expect(report).toEqual({
    check: { zod: 1, toWire: 1, fromWire: 1, plans: 0, stringify: 0 },
    diff: { zod: 1, toWire: 2, fromWire: 0, plans: 1, stringify: 0 },
    // The client checks the service's answer against the contract too (the route schema): one more parse.
    update: { zod: 2, toWire: 2, fromWire: 1, plans: 1, stringify: 1 },
  });
});
