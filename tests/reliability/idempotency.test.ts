/**
 * Regression tests of the duplicate-create bug the fault tests found: a create (POST) whose answer
 * is lost after the server acted (connection reset, 504, timeout) could not be retried safely, so
 * the provider failed the deployment and left an orphan edge or route behind (a route then blocked
 * the next `up` with a 409). Creates now carry an `Idempotency-Key`; the service answers a repeat
 * with what the first create made, atomically with it.
 */
import { storeFingerprint } from "../support/fingerprint";
import { EdgeClient } from "../../sdk/client";
import { ERROR_CODES } from "../../sdk/contract";
import { startServer } from "../../sdk/service/server";
import { httpTransport } from "../../sdk/transport";
import {
  expectRejected,
  fillIds,
  FIXTURES,
  type Fixture,
  makeTempDir,
  raw,
  type RawResponse,
  REJECTED,
  type Rejection,
  removeDir,
} from "../service/helpers";
import { type FaultAction, faultProxy } from "./support";

describe("a create whose answer is lost after the server acted", () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServer>>;
  let direct: EdgeClient;
  beforeAll(async () => {
    dataDir = makeTempDir("idem");
    server = await startServer({ dataDir, port: 0 });
    direct = new EdgeClient(httpTransport({ baseUrl: server.url, retries: 0 }));
  });
  afterAll(async () => {
    await server.close();
    removeDir(dataDir);
  });

  /** A proxy that loses the answer of the first POST (after the server acted) with `action`. */
  const losingFirstPost = (action: FaultAction) => {
    let first = true;
    return faultProxy({
      target: server.url,
      seed: 1,
      rate: 0,
      intercept: ({ method }) => {
        if (method !== "POST" || !first) return undefined;
        first = false;
        return action;
      },
    });
  };

  test.each(["reset-after", "504-after", "stall-after"] as const)(
    "%s: without idempotency keys the create fails and leaves an orphan (why keys are needed)",
    async (action) => {
      const proxy = await losingFirstPost(action);
      try {
        const client = new EdgeClient(
          httpTransport({ baseUrl: proxy.url, retries: 3, backoffMs: 1, timeoutMs: 1000 }),
        );
        const before = (await direct.listHttpsEdges()).https_edges.length;
        await expect(client.createHttpsEdge({ description: `orphan ${action}` })).rejects.toThrow();
        // The server did create it: nothing in the caller's hands names it.
        expect((await direct.listHttpsEdges()).https_edges.length).toBe(before + 1);
        expect(proxy.log.filter((r) => r.method === "POST")).toHaveLength(1);
      } finally {
        await proxy.close();
      }
    },
  );

  test.each(["reset-after", "504-after", "stall-after"] as const)(
    "%s: with idempotency keys the retry answers the first create: exactly one edge and one route",
    async (action) => {
      const edgeProxy = await losingFirstPost(action);
      let edgeId: string;
      try {
        const client = new EdgeClient(
          httpTransport({
            baseUrl: edgeProxy.url,
            retries: 3,
            backoffMs: 1,
            timeoutMs: 1000,
            idempotencyKeys: true,
          }),
        );
        const before = (await direct.listHttpsEdges()).https_edges.length;
        const edge = await client.createHttpsEdge({ description: `once ${action}` });
        edgeId = edge.id;
        const all = (await direct.listHttpsEdges()).https_edges;
        expect(all.length).toBe(before + 1);
        expect(all.filter((e) => e.description === `once ${action}`).map((e) => e.id)).toEqual([edge.id]);
        const posts = edgeProxy.log.filter((r) => r.method === "POST");
        expect(posts.length).toBe(2);
        expect(posts[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
        expect(posts[1]!.idempotencyKey).toBe(posts[0]!.idempotencyKey);
      } finally {
        await edgeProxy.close();
      }
      const routeProxy = await losingFirstPost(action);
      try {
        const client = new EdgeClient(
          httpTransport({
            baseUrl: routeProxy.url,
            retries: 3,
            backoffMs: 1,
            timeoutMs: 1000,
            idempotencyKeys: true,
          }),
        );
        const route = await client.createRoute(edgeId, {
          match_type: "exact_path",
          match: "/once",
          backend: { backend_id: "b" },
        });
        expect((await direct.listRoutes(edgeId)).routes.map((r) => r.id)).toEqual([route.id]);
        expect(routeProxy.log.filter((r) => r.method === "POST")).toHaveLength(2);
      } finally {
        await routeProxy.close();
      }
    },
  );

  test("a POST with a key is retried after a 503, a reset or a stall before the server saw it", async () => {
    for (const action of ["503", "reset-before", "stall-before"] as const) {
      const proxy = await losingFirstPost(action);
      try {
        const keyed = new EdgeClient(
          httpTransport({
            baseUrl: proxy.url,
            retries: 2,
            backoffMs: 1,
            timeoutMs: 1000,
            idempotencyKeys: true,
          }),
        );
        await keyed.createTlsEdge({ description: `keyed ${action}` });
        expect([action, proxy.log.length]).toEqual([action, 2]);
      } finally {
        await proxy.close();
      }
    }
  });

  test("the key survives a restart of the server (it is stored with the create)", async () => {
    const key = "restart-key-1";
    const body = { description: "restart" };
    const first = await raw(direct.transport, "POST", "/edges/tls", {
      body,
      headers: { "idempotency-key": key },
    });
    expect(first.status).toBe(201);
    await server.close();
    server = await startServer({ dataDir, port: 0 });
    direct = new EdgeClient(httpTransport({ baseUrl: server.url, retries: 0 }));
    const again = await raw(direct.transport, "POST", "/edges/tls", {
      body,
      headers: { "idempotency-key": key },
    });
    expect([again.status, again.json.id]).toEqual([201, first.json.id]);
    expect((await direct.listTlsEdges()).tls_edges.filter((e) => e.description === "restart")).toHaveLength(
      1,
    );
  });
});

describe.each(FIXTURES)("Idempotency-Key rules %s", (_label, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge({})).id;
  });
  afterAll(async () => fx?.close());

  const routes = () => `/edges/https/${edgeId}/routes`;

  test("a repeat answers the first create and changes nothing", async () => {
    const body = {
      match_type: "exact_path",
      match: "/k1",
      oidc: { issuer: "https://i.example.com", client_id: "c", client_secret: "s" },
    };
    const headers = { "idempotency-key": `k1-${fx.kind}` };
    const first = await raw(fx.transport, "POST", routes(), { body, headers });
    expect(first.status).toBe(201);
    const before = await storeFingerprint(fx.store);
    const again = await raw(fx.transport, "POST", routes(), { body, headers });
    expect([again.status, again.json]).toEqual([201, first.json]);
    expect(await storeFingerprint(fx.store)).toBe(before);
    // Without the key the same body is a second create: a 409 (same match).
    expect((await raw(fx.transport, "POST", routes(), { body })).status).toBe(409);
  });

  describe("the same key with another body, or a malformed key: 400 naming Idempotency-Key, nothing changed", () => {
    let ids: { edge: string; key: string };
    let first: RawResponse;
    beforeAll(async () => {
      ids = { edge: edgeId, key: `k2-${fx.kind}` };
      first = await raw(fx.transport, "POST", routes(), {
        body: { match_type: "exact_path", match: "/k2" },
        headers: { "idempotency-key": ids.key },
      });
    });
    test("the first create with the key → 201", () => {
      expect(first.status).toBe(201);
    });
    const invalidKey = { status: 400, code: ERROR_CODES.validation.code, field: "Idempotency-Key" };
    test.each<Rejection>([
      {
        case: "the key again with another body",
        method: "POST",
        path: "/edges/https/{edge}/routes",
        body: { match_type: "exact_path", match: "/k2-other" },
        headers: { "idempotency-key": "{key}" },
        ...invalidKey,
      },
      {
        case: "a key of 256 characters",
        method: "POST",
        path: "/edges/https/{edge}/routes",
        body: { match_type: "exact_path", match: "/k2-long" },
        headers: { "idempotency-key": "x".repeat(256) },
        ...invalidKey,
      },
      {
        case: "a key with a space",
        method: "POST",
        path: "/edges/https/{edge}/routes",
        body: {},
        headers: { "idempotency-key": "with space" },
        ...invalidKey,
      },
      // A key used for a route create is another request than an edge create.
      {
        case: "the key of a route create on an edge create",
        method: "POST",
        path: "/edges/https",
        body: {},
        headers: { "idempotency-key": "{key}" },
        ...invalidKey,
      },
    ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
  });

  test("a rejected create does not consume its key", async () => {
    const headers = { "idempotency-key": `k3-${fx.kind}` };
    const bad = await raw(fx.transport, "POST", routes(), {
      body: { match_type: "exact_path", match: "" },
      headers,
    });
    expect(bad.status).toBe(400);
    const good = await raw(fx.transport, "POST", routes(), {
      body: { match_type: "exact_path", match: "/k3" },
      headers,
    });
    expect(good.status).toBe(201);
  });

  test("20 concurrent creates with one key: one object, twenty identical answers", async () => {
    const headers = { "idempotency-key": `k4-${fx.kind}` };
    const body = { match_type: "path_prefix", match: "/k4" };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => raw(fx.transport, "POST", routes(), { body, headers })),
    );
    expect(new Set(answers.map((a) => `${a.status} ${a.json.id}`)).size).toBe(1);
    expect(answers[0]!.status).toBe(201);
    const all = (await fx.client.listRoutes(edgeId)).routes.filter((r) => r.match === "/k4");
    expect(all).toHaveLength(1);
  });
});
