/**
 * Regression tests of the duplicate-create bug the fault tests found: a create (POST) whose answer
 * is lost after the server acted (connection reset, 504, timeout) could not be retried safely, so
 * the provider failed the deployment and left an orphan edge or route behind (a route then blocked
 * the next `up` with a 409). Creates now carry an `Idempotency-Key`; the service answers a repeat
 * with what the first create made, atomically with it. The key is kept on that object for as long
 * as it exists (a later Pulumi run derives the same key again: exactly-once across runs).
 */
import { storeFingerprint } from "../support/fingerprint";
import { EdgeClient } from "../../sdk/client";
import { ERROR_CODES } from "../../sdk/contract";
import { startServer } from "../../service/http/server";
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
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const before = await storeFingerprint(fx.store);
    const again = await raw(fx.transport, "POST", routes(), { body, headers });
    expect([again.status, again.json]).toEqual([201, first.json]);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
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

describe.each(FIXTURES)("a create's key lives as long as its object %s", (_label, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  let tlsId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge({})).id;
    tlsId = (await fx.client.createTlsEdge({})).id;
  });
  afterAll(async () => fx?.close());
  const routes = () => `/edges/https/${edgeId}/routes`;

  test("a repeat answers the object as it is now, not as it was created", async () => {
    const body = { match_type: "exact_path", match: "/now" };
    const headers = { "idempotency-key": `now-${fx.kind}` };
    const first = await raw(fx.transport, "POST", routes(), { body, headers });
    await fx.client.updateRoute(edgeId, first.json.id, { description: "changed since" });
    const again = await raw(fx.transport, "POST", routes(), { body, headers });
    expect([again.status, again.json.id, again.json.description]).toEqual([
      201,
      first.json.id,
      "changed since",
    ]);
  });

  test("deleting the object forgets its key: the same create then makes a new object", async () => {
    const body = { match_type: "exact_path", match: "/gone-and-back" };
    const headers = { "idempotency-key": `gone-${fx.kind}` };
    const first = await raw(fx.transport, "POST", routes(), { body, headers });
    await fx.client.deleteRoute(edgeId, first.json.id);
    const again = await raw(fx.transport, "POST", routes(), { body, headers });
    expect(again.status).toBe(201);
    expect(again.json.id).not.toBe(first.json.id);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    // The same for an edge, and for the routes an edge's delete takes with it.
    const edgeHeaders = { "idempotency-key": `gone-edge-${fx.kind}` };
    const edge = await raw(fx.transport, "POST", "/edges/https", { body: {}, headers: edgeHeaders });
    const routeHeaders = { "idempotency-key": `gone-child-${fx.kind}` };
    const child = { match_type: "exact_path", match: "/child" };
    const path = `/edges/https/${edge.json.id}/routes`;
    expect((await raw(fx.transport, "POST", path, { body: child, headers: routeHeaders })).status).toBe(201);
    await fx.client.deleteHttpsEdge(edge.json.id);
    const edgeAgain = await raw(fx.transport, "POST", "/edges/https", { body: {}, headers: edgeHeaders });
    expect(edgeAgain.json.id).not.toBe(edge.json.id);
    // The child's key went with it: reused on another edge's path it is a new request, not a 400.
    const moved = await raw(fx.transport, "POST", `/edges/https/${edgeAgain.json.id}/routes`, {
      body: child,
      headers: routeHeaders,
    });
    expect(moved.status).toBe(201);
  });

  describe("a PUT of a TLS IP restriction with a key is a create", () => {
    const put = (body: unknown, key?: string) =>
      raw(fx.transport, "PUT", `/edges/tls/${tlsId}/ip_restriction`, {
        body,
        headers: key ? { "idempotency-key": key } : {},
      });

    test("it sets the module once; a repeat answers it as it is now; another request with the key: 400", async () => {
      const first = await put({ ip_policy_ids: ["p1"] }, `tls-${fx.kind}`);
      expect(first.status).toBe(200);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      // A plain PUT replaces it, as always; the key still names the module.
      expect((await put({ ip_policy_ids: ["p2"] })).status).toBe(200);
      const again = await put({ ip_policy_ids: ["p1"] }, `tls-${fx.kind}`);
      expect([again.status, again.json.ip_policies.map((r: { id: string }) => r.id)]).toEqual([200, ["p2"]]);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      const other = await put({ ip_policy_ids: ["p3"] }, `tls-${fx.kind}`);
      expect([other.status, other.json.details.field]).toEqual([400, "Idempotency-Key"]);
    });

    test("where a module is configured already, a keyed PUT is a 409 and changes nothing", async () => {
      const before = await storeFingerprint(fx.store);
      const clash = await put({ ip_policy_ids: ["p9"] }, `tls-other-${fx.kind}`);
      expect([clash.status, clash.json.error_code]).toEqual([409, ERROR_CODES.conflict.code]);
      expect(await storeFingerprint(fx.store)).toBe(before);
    });

    test("deleting the module forgets the key", async () => {
      await fx.client.deleteTlsIpRestriction(tlsId);
      const fresh = await put({ ip_policy_ids: ["p4"] }, `tls-${fx.kind}`);
      expect([fresh.status, fresh.headers.get("idempotent-replayed")]).toEqual([200, null]);
    });
  });
});

describe.each(FIXTURES)("a key names only what it made %s", (_label, makeFixture) => {
  // No header lets a create take an object another key made: a client that names an object's key
  // as a "prior" one (a header pulumi-edge sent before it stopped guessing) changes nothing, and
  // the object keeps its own key.
  let fx: Fixture;
  let edgeId: string;
  let tlsId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge({})).id;
    tlsId = (await fx.client.createTlsEdge({})).id;
  });
  afterAll(async () => fx?.close());
  const routes = () => `/edges/https/${edgeId}/routes`;
  const keys = (key: string, prior?: string) => ({
    "idempotency-key": `${key}-${fx.kind}`,
    ...(prior ? { "idempotency-prior-key": `${prior}-${fx.kind}` } : {}),
  });

  test("a route: another key conflicts on its match, twice and three times, and re-keys nothing", async () => {
    const body = { match_type: "exact_path", match: "/theirs" };
    const first = await raw(fx.transport, "POST", routes(), { body, headers: keys("theirs") });
    expect(first.status).toBe(201);
    for (let run = 0; run < 3; run++) {
      const again = await raw(fx.transport, "POST", routes(), { body, headers: keys("mine", "theirs") });
      expect([again.status, again.json.error_code, again.headers.get("idempotent-replayed")]).toEqual([
        409,
        ERROR_CODES.conflict.code,
        null,
      ]);
    }
    // The object still answers its own key, and only it.
    const byOwn = await raw(fx.transport, "POST", routes(), { body, headers: keys("theirs") });
    expect([byOwn.json.id, byOwn.headers.get("idempotent-replayed")]).toEqual([first.json.id, "true"]);
    expect((await fx.client.listRoutes(edgeId)).routes.map((r) => r.match)).toEqual(["/theirs"]);
  });

  test("an edge: another key makes another edge, or conflicts on a hostport it shares", async () => {
    const a = await raw(fx.transport, "POST", "/edges/https", { body: {}, headers: keys("edge-a") });
    const other = await raw(fx.transport, "POST", "/edges/https", {
      body: {},
      headers: keys("edge-b", "edge-a"),
    });
    expect([other.status, other.headers.get("idempotent-replayed")]).toEqual([201, null]);
    expect(other.json.id).not.toBe(a.json.id);
    const body = { hostports: [`keyed-${fx.kind}.example.com:443`] };
    const held = await raw(fx.transport, "POST", "/edges/https", { body, headers: keys("edge-c") });
    expect(held.status).toBe(201);
    for (let run = 0; run < 2; run++) {
      const taken = await raw(fx.transport, "POST", "/edges/https", {
        body,
        headers: keys("edge-d", "edge-c"),
      });
      expect([taken.status, taken.json.details.field]).toEqual([409, "hostports"]);
      expect(taken.json.msg).toContain(held.json.id);
    }
  });

  test("a TLS IP restriction: another key's keyed PUT conflicts with the module it did not make", async () => {
    const put = (headers: Record<string, string>) =>
      raw(fx.transport, "PUT", `/edges/tls/${tlsId}/ip_restriction`, {
        body: { ip_policy_ids: ["p1"] },
        headers,
      });
    expect((await put(keys("tls-theirs"))).status).toBe(200);
    for (let run = 0; run < 3; run++) {
      expect((await put(keys("tls-mine", "tls-theirs"))).status).toBe(409);
    }
    expect((await put(keys("tls-theirs"))).headers.get("idempotent-replayed")).toBe("true");
  });
});

describe.each(FIXTURES)("a hostport belongs to one edge at a time %s", (_label, makeFixture) => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await makeFixture();
  });
  afterAll(async () => fx?.close());
  const host = (name: string) => `${name}-${fx.kind}.example.com`;

  test("an edge of either kind naming another's hostport (in any case) is a 409 naming it; nothing made", async () => {
    const first = await fx.client.createHttpsEdge({
      hostports: [`${host("shop")}:443`, `${host("api")}:443`],
    });
    const before = (await fx.client.listTlsEdges()).tls_edges.length;
    for (const [path, hostports] of [
      ["/edges/https", [`${host("SHOP")}:443`]],
      ["/edges/tls", [`${host("other")}:8443`, `${host("api")}:443`]],
    ] as const) {
      const answer = await raw(fx.transport, "POST", path, { body: { hostports } });
      expect([answer.status, answer.json.error_code, answer.json.details.field]).toEqual([
        409,
        ERROR_CODES.conflict.code,
        "hostports",
      ]);
      expect(answer.json.msg).toMatch(new RegExp(`already belongs to HTTPS edge ${first.id}`));
    }
    expect((await fx.client.listTlsEdges()).tls_edges).toHaveLength(before);
    // Another port of the same host is another hostport; a deleted edge frees its hostports.
    await fx.client.createTlsEdge({ hostports: [`${host("shop")}:8443`] });
    await fx.client.deleteHttpsEdge(first.id);
    expect((await fx.client.createTlsEdge({ hostports: [`${host("shop")}:443`] })).hostports).toEqual([
      `${host("shop")}:443`,
    ]);
  });

  test("every spelling of one hostport is that hostport: taken in its one spelling, and a 409 naming the holder", async () => {
    const made = await raw(fx.transport, "POST", "/edges/https", {
      body: { hostports: [`${host("Spelled")}:443`] },
    });
    expect([made.status, made.json.hostports]).toEqual([201, [`${host("spelled")}:443`]]);
    for (const [path, spelling] of [
      ["/edges/https", `${host("spelled")}:0443`],
      ["/edges/tls", `${host("SPELLED").toUpperCase()}:00443`],
      ["/edges/tls", `${host("spelled")}:443`],
    ] as const) {
      const answer = await raw(fx.transport, "POST", path, { body: { hostports: [spelling] } });
      expect([spelling, answer.status, answer.json.details.object_id]).toEqual([spelling, 409, made.json.id]);
    }
    const holders = [
      ...(await fx.client.listHttpsEdges()).https_edges,
      ...(await fx.client.listTlsEdges()).tls_edges,
    ].filter((e) => e.hostports.includes(`${host("spelled")}:443`));
    expect(holders.map((e) => e.id)).toEqual([made.json.id]);
  });

  test("an Idempotency-Key sent again with another request names the object it made", async () => {
    const key = { "Idempotency-Key": `named-${fx.kind}-${Date.now()}` };
    const first = await raw(fx.transport, "POST", "/edges/https", {
      body: { description: "one" },
      headers: key,
    });
    const other = await raw(fx.transport, "POST", "/edges/https", {
      body: { description: "two" },
      headers: key,
    });
    expect([other.status, other.json.details.field, other.json.details.object_id]).toEqual([
      400,
      "Idempotency-Key",
      first.json.id,
    ]);
  });

  test("a hostport twice in one request is a 400 naming the second", async () => {
    const answer = await raw(fx.transport, "POST", "/edges/https", {
      body: { hostports: [`${host("twice")}:443`, `${host("TWICE")}:0443`] },
    });
    expect([answer.status, answer.json.details.field]).toEqual([400, "hostports[1]"]);
  });

  test("two concurrent creates naming one hostport: exactly one edge holds it", async () => {
    const hostports = [`${host("race")}:443`];
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => raw(fx.transport, "POST", "/edges/https", { body: { hostports } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const holders = (await fx.client.listHttpsEdges()).https_edges.filter((e) =>
      e.hostports.includes(hostports[0]!),
    );
    expect(holders).toHaveLength(1);
  });
});
