/**
 * Every operation of the API (edges, routes, paging, TLS IP restriction), ids, Refs and uris,
 * 404/405, and the wire rules of docs/decisions.md#wire (413, 415, bad JSON, non-object, bad UTF-8)
 * — the same suite over real HTTP and in-process.
 */
import { storeFingerprint } from "../support/fingerprint";
import { ERROR_CODES, OPERATION_ID_HEADER } from "../../sdk/contract";
import {
  expectApiError,
  expectedModule,
  expectErrorBody,
  expectRejected,
  fillIds,
  FIXTURES,
  type Fixture,
  ID_RE,
  raw,
  type RawResponse,
  REJECTED,
  type Rejection,
  uniqueMatch,
} from "./helpers";

const E = ERROR_CODES;

describe.each(FIXTURES)("edge API resources %s", (_name, makeFixture) => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await makeFixture();
  });
  afterAll(async () => {
    await fx.close();
  });

  const newEdge = () => fx.client.createHttpsEdge({ description: "edge" });

  describe("HTTPS edges", () => {
    it("create → 201 with a generated id, defaults, uri and an operation id header", async () => {
      const res = await raw(fx.transport, "POST", "/edges/https", {
        body: { description: "my edge", metadata: '{"k":1}', hostports: ["example.com:443"] },
      });
      expect(res.status).toBe(201);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get(OPERATION_ID_HEADER)).toMatch(/^op_[0-9A-Za-z]{20}$/);
      const edge = res.json;
      expect(edge.id).toMatch(ID_RE.httpsEdge);
      expect(edge).toEqual({
        id: edge.id,
        uri: `${fx.baseUrl}/edges/https/${edge.id}`,
        created_at: edge.created_at,
        description: "my edge",
        metadata: '{"k":1}',
        hostports: ["example.com:443"],
        routes: [],
      });
      expect(new Date(edge.created_at).toISOString()).toBe(edge.created_at);

      const empty = await fx.client.createHttpsEdge();
      expect(empty.description).toBe("");
      expect(empty.metadata).toBe("");
      expect(empty.hostports).toEqual([]);
      expect(empty.id).not.toBe(edge.id);
    });

    it("get returns the edge with its routes (oldest first); delete → 204 and removes its routes", async () => {
      const edge = await newEdge();
      const r1 = await fx.client.createRoute(edge.id, { match_type: "exact_path", match: "/one" });
      const r2 = await fx.client.createRoute(edge.id, {
        match_type: "path_prefix",
        match: "/two",
        backend: { backend_id: "b1" },
      });
      const got = await fx.client.getHttpsEdge(edge.id);
      expect(got.routes.map((r) => r.id)).toEqual([r1.id, r2.id]);
      expect(got.routes[1]).toEqual(r2);
      expect({ ...got, routes: [] }).toEqual({ ...edge, routes: [] });

      const del = await raw(fx.transport, "DELETE", `/edges/https/${edge.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");
      expect(del.headers.get(OPERATION_ID_HEADER)).toMatch(/^op_/);
      await expectApiError(fx.client.getHttpsEdge(edge.id), 404, E.notFound.code);
      await expectApiError(fx.client.getRoute(edge.id, r1.id), 404, E.notFound.code);
      expect(await storeFingerprint(fx.store)).not.toContain(r1.id);
      expect(await storeFingerprint(fx.store)).not.toContain(r2.id);
      expect(await storeFingerprint(fx.store)).not.toContain(edge.id);
      await expectRejected(fx, {
        method: "DELETE",
        path: `/edges/https/${edge.id}`,
        status: 404,
        code: E.notFound.code,
        field: null,
      });
    });

    it("list pages newest first with limit / before_id and next_page_uri", async () => {
      const created = [];
      for (let i = 0; i < 5; i++) created.push(await newEdge());
      const newestFirst = created.map((e) => e.id).reverse();

      const p1 = await raw(fx.transport, "GET", "/edges/https?limit=2");
      expect(p1.status).toBe(200);
      expect(p1.json.uri).toBe(`${fx.baseUrl}/edges/https`);
      expect(p1.json.https_edges.map((e: any) => e.id)).toEqual(newestFirst.slice(0, 2));
      expect(p1.json.next_page_uri).toBe(`${fx.baseUrl}/edges/https?limit=2&before_id=${newestFirst[1]}`);

      const p2 = await raw(fx.transport, "GET", p1.json.next_page_uri.slice(fx.baseUrl.length));
      expect(p2.json.https_edges.map((e: any) => e.id)).toEqual(newestFirst.slice(2, 4));

      const all = await fx.client.listHttpsEdges();
      expect(all.https_edges.slice(0, 5).map((e) => e.id)).toEqual(newestFirst);
      expect(all.next_page_uri).toBeNull();
      const last = await fx.client.listHttpsEdges({ beforeId: newestFirst[4] });
      expect(last.https_edges.map((e) => e.id)).not.toContain(newestFirst[4]);
    });

    describe("rejects invalid edge bodies with the field at fault and stores nothing", () => {
      it.each<Rejection>([
        {
          case: "a hostport without a port",
          method: "POST",
          path: "/edges/https",
          body: { hostports: ["example.com"] },
          status: 400,
          code: E.validation.code,
          field: "hostports[0]",
        },
        {
          case: "a hostport with a port above 65535",
          method: "POST",
          path: "/edges/https",
          body: { hostports: ["example.com:70000"] },
          status: 400,
          code: E.validation.code,
          field: "hostports[0]",
        },
        {
          case: "an unknown field (a typo)",
          method: "POST",
          path: "/edges/tls",
          body: { descripton: "typo" },
          status: 400,
          code: E.unknownField.code,
          field: "descripton",
        },
        {
          case: "a description of 128 × é = 256 bytes",
          method: "POST",
          path: "/edges/https",
          body: { description: "é".repeat(128) },
          status: 400,
          code: E.validation.code,
          field: "description",
        },
        {
          case: "metadata of 1366 × € = 4098 bytes",
          method: "POST",
          path: "/edges/tls",
          body: { metadata: "€".repeat(1366) },
          status: 400,
          code: E.validation.code,
          field: "metadata",
        },
      ])(REJECTED, (row) => expectRejected(fx, row));
    });
  });

  describe("TLS edges and their IP restriction", () => {
    it("create / get / list / delete a TLS edge", async () => {
      const res = await raw(fx.transport, "POST", "/edges/tls", {
        body: { hostports: ["tls.example.com:443"] },
      });
      expect(res.status).toBe(201);
      const edge = res.json;
      expect(edge.id).toMatch(ID_RE.tlsEdge);
      expect(edge).toEqual({
        id: edge.id,
        uri: `${fx.baseUrl}/edges/tls/${edge.id}`,
        created_at: edge.created_at,
        description: "",
        metadata: "",
        hostports: ["tls.example.com:443"],
        ip_restriction: null,
      });
      expect(await fx.client.getTlsEdge(edge.id)).toEqual(edge);
      const second = await fx.client.createTlsEdge({ description: "2" });
      const page = await fx.client.listTlsEdges({ limit: 1 });
      expect(page.tls_edges.map((e) => e.id)).toEqual([second.id]);
      expect(page.uri).toBe(`${fx.baseUrl}/edges/tls`);
      expect(page.next_page_uri).toBe(`${fx.baseUrl}/edges/tls?limit=1&before_id=${second.id}`);
      const page2 = await fx.client.listTlsEdges({ limit: 1, beforeId: second.id });
      expect(page2.tls_edges.map((e) => e.id)).toEqual([edge.id]);

      // A TLS edge is not an HTTPS edge and vice versa.
      await expectApiError(fx.client.getHttpsEdge(edge.id), 404, E.notFound.code);
      const https = await newEdge();
      await expectApiError(fx.client.getTlsEdge(https.id), 404, E.notFound.code);

      expect((await raw(fx.transport, "DELETE", `/edges/tls/${edge.id}`)).status).toBe(204);
      await expectApiError(fx.client.getTlsEdge(edge.id), 404, E.notFound.code);
      await expectRejected(fx, {
        method: "DELETE",
        path: `/edges/tls/${edge.id}`,
        status: 404,
        code: E.notFound.code,
        field: null,
      });
    });

    describe("a TLS edge is not an HTTPS edge and vice versa", () => {
      let ids: { https: string; tls: string };
      beforeAll(async () => {
        ids = { https: (await newEdge()).id, tls: (await fx.client.createTlsEdge()).id };
      });
      it.each<Rejection>([
        {
          case: "the IP restriction of an HTTPS edge",
          method: "PUT",
          path: "/edges/tls/{https}/ip_restriction",
          body: { ip_policy_ids: ["p1"] },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a route on a TLS edge",
          method: "POST",
          path: "/edges/https/{tls}/routes",
          body: { match_type: "exact_path", match: "/x" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });

    it("PUT / GET / DELETE ip_restriction, 404 when none, Refs in order, enabled default true", async () => {
      const edge = await fx.client.createTlsEdge();
      const path = `/edges/tls/${edge.id}/ip_restriction`;
      for (const method of ["GET", "DELETE"]) {
        await expectRejected(fx, { method, path, status: 404, code: E.notFound.code, field: null });
      }

      const put = await raw(fx.transport, "PUT", path, { body: { ip_policy_ids: ["ipp_z", "ipp_a"] } });
      expect(put.status).toBe(200);
      const expected = {
        enabled: true,
        ip_policies: [
          { id: "ipp_z", uri: `${fx.baseUrl}/ip_policies/ipp_z` },
          { id: "ipp_a", uri: `${fx.baseUrl}/ip_policies/ipp_a` },
        ],
      };
      expect(put.json).toEqual(expected);
      expect(await fx.client.getTlsIpRestriction(edge.id)).toEqual(expected);
      expect((await fx.client.getTlsEdge(edge.id)).ip_restriction).toEqual(expected);

      // PUT replaces whole.
      const replaced = await fx.client.putTlsIpRestriction(edge.id, {
        enabled: false,
        ip_policy_ids: ["p9"],
      });
      expect(replaced).toEqual({
        enabled: false,
        ip_policies: [{ id: "p9", uri: `${fx.baseUrl}/ip_policies/p9` }],
      });
      expect(await fx.client.getTlsIpRestriction(edge.id)).toEqual(replaced);

      const del = await raw(fx.transport, "DELETE", path);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");
      for (const method of ["GET", "DELETE"]) {
        await expectRejected(fx, { method, path, status: 404, code: E.notFound.code, field: null });
      }
      expect((await fx.client.getTlsEdge(edge.id)).ip_restriction).toBeNull();

      // Deleting the edge deletes its module with it.
      await fx.client.putTlsIpRestriction(edge.id, { ip_policy_ids: ["p1"] });
      await fx.client.deleteTlsEdge(edge.id);
      expect(await storeFingerprint(fx.store)).not.toContain(edge.id);
    });

    describe("invalid ip_restriction bodies change nothing", () => {
      let ids: { tls: string };
      beforeAll(async () => {
        ids = { tls: (await fx.client.createTlsEdge()).id };
        await fx.client.putTlsIpRestriction(ids.tls, { enabled: false, ip_policy_ids: ["p9"] });
      });
      it.each<Rejection>([
        {
          case: "no IP policy",
          method: "PUT",
          path: "/edges/tls/{tls}/ip_restriction",
          body: { ip_policy_ids: [] },
          status: 400,
          code: E.validation.code,
          field: "ip_policy_ids",
        },
        {
          case: "ip_policy_ids missing",
          method: "PUT",
          path: "/edges/tls/{tls}/ip_restriction",
          body: {},
          status: 400,
          code: E.validation.code,
          field: "ip_policy_ids",
        },
        {
          case: "an IP policy id outside the id charset",
          method: "PUT",
          path: "/edges/tls/{tls}/ip_restriction",
          body: { ip_policy_ids: ["ok", "not ok"] },
          status: 400,
          code: E.validation.code,
          field: "ip_policy_ids[1]",
        },
        {
          case: "an unknown field (a typo)",
          method: "PUT",
          path: "/edges/tls/{tls}/ip_restriction",
          body: { ip_policy_ids: ["p1"], enable: true },
          status: 400,
          code: E.unknownField.code,
          field: "enable",
        },
        {
          case: "enabled not a boolean",
          method: "PUT",
          path: "/edges/tls/{tls}/ip_restriction",
          body: { ip_policy_ids: ["p1"], enabled: "no" },
          status: 400,
          code: E.validation.code,
          field: "enabled",
        },
        {
          case: "an unknown TLS edge",
          method: "PUT",
          path: "/edges/tls/edgtls_missing/ip_restriction",
          body: { ip_policy_ids: ["p1"] },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });
  });

  describe("routes", () => {
    it("strings are stored as sent; U+0000 is refused on both stores (text-rule.test.ts)", async () => {
      const odd = "a\u0001b \u{1F600} \\ \u00e9";
      const edge = (
        await raw(fx.transport, "POST", "/edges/https", { body: { description: odd, metadata: odd } })
      ).json;
      expect([edge.description, edge.metadata]).toEqual([odd, odd]);
      const created = await raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "path_prefix", match: `/${odd}`, description: odd, metadata: odd },
      });
      expect(created.status).toBe(201);
      const got = (await raw(fx.transport, "GET", `/edges/https/${edge.id}/routes/${created.json.id}`)).json;
      expect([got.match, got.description, got.metadata]).toEqual([`/${odd}`, odd, odd]);
      // The same match again is the same key: 409.
      const again = await raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "path_prefix", match: `/${odd}` },
      });
      expect(again.status).toBe(409);
      const nul = await raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
        body: { match_type: "path_prefix", match: "/a\u0000b" },
      });
      expect([nul.status, nul.json.details.field]).toEqual([400, "match"]);
    });

    it("create → 201 with every field, unconfigured modules null; get returns the same", async () => {
      const edge = await newEdge();
      const res = await raw(fx.transport, "POST", `/edges/https/${edge.id}/routes`, {
        body: {
          match_type: "path_prefix",
          match: "example.com/api",
          description: "d",
          metadata: "m",
          backend: { backend_id: "bkd_1" },
          ip_restriction: { ip_policy_ids: ["ipp_2", "ipp_1"] },
          compression: null,
        },
      });
      expect(res.status).toBe(201);
      expect(res.headers.get(OPERATION_ID_HEADER)).toMatch(/^op_/);
      const route = res.json;
      expect(route.id).toMatch(ID_RE.route);
      expect(route).toEqual({
        id: route.id,
        edge_id: edge.id,
        created_at: route.created_at,
        uri: `${fx.baseUrl}/edges/https/${edge.id}/routes/${route.id}`,
        match_type: "path_prefix",
        match: "example.com/api",
        description: "d",
        metadata: "m",
        backend: { enabled: true, backend: { id: "bkd_1", uri: `${fx.baseUrl}/backends/bkd_1` } },
        ip_restriction: {
          enabled: true,
          ip_policies: [
            { id: "ipp_2", uri: `${fx.baseUrl}/ip_policies/ipp_2` },
            { id: "ipp_1", uri: `${fx.baseUrl}/ip_policies/ipp_1` },
          ],
        },
        circuit_breaker: null,
        compression: null,
        request_headers: null,
        response_headers: null,
        webhook_verification: null,
        oauth: null,
        saml: null,
        oidc: null,
        websocket_tcp_converter: null,
        user_agent_filter: null,
        traffic_policy: null,
      });
      expect(new Date(route.created_at).toISOString()).toBe(route.created_at);
      const get = await raw(fx.transport, "GET", `/edges/https/${edge.id}/routes/${route.id}`);
      expect(get.status).toBe(200);
      expect(get.json).toEqual(route);
    });

    describe("delete → 204, then 404 on get, patch and delete", () => {
      let ids: { edge: string; route: string };
      let del: RawResponse;
      beforeAll(async () => {
        const edge = (await newEdge()).id;
        ids = {
          edge,
          route: (await fx.client.createRoute(edge, { match_type: "exact_path", match: "/gone" })).id,
        };
        del = await raw(fx.transport, "DELETE", `/edges/https/${ids.edge}/routes/${ids.route}`);
      });
      it("delete → 204 with an empty body", () => {
        expect(del.status).toBe(204);
        expect(del.text).toBe("");
      });
      it.each<Rejection>([
        {
          case: "a deleted route",
          method: "GET",
          path: "/edges/https/{edge}/routes/{route}",
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a deleted route",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: { description: "x" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a deleted route",
          method: "DELETE",
          path: "/edges/https/{edge}/routes/{route}",
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a module of a deleted route",
          method: "GET",
          path: "/edges/https/{edge}/routes/{route}/backend",
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
      it("the (match_type, match) is free again", async () => {
        const again = await fx.client.createRoute(ids.edge, { match_type: "exact_path", match: "/gone" });
        expect(again.id).not.toBe(ids.route);
      });
    });

    describe("a route is reachable only through its own edge", () => {
      let ids: { a: string; b: string; route: string };
      beforeAll(async () => {
        const a = (await newEdge()).id;
        const b = (await newEdge()).id;
        ids = {
          a,
          b,
          route: (await fx.client.createRoute(a, { match_type: "exact_path", match: "/own" })).id,
        };
      });
      it("the client's get through another edge → 404", async () => {
        await expectApiError(fx.client.getRoute(ids.b, ids.route), 404, E.notFound.code);
      });
      it.each<Rejection>([
        {
          case: "another edge's route",
          method: "PATCH",
          path: "/edges/https/{b}/routes/{route}",
          body: { description: "x" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "another edge's route",
          method: "DELETE",
          path: "/edges/https/{b}/routes/{route}",
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "a module of another edge's route",
          method: "PUT",
          path: "/edges/https/{b}/routes/{route}/compression",
          body: {},
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
      it("the route is still there on its own edge; the same (match_type, match) is fine on another edge", async () => {
        expect((await fx.client.getRoute(ids.a, ids.route)).id).toBe(ids.route);
        const onB = await fx.client.createRoute(ids.b, { match_type: "exact_path", match: "/own" });
        expect(onB.edge_id).toBe(ids.b);
      });
    });

    describe("same (match_type, match) on one edge → 409 with field match; other match_type is fine", () => {
      let ids: { edge: string; first: string; other: string };
      beforeAll(async () => {
        const edge = (await newEdge()).id;
        const first = await fx.client.createRoute(edge, { match_type: "exact_path", match: "/dup" });
        const other = await fx.client.createRoute(edge, { match_type: "path_prefix", match: "/dup" });
        ids = { edge, first: first.id, other: other.id };
      });
      it.each<Rejection>([
        {
          case: "a create with a taken (match_type, match)",
          method: "POST",
          path: "/edges/https/{edge}/routes",
          body: { match_type: "exact_path", match: "/dup", description: "again" },
          status: 409,
          code: E.conflict.code,
          field: "match",
        },
        {
          case: "a PATCH into a taken (match_type, match)",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{other}",
          body: { match_type: "exact_path", description: "changed" },
          status: 409,
          code: E.conflict.code,
          field: "match",
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
      it("the client reports the conflict; the first route is unchanged", async () => {
        const err = await expectApiError(
          fx.client.createRoute(ids.edge, { match_type: "exact_path", match: "/dup" }),
          409,
          E.conflict.code,
          "match",
        );
        expect(err.isConflict).toBe(true);
        expect((await fx.client.getRoute(ids.edge, ids.first)).description).toBe("");
      });
    });

    describe("routes of an unknown edge → 404 on every operation", () => {
      const missing = "edghts_000000000000000000000000000";
      it.each<Rejection>([
        {
          case: "an unknown edge",
          method: "POST",
          path: `/edges/https/${missing}/routes`,
          body: { match_type: "exact_path", match: "/a" },
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "an unknown edge",
          method: "GET",
          path: `/edges/https/${missing}/routes`,
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "an unknown edge",
          method: "GET",
          path: `/edges/https/${missing}`,
          status: 404,
          code: E.notFound.code,
          field: null,
        },
        {
          case: "an unknown edge",
          method: "DELETE",
          path: `/edges/https/${missing}`,
          status: 404,
          code: E.notFound.code,
          field: null,
        },
      ])(REJECTED, (row) => expectRejected(fx, row));
      it("the client's error says not found", async () => {
        const err = await expectApiError(fx.client.getHttpsEdge(missing), 404, E.notFound.code);
        expect(err.isNotFound).toBe(true);
      });
    });
  });

  describe("route paging", () => {
    it("pages newest first with limit, before_id and next_page_uri until the end", async () => {
      const edge = await newEdge();
      const ids: string[] = [];
      for (let i = 0; i < 25; i++) {
        ids.push((await fx.client.createRoute(edge.id, { match_type: "exact_path", match: `/p/${i}` })).id);
      }
      const newestFirst = [...ids].reverse();
      const listUri = `${fx.baseUrl}/edges/https/${edge.id}/routes`;

      const seen: string[] = [];
      let next: string | null = `${listUri}?limit=10`;
      const sizes: number[] = [];
      while (next !== null) {
        const res = await raw(fx.transport, "GET", next.slice(fx.baseUrl.length));
        expect(res.status).toBe(200);
        expect(res.json.uri).toBe(listUri);
        const pageIds = res.json.routes.map((r: any) => r.id);
        sizes.push(pageIds.length);
        if (res.json.next_page_uri !== null) {
          expect(res.json.next_page_uri).toBe(`${listUri}?limit=10&before_id=${pageIds[pageIds.length - 1]}`);
        }
        seen.push(...pageIds);
        next = res.json.next_page_uri;
      }
      expect(sizes).toEqual([10, 10, 5]);
      expect(seen).toEqual(newestFirst);

      // Exactly `limit` routes left: no next page.
      const exact = await fx.client.listRoutes(edge.id, { limit: 5, beforeId: newestFirst[19] });
      expect(exact.routes.map((r) => r.id)).toEqual(newestFirst.slice(20));
      expect(exact.next_page_uri).toBeNull();

      // Default limit 100: one page with all 25.
      const all = await fx.client.listRoutes(edge.id);
      expect(all.routes.map((r) => r.id)).toEqual(newestFirst);
      expect(all.next_page_uri).toBeNull();
      // Route bodies in a list are the full resources.
      expect(all.routes[0]).toEqual(await fx.client.getRoute(edge.id, newestFirst[0]!));

      // The client follows the pages.
      const walked: string[] = [];
      for await (const r of fx.client.allRoutes(edge.id)) walked.push(r.id);
      expect(walked).toEqual(newestFirst);

      const emptyEdge = await newEdge();
      expect(await fx.client.listRoutes(emptyEdge.id)).toEqual({
        routes: [],
        uri: `${fx.baseUrl}/edges/https/${emptyEdge.id}/routes`,
        next_page_uri: null,
      });
    });

    it("rejects a bad limit or before_id with 400 naming it", async () => {
      const edge = await newEdge();
      const base = `/edges/https/${edge.id}/routes`;
      for (const limit of ["0", "101", "abc", "-1", "1.5", ""]) {
        expectErrorBody(
          await raw(fx.transport, "GET", `${base}?limit=${limit}`),
          400,
          E.validation.code,
          "limit",
        );
      }
      expect((await raw(fx.transport, "GET", `${base}?limit=100`)).status).toBe(200);
      expect((await raw(fx.transport, "GET", `${base}?limit=1`)).status).toBe(200);
      expectErrorBody(
        await raw(fx.transport, "GET", `${base}?before_id=edghtsrt_unknown`),
        400,
        E.validation.code,
        "before_id",
      );
      expectErrorBody(
        await raw(fx.transport, "GET", "/edges/https?limit=101"),
        400,
        E.validation.code,
        "limit",
      );
      expectErrorBody(
        await raw(fx.transport, "GET", "/edges/tls?before_id=x"),
        400,
        E.validation.code,
        "before_id",
      );
      // before_id must belong to the same list: a route of another edge, or an HTTPS edge in
      // the TLS list, is refused rather than silently paging from somewhere else.
      const other = await newEdge();
      const foreign = await fx.client.createRoute(other.id, {
        match_type: "exact_path",
        match: "/elsewhere",
      });
      expectErrorBody(
        await raw(fx.transport, "GET", `${base}?before_id=${foreign.id}`),
        400,
        E.validation.code,
        "before_id",
      );
      expectErrorBody(
        await raw(fx.transport, "GET", `/edges/tls?before_id=${edge.id}`),
        400,
        E.validation.code,
        "before_id",
      );
    });
  });

  describe("path parameters", () => {
    let ids: { edge: string; route: string };
    beforeAll(async () => {
      const edge = (await newEdge()).id;
      ids = {
        edge,
        route: (await fx.client.createRoute(edge, { match_type: "exact_path", match: "/pp" })).id,
      };
    });
    const BAD_IDS = ["a-b", "a.b", "a%20b", "%C3%A9t%C3%A9", "a".repeat(65), "a%2Fb"];
    /** Every kind of path, with `{id}` where the malformed id goes. */
    const EVERY_KIND: Array<Pick<Rejection, "method" | "path" | "body">> = [
      { method: "GET", path: "/edges/https/{id}" },
      { method: "GET", path: "/edges/tls/{id}" },
      { method: "GET", path: "/edges/https/{id}/routes" },
      { method: "GET", path: "/edges/https/{edge}/routes/{id}" },
      { method: "PATCH", path: "/edges/https/{edge}/routes/{id}", body: {} },
      { method: "PUT", path: "/edges/https/{id}/routes/{route}/compression", body: {} },
      { method: "PUT", path: "/edges/tls/{id}/ip_restriction", body: { ip_policy_ids: ["p"] } },
      { method: "DELETE", path: "/edges/https/{edge}/routes/{id}" },
    ];
    const notFound = { status: 404, code: E.notFound.code, field: null };

    describe("ids outside [A-Za-z0-9_]{1,64} → 404 on every kind of path", () => {
      it.each<Rejection>(
        BAD_IDS.flatMap((id) =>
          EVERY_KIND.map((row) => ({
            ...row,
            ...notFound,
            case: `malformed id ${id}`,
            path: row.path.replace("{id}", id),
          })),
        ),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });

    // Not text the API keeps (sdk/contract/text.ts): a 400 naming the path parameter.
    const PARAM_OF = ["id", "id", "edge_id", "id", "id", "edge_id", "id", "id"];
    describe("an id holding U+0000 → 400 naming its path parameter, on every kind of path", () => {
      it.each<Rejection>(
        EVERY_KIND.map((row, i) => ({
          ...row,
          status: 400,
          code: E.validation.code,
          field: PARAM_OF[i]!,
          case: "id with U+0000",
          path: row.path.replace("{id}", "a%00b"),
        })),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
    });

    it.each<Rejection>([
      // 64 characters of the allowed set is a well-formed (if unknown) id: still 404, not 400.
      {
        case: "a well-formed unknown id of 64 characters",
        method: "GET",
        path: `/edges/https/${"a".repeat(64)}`,
        ...notFound,
      },
      // Unknown module segment and unknown paths.
      {
        case: "an unknown module segment",
        method: "PUT",
        path: "/edges/https/{edge}/routes/{route}/not_a_module",
        body: {},
        ...notFound,
      },
      { case: "an unknown path", method: "GET", path: "/nothing/here", ...notFound },
      { case: "an unknown kind of edge", method: "POST", path: "/edges/udp", body: {}, ...notFound },
    ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids)));
  });

  describe("405 with Allow", () => {
    it.each([
      ["PUT", "/edges/https", ["GET", "HEAD", "POST"]],
      ["DELETE", "/edges/tls", ["GET", "HEAD", "POST"]],
      ["PATCH", "/edges/https/{edge}", ["DELETE", "GET", "HEAD"]],
      ["PUT", "/edges/tls/{tls}", ["DELETE", "GET", "HEAD"]],
      ["DELETE", "/edges/https/{edge}/routes", ["GET", "HEAD", "POST"]],
      ["POST", "/edges/https/{edge}/routes/{route}", ["DELETE", "GET", "HEAD", "PATCH"]],
      ["PATCH", "/edges/https/{edge}/routes/{route}/backend", ["DELETE", "GET", "HEAD", "PUT"]],
      ["POST", "/edges/tls/{tls}/ip_restriction", ["DELETE", "GET", "HEAD", "PUT"]],
    ])("%s %s → 405, Allow lists the methods, nothing changes", async (method, template, allowed) => {
      const edge = await newEdge();
      const route = await fx.client.createRoute(edge.id, {
        match_type: "exact_path",
        match: uniqueMatch("m"),
      });
      const tls = await fx.client.createTlsEdge();
      const path = template.replace("{edge}", edge.id).replace("{route}", route.id).replace("{tls}", tls.id);
      const res = await expectRejected(fx, {
        method,
        path,
        ...(method === "DELETE" ? {} : { body: {} }),
        status: 405,
        code: E.methodNotAllowed.code,
        field: null,
      });
      const allow = res.headers.get("allow")!;
      expect(
        allow
          .split(",")
          .map((m) => m.trim())
          .sort(),
      ).toEqual(allowed);
      expect(allow.split(",").map((m) => m.trim())).not.toContain(method);
    });
  });

  describe("wire rules (raw requests)", () => {
    let edgeId: string;
    let routeId: string;
    let tlsId: string;
    beforeAll(async () => {
      edgeId = (await newEdge()).id;
      routeId = (
        await fx.client.createRoute(edgeId, {
          match_type: "exact_path",
          match: "/wire",
          description: "keep",
          compression: {},
        })
      ).id;
      tlsId = (await fx.client.createTlsEdge()).id;
    });
    const ids = () => ({ edge: edgeId, route: routeId, tls: tlsId });
    /** Each row on every request that reads a body. */
    const onEveryMutation = (rows: Array<Omit<Rejection, "method" | "path">>): Rejection[] =>
      [
        { method: "POST", path: "/edges/https" },
        { method: "POST", path: "/edges/tls" },
        { method: "POST", path: "/edges/https/{edge}/routes" },
        { method: "PATCH", path: "/edges/https/{edge}/routes/{route}" },
        { method: "PUT", path: "/edges/https/{edge}/routes/{route}/compression" },
        { method: "PUT", path: "/edges/tls/{tls}/ip_restriction" },
      ].flatMap((mutation) => rows.map((row) => ({ ...mutation, ...row })));
    const invalidBody = { status: 400, code: E.invalidBody.code, field: null };

    describe("a non-JSON content type → 415", () => {
      it.each<Rejection>(
        onEveryMutation(
          ["text/plain", "application/x-www-form-urlencoded", "application/jsonp", null].map(
            (contentType) => ({
              case: `content type ${contentType ?? "absent"}`,
              body: '{"description":"x"}',
              contentType,
              status: 415,
              code: E.unsupportedMediaType.code,
              field: null,
            }),
          ),
        ),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids())));
    });

    it("application/json with a charset parameter is accepted", async () => {
      const res = await raw(fx.transport, "PATCH", `/edges/https/${edgeId}/routes/${routeId}`, {
        body: '{"description":"keep"}',
        contentType: "Application/JSON; charset=utf-8",
      });
      expect(res.status).toBe(200);
      expect(res.json.description).toBe("keep");
    });

    describe("a body that is not a JSON object → 400", () => {
      it.each<Rejection>(
        onEveryMutation(
          ["[]", '[{"description":"x"}]', '"text"', "42", "null", "true"].map((body) => ({
            case: `body ${body}`,
            body,
            ...invalidBody,
          })),
        ),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids())));
    });

    describe("invalid JSON and an empty body → 400", () => {
      it.each<Rejection>(
        onEveryMutation(
          ["{", '{"description":}', "{'a':1}", '{"a":1} trailing', ""].map((body) => ({
            case: `body ${JSON.stringify(body)}`,
            body,
            ...invalidBody,
          })),
        ),
      )(REJECTED, (row) => expectRejected(fx, fillIds(row, ids())));
    });

    describe("a body that is not valid UTF-8 → 400", () => {
      const bad = new Uint8Array([
        ...new TextEncoder().encode('{"description":"'),
        0xc3,
        0x28,
        0xff,
        ...new TextEncoder().encode('"}'),
      ]);
      it.each<Rejection>(
        onEveryMutation([{ case: "bytes C3 28 FF in a string", body: bad, ...invalidBody }]),
      )(REJECTED, async (row) => {
        const res = await expectRejected(fx, fillIds(row, ids()));
        expect(res.json.msg).toMatch(/UTF-8/);
      });
    });

    describe("a body over 1 MiB → 413; a body just under is read", () => {
      it.each<Rejection>([
        ...onEveryMutation([
          {
            case: "a body just over 1 MiB",
            body: JSON.stringify({ description: "a".repeat(1024 * 1024 + 10) }),
            status: 413,
            code: E.payloadTooLarge.code,
            field: null,
          },
        ]),
        // Just under the limit: read and judged on its content (description too long → 400, not 413).
        {
          case: "a body just under 1 MiB, judged on its content",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: JSON.stringify({ description: "a".repeat(1024 * 1024 - 100) }),
          status: 400,
          code: E.validation.code,
          field: "description",
        },
      ])(REJECTED, (row) => expectRejected(fx, fillIds(row, ids())));
    });

    describe("a deeply nested body is a 400, never a 500 (and a __proto__ key deep inside is found)", () => {
      const depth = 200_000;
      // No `$field` in the title: the second one is 6,000 characters long.
      it.each<Rejection>([
        {
          case: `arrays nested ${depth} deep`,
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: `{"description":"x","deep":${"[".repeat(depth)}${"]".repeat(depth)}}`,
          status: 400,
          // Refused by the scan of the body's bytes before parsing (more values than a body may
          // hold: BODY_MAX_VALUES), still naming the top-level field.
          code: E.validation.code,
          field: "deep",
        },
        {
          case: "a __proto__ key 2,000 levels deep",
          method: "PATCH",
          path: "/edges/https/{edge}/routes/{route}",
          body: `{"deep":${'[{"a":'.repeat(1000)}{"__proto__":1}${"}]".repeat(1000)}}`,
          status: 400,
          code: E.validation.code,
          field: `deep${"[0].a".repeat(1000)}.__proto__`,
        },
      ])("$case: $method $path → $status $code", (row) => expectRejected(fx, fillIds(row, ids())));
    });

    it("the route is still intact after all the rejected requests", async () => {
      const route = await fx.client.getRoute(edgeId, routeId);
      expect(route.description).toBe("keep");
      expect(route.compression).toEqual(expectedModule("compression", {}, fx.baseUrl, routeId));
      expect((await fx.client.getTlsEdge(tlsId)).ip_restriction).toBeNull();
    });

    it("every response carries an operation id, unique per request", async () => {
      const a = await raw(fx.transport, "GET", `/edges/https/${edgeId}`);
      const b = await raw(fx.transport, "GET", `/edges/https/${edgeId}`);
      const c = await raw(fx.transport, "DELETE", `/edges/https/${edgeId}/routes/${routeId}/backend`);
      expect(c.status).toBe(404);
      const ids = [a, b, c].map((r) => r.headers.get(OPERATION_ID_HEADER));
      for (const id of ids) expect(id).toMatch(/^op_[0-9A-Za-z]{20}$/);
      expect(new Set(ids).size).toBe(3);
    });
  });
});
