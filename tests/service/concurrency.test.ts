/**
 * Concurrency (parallel PATCHes of different modules, parallel creates, racing duplicates) and
 * scale (per-request work must not grow with the number of stored routes) — over real HTTP and
 * in-process.
 */
import { ERROR_CODES, ROUTE_MODULES, type RouteModuleName } from "../../sdk/contract";
import type { StoreTx } from "../../service/store/store";
import { SqlTx } from "../../service/store/sql-tx";
import { COMPATIBLE_MODULES, FIXTURES, type Fixture, IDP_METADATA, raw } from "./helpers";

/** A request body for `module` whose content is determined by `tag` (so each round is distinguishable). */
function tagged(module: RouteModuleName, tag: number): Record<string, unknown> {
  switch (module) {
    case "backend":
      return { backend_id: `bkd_${tag}` };
    case "ip_restriction":
      return { ip_policy_ids: [`ipp_${tag}`, `ipp_${tag}_b`] };
    case "circuit_breaker":
      return { tripped_duration: tag, num_buckets: (tag % 128) + 1 };
    case "compression":
    case "websocket_tcp_converter":
      return { enabled: tag % 2 === 0 };
    case "request_headers":
    case "response_headers":
      return { add: { [`X-Round-${tag}`]: String(tag) } };
    case "webhook_verification":
      return { provider: "stripe", secret: `whsec_${tag}` };
    case "saml":
      return { idp_metadata: IDP_METADATA, authorized_groups: [`group_${tag}`] };
    case "user_agent_filter":
      return { allow: [`agent_${tag}`] };
    case "traffic_policy":
      return { value: `policy ${tag}` };
    default:
      throw new Error(`no tagged body for ${module}`);
  }
}

/** What `tagged(module, tag)` must read back as (the part that carries the tag). */
function expectTagged(route: any, module: RouteModuleName, tag: number): void {
  const m = route[module];
  const where = `${module} of round ${tag}`;
  switch (module) {
    case "backend":
      expect([where, m.backend.id]).toEqual([where, `bkd_${tag}`]);
      break;
    case "ip_restriction":
      expect([where, m.ip_policies.map((p: any) => p.id)]).toEqual([where, [`ipp_${tag}`, `ipp_${tag}_b`]]);
      break;
    case "circuit_breaker":
      expect([where, m.tripped_duration, m.num_buckets]).toEqual([where, tag, (tag % 128) + 1]);
      break;
    case "compression":
    case "websocket_tcp_converter":
      expect([where, m.enabled]).toEqual([where, tag % 2 === 0]);
      break;
    case "request_headers":
    case "response_headers":
      expect([where, m.add]).toEqual([where, { [`X-Round-${tag}`]: String(tag) }]);
      break;
    case "webhook_verification":
      expect([where, m.secret]).toEqual([where, `whsec_${tag}`]);
      break;
    case "saml":
      expect([where, m.authorized_groups]).toEqual([where, [`group_${tag}`]]);
      break;
    case "user_agent_filter":
      expect([where, m.allow]).toEqual([where, [`agent_${tag}`]]);
      break;
    case "traffic_policy":
      expect([where, m.value]).toEqual([where, `policy ${tag}`]);
      break;
    default:
      throw new Error(`no check for ${module}`);
  }
}

describe.each(FIXTURES)("concurrency and scale %s", (_name, makeFixture) => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await makeFixture();
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await fx.close();
  });

  it("50 parallel PATCHes spread over the modules of one route, several rounds: every change survives", async () => {
    const edge = await fx.client.createHttpsEdge();
    const route = await fx.client.createRoute(edge.id, {
      match_type: "exact_path",
      match: "/concurrent",
      description: "stays",
    });
    const modules = COMPATIBLE_MODULES;
    expect(modules.length).toBe(11);
    for (let round = 1; round <= 4; round++) {
      // Every PATCH of one module in a round carries the same body, so the end state is exact;
      // a lost update would bring back the previous round's value (or null) for some module.
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const module = modules[i % modules.length]!;
          return raw(fx.transport, "PATCH", `/edges/https/${edge.id}/routes/${route.id}`, {
            body: { [module]: tagged(module, round * 100 + modules.indexOf(module)) },
          });
        }),
      );
      expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
      const after = await fx.client.getRoute(edge.id, route.id);
      for (const module of modules) expectTagged(after, module, round * 100 + modules.indexOf(module));
      expect(after.description).toBe("stays");
      expect(after.oauth).toBeNull();
      expect(after.oidc).toBeNull();
    }
  });

  it("parallel module PUTs and PATCHes on one route mix without losing either", async () => {
    const edge = await fx.client.createHttpsEdge();
    const route = await fx.client.createRoute(edge.id, { match_type: "exact_path", match: "/mixed" });
    const base = `/edges/https/${edge.id}/routes/${route.id}`;
    const half = Math.ceil(COMPATIBLE_MODULES.length / 2);
    const viaPut = COMPATIBLE_MODULES.slice(0, half);
    const viaPatch = COMPATIBLE_MODULES.slice(half);
    const results = await Promise.all([
      ...viaPut.flatMap((m) =>
        [0, 1, 2].map(() => raw(fx.transport, "PUT", `${base}/${m}`, { body: tagged(m, 7) })),
      ),
      ...viaPatch.flatMap((m) =>
        [0, 1, 2].map(() => raw(fx.transport, "PATCH", base, { body: { [m]: tagged(m, 7) } })),
      ),
    ]);
    expect(new Set(results.map((r) => r.status))).toEqual(new Set([200]));
    const after = await fx.client.getRoute(edge.id, route.id);
    for (const m of COMPATIBLE_MODULES) expectTagged(after, m, 7);
  });

  it("50 parallel creates on one edge → 50 distinct routes", async () => {
    const edge = await fx.client.createHttpsEdge();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
          body: { match_type: "path_prefix", match: `/parallel/${i}`, backend: { backend_id: `b${i}` } },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    const ids = results.map((r) => r.json.id);
    expect(new Set(ids).size).toBe(50);
    for (const [i, r] of results.entries()) {
      expect(r.json.match).toBe(`/parallel/${i}`);
      expect(r.json.backend.backend.id).toBe(`b${i}`);
    }
    const list = await fx.client.listRoutes(edge.id);
    expect(list.routes.length).toBe(50);
    expect(new Set(list.routes.map((r) => r.id))).toEqual(new Set(ids));
    expect(new Set(list.routes.map((r) => r.match))).toEqual(new Set(ids.map((_, i) => `/parallel/${i}`)));
  });

  it("50 parallel creates with the same (match_type, match) → exactly one 201 and 49 409s", async () => {
    const edge = await fx.client.createHttpsEdge();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
          body: { match_type: "exact_path", match: "/same", description: `attempt ${i}`, compression: {} },
        }),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    const conflicts = results.filter((r) => r.status === 409);
    expect([created.length, conflicts.length]).toEqual([1, 49]);
    for (const c of conflicts) {
      expect(c.json.error_code).toBe(ERROR_CODES.conflict.code);
      expect(c.json.details.field).toBe("match");
    }
    const list = await fx.client.listRoutes(edge.id);
    expect(list.routes.map((r) => r.id)).toEqual([created[0]!.json.id]);
    expect(list.routes[0]!.description).toBe(created[0]!.json.description);
    // Nothing stored from the losers: one row, with the winner's one module.
    const routeRows = (await fx.store.dump()).routes;
    const ofEdge = routeRows.filter((r) => r.edge_id === edge.id);
    expect(ofEdge.map((r) => [r.id, JSON.parse(String(r.modules))])).toEqual([
      // The canonical form of `compression: {}`: every default filled (the contract's parse).
      [created[0]!.json.id, { compression: ROUTE_MODULES.compression.request.parse({}) }],
    ]);
  });

  it("300 routes on one edge: GET one route and a page of 10 touch only what they return", async () => {
    const edge = await fx.client.createHttpsEdge();
    const ids: string[] = [];
    for (let batch = 0; batch < 6; batch++) {
      // Sequential batches keep creation order (and so the expected page order) known.
      for (let i = 0; i < 50; i++) {
        const n = batch * 50 + i;
        const r = await raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
          body: {
            match_type: "exact_path",
            match: `/scale/${n}`,
            backend: { backend_id: `b${n}` },
            ...(n % 3 === 0 ? { circuit_breaker: { num_buckets: 2 } } : {}),
          },
        });
        expect(r.status).toBe(201);
        ids.push(r.json.id);
      }
    }
    const newestFirst = [...ids].reverse();

    // The transaction handle of both stores.
    const tx: StoreTx = SqlTx.prototype;
    const getRoute = jest.spyOn(tx, "getRoute");
    const getSaml = jest.spyOn(tx, "getSamlCertificates");
    const listRoutes = jest.spyOn(tx, "listRoutes");
    try {
      // One route: its own rows only.
      const target = ids[137]!;
      const one = await raw(fx.transport, "GET", `/edges/https/${edge.id}/routes/${target}`);
      expect(one.status).toBe(200);
      expect(one.json.id).toBe(target);
      expect(one.json.match).toBe("/scale/137");
      expect(one.json.backend.backend.id).toBe("b137");
      expect(one.json.circuit_breaker).toBeNull();
      expect(listRoutes).not.toHaveBeenCalled();
      expect(getRoute.mock.calls).toEqual([[edge.id, target]]);
      // Its modules come with its row; no SAML module, so no certificate is looked up at all.
      expect(getSaml).not.toHaveBeenCalled();

      getRoute.mockClear();
      getSaml.mockClear();
      // A page of 10: one extra row to know whether there is a next page, modules of 10 routes.
      const page = await raw(fx.transport, "GET", `/edges/https/${edge.id}/routes?limit=10`);
      expect(page.status).toBe(200);
      expect(page.json.routes.map((r: any) => r.id)).toEqual(newestFirst.slice(0, 10));
      expect(page.json.routes.map((r: any) => r.match)).toEqual(
        Array.from({ length: 10 }, (_, i) => `/scale/${299 - i}`),
      );
      expect(page.json.routes.map((r: any) => r.circuit_breaker?.num_buckets ?? null)).toEqual(
        Array.from({ length: 10 }, (_, i) => ((299 - i) % 3 === 0 ? 2 : null)),
      );
      expect(page.json.next_page_uri).toBe(
        `${fx.baseUrl}/edges/https/${edge.id}/routes?limit=10&before_id=${newestFirst[9]}`,
      );
      expect(listRoutes.mock.calls).toEqual([[edge.id, 11, undefined]]);
      expect(getRoute).not.toHaveBeenCalled();
      expect(getSaml.mock.calls).toEqual([[[]]]);

      // A page deep inside: still 11 rows asked for.
      listRoutes.mockClear();
      const deep = await raw(
        fx.transport,
        "GET",
        `/edges/https/${edge.id}/routes?limit=10&before_id=${newestFirst[199]}`,
      );
      expect(deep.json.routes.map((r: any) => r.id)).toEqual(newestFirst.slice(200, 210));
      expect(listRoutes.mock.calls.length).toBe(1);
      expect(listRoutes.mock.calls[0]![1]).toBe(11);
    } finally {
      getRoute.mockRestore();
      getSaml.mockRestore();
      listRoutes.mockRestore();
    }

    // Paging through everything with the maximum page size gives every route once, in order.
    const seen: string[] = [];
    let beforeId: string | undefined;
    let pages = 0;
    for (;;) {
      const p = await fx.client.listRoutes(edge.id, { limit: 100, beforeId });
      pages++;
      seen.push(...p.routes.map((r) => r.id));
      if (p.next_page_uri === null) break;
      beforeId = p.routes[p.routes.length - 1]!.id;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(newestFirst);
  });
});
