/**
 * Bad input at the limits: oversized bodies (declared and chunked), deep nesting, huge arrays and
 * key counts, and odd path and query parameters (`..`, `%2F`, NUL, invalid percent-encoding,
 * very long ids) for every operation. Each answer is a clean 4xx (typed, when it reaches the
 * app), the database is unchanged, and the server keeps serving.
 */
import { storeFingerprint } from "../support/fingerprint";
import * as http from "node:http";
import * as net from "node:net";
import { BODY_MAX_ITEMS, ERROR_CODES, LIST_MAX_ITEMS, MAX_BODY_BYTES } from "../../sdk/contract";
import { FIXTURES, type Fixture, httpFixture, raw, type RawResponse } from "../service/helpers";
import { judge, Tally } from "./fuzz";

const tally = new Tally();
afterAll(() => tally.write("limits"));

/** One request on a fresh socket, the path sent byte for byte (no URL normalisation). */
function rawHttp(
  baseUrl: string,
  method: string,
  path: string,
  opts: { body?: Buffer | string; headers?: Record<string, string>; chunked?: boolean } = {},
): Promise<RawResponse> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined && !opts.chunked)
      headers["content-length"] = String(Buffer.byteLength(opts.body));
    const req = http.request(
      { host: u.hostname, port: u.port, method, path, headers, agent: false, timeout: 60_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: any;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers: h, text, json });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    if (opts.body !== undefined && opts.chunked) {
      // Several chunks, no Content-Length: the limit must hold on what is read, not on what is declared.
      const buf = Buffer.from(opts.body);
      for (let i = 0; i < buf.length; i += 64 * 1024) req.write(buf.subarray(i, i + 64 * 1024));
      req.end();
    } else req.end(opts.body);
  });
}

/** Writes raw bytes on a socket; resolves the status of the answer's first line (0: closed without one). */
function rawSocket(baseUrl: string, bytes: Buffer): Promise<number> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname);
    let data = "";
    socket.setTimeout(30_000, () => socket.destroy(new Error("timed out")));
    socket.on("data", (c: Buffer) => {
      data += c.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (m) {
        socket.destroy();
        resolve(Number(m[1]));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(0));
    socket.end(bytes);
  });
}

const nest = (depth: number, open: string, close: string, inner: string) =>
  open.repeat(depth) + inner + close.repeat(depth);

describe.each(FIXTURES)("limits %s", (_label, makeFixture) => {
  let fx: Fixture;
  let edgeId: string;
  let routeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    edgeId = (await fx.client.createHttpsEdge({})).id;
    routeId = (await fx.client.createRoute(edgeId, { match_type: "exact_path", match: "/limits" })).id;
  });
  afterAll(async () => fx?.close());

  async function expect4xx(
    method: string,
    path: string,
    body: string | Uint8Array,
    status: number,
    code: string,
    field?: string | null,
  ) {
    const before = await storeFingerprint(fx.store);
    const res = await raw(fx.transport, method, path, { body });
    const v = judge(
      res,
      { before, after: await storeFingerprint(fx.store) },
      `${method} ${path} (${body.length} bytes)`,
    );
    tally.add(`limits ${fx.kind}`, `${v.status} ${v.code}`);
    expect([res.status, v.code]).toEqual([status, code]);
    if (field !== undefined) expect(v.field ?? null).toBe(field);
    // The error answer is bounded, whatever the body provoked (a field path may be as long as the body).
    expect(res.text.length).toBeLessThan(64 * 1024 + 2 * body.length);
    return res;
  }

  test("a body of exactly 1 MiB is read; one byte more is 413", async () => {
    const json = '{"description":"fits"}';
    const exact = json + " ".repeat(MAX_BODY_BYTES - json.length);
    expect(Buffer.byteLength(exact)).toBe(MAX_BODY_BYTES);
    const ok = await raw(fx.transport, "POST", "/edges/https", { body: exact });
    expect(ok.status).toBe(201);
    await fx.client.deleteHttpsEdge(ok.json.id);
    await expect4xx("POST", "/edges/https", exact + " ", 413, ERROR_CODES.payloadTooLarge.code, null);
    await expect4xx(
      "PATCH",
      `/edges/https/${edgeId}/routes/${routeId}`,
      "x".repeat(8 * MAX_BODY_BYTES),
      413,
      ERROR_CODES.payloadTooLarge.code,
      null,
    );
  });

  test("deep nesting (200 000 levels) anywhere in a body: 400 naming the field, or invalid JSON", async () => {
    const routes = `/edges/https/${edgeId}/routes`;
    const base = '"match_type":"exact_path","match":"/deep"';
    const deepArray = nest(200_000, "[", "]", "1");
    const deepObject = nest(100_000, '{"a":', "}", "1");
    const V = ERROR_CODES.validation.code;
    await expect4xx("POST", routes, `{${base},"description":${deepArray}}`, 400, V, "description");
    await expect4xx(
      "POST",
      routes,
      `{${base},"request_headers":{"add":{"X":${deepObject}}}}`,
      400,
      V,
      "request_headers",
    );
    // Nesting this deep passes the bound on a body's values (BODY_MAX_VALUES): named by its top field.
    await expect4xx("POST", routes, `{${base},"bogus":${deepObject}}`, 400, V, "bogus");
    await expect4xx(
      "POST",
      routes,
      `{${base},"oauth":{"provider":{"github":${deepObject}}}}`,
      400,
      V,
      "oauth",
    );
    await expect4xx(
      "POST",
      routes,
      `{${base},"ip_restriction":{"ip_policy_ids":${deepArray}}}`,
      400,
      V,
      "ip_restriction",
    );
    await expect4xx(
      "PUT",
      `${routes}/${routeId}/user_agent_filter`,
      `{"allow":${deepArray}}`,
      400,
      V,
      "allow",
    );
    await expect4xx("POST", "/edges/https", `{"hostports":${deepArray}}`, 400, V, "hostports");
    // Unterminated nesting is not JSON.
    await expect4xx(
      "POST",
      routes,
      `{${base},"description":${"[".repeat(500_000)}`,
      400,
      // The scan of its bytes meets the bound on values before the end that would say it is no JSON.
      V,
      "description",
    );
    // A "__proto__" key buried deep (within the bound on values) is found and refused (it could not be stored).
    const buried = nest(5_000, '{"a":', "}", '{"__proto__":1}');
    const res = await expect4xx(
      "POST",
      routes,
      `{${base},"traffic_policy":{"value":"v","x":${buried}}}`,
      400,
      V,
    );
    expect(res.json.details.field).toMatch(/^traffic_policy\.x(\.a)+\.__proto__$/);
  });

  test("huge arrays and key counts: 400 with a bounded answer; a huge valid list is stored", async () => {
    const routes = `/edges/https/${edgeId}/routes`;
    const V = ERROR_CODES.validation.code;
    const U = ERROR_CODES.unknownField.code;
    const ones = `[${Array(400_000).fill("1").join(",")}]`; // 800 KB of bad ids
    const bad = await expect4xx(
      "POST",
      routes,
      `{"match_type":"exact_path","match":"/h","ip_restriction":{"ip_policy_ids":${ones}}}`,
      400,
      V,
      "ip_restriction.ip_policy_ids",
    );
    // Refused at its bound (LIST_MAX_ITEMS) before any item is parsed: one problem.
    expect(bad.json.msg).toBe(
      `ip_restriction.ip_policy_ids: must hold at most ${LIST_MAX_ITEMS.ip_policy_ids} items`,
    );
    const keys = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, 1]));
    await expect4xx("PATCH", `${routes}/${routeId}`, JSON.stringify(keys), 400, V, `k${BODY_MAX_ITEMS}`);
    const someKeys = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, 1]));
    const unknown = await expect4xx("PATCH", `${routes}/${routeId}`, JSON.stringify(someKeys), 400, U, "k0");
    expect(unknown.json.details.problems).toHaveLength(100);
    const headers = Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`X-H${i}`, 5]));
    await expect4xx(
      "PUT",
      `${routes}/${routeId}/request_headers`,
      JSON.stringify({ add: headers }),
      400,
      V,
      "add",
    );
    // As many valid ids as the bound allows: accepted, stored whole, read back whole.
    const ids = Array.from({ length: LIST_MAX_ITEMS.ip_policy_ids }, (_, i) => `ipp_${i.toString(36)}`);
    const ok = await raw(fx.transport, "PUT", `${routes}/${routeId}/ip_restriction`, {
      body: { ip_policy_ids: ids },
    });
    expect(ok.status).toBe(200);
    const back = await fx.client.getRouteModule(edgeId, routeId, "ip_restriction");
    expect(back.ip_policies.map((p) => p.id)).toEqual(ids);
    await fx.client.deleteRouteModule(edgeId, routeId, "ip_restriction");
  });
});

describe("odd path and query parameters, sent byte for byte over HTTP", () => {
  let fx: Fixture;
  let edgeId: string;
  let routeId: string;
  let tlsId: string;
  beforeAll(async () => {
    fx = await httpFixture();
    edgeId = (await fx.client.createHttpsEdge({})).id;
    tlsId = (await fx.client.createTlsEdge({})).id;
    routeId = (await fx.client.createRoute(edgeId, { match_type: "exact_path", match: "/odd" })).id;
    await fx.client.putRouteModule(edgeId, routeId, "backend", { backend_id: "b" });
  });
  afterAll(async () => fx?.close());

  const ODD = [
    "..",
    ".",
    "%2e%2e",
    "%2E%2E%2F%2E%2E",
    "%2F",
    "a%2Fb",
    `${"x".repeat(3)}%2F..%2F..`,
    "%00",
    "a%00b",
    "%ff",
    "%E0%A4%A",
    "%",
    "%%32%65",
    "%C3%A9",
    "x".repeat(65),
    `edghtsrt_${"A".repeat(5000)}`,
    "x".repeat(12_000),
    "%20",
    "a;b",
    "*",
    "~",
    "$",
    "'",
    '"',
    "__proto__",
    "constructor",
    "hasOwnProperty",
    "",
  ];

  test("every operation × every odd segment: a typed 404/405, nothing changed, the server keeps serving", async () => {
    // [method, path, a body valid for that operation]: only the odd segment is wrong.
    const route = '{"match_type":"exact_path","match":"/odd/new"}';
    const backend = '{"backend_id":"b"}';
    const templates = (s: string): Array<[string, string, string?]> => [
      ["GET", `/edges/https/${s}`],
      ["DELETE", `/edges/https/${s}`],
      ["GET", `/edges/tls/${s}`],
      ["DELETE", `/edges/tls/${s}`],
      ["POST", `/edges/https/${s}/routes`, route],
      ["GET", `/edges/https/${s}/routes`],
      ["GET", `/edges/https/${edgeId}/routes/${s}`],
      ["PATCH", `/edges/https/${edgeId}/routes/${s}`, "{}"],
      ["DELETE", `/edges/https/${edgeId}/routes/${s}`],
      ["PATCH", `/edges/https/${s}/routes/${routeId}`, "{}"],
      ["PUT", `/edges/https/${edgeId}/routes/${routeId}/${s}`, backend],
      ["GET", `/edges/https/${edgeId}/routes/${routeId}/${s}`],
      ["DELETE", `/edges/https/${edgeId}/routes/${routeId}/${s}`],
      ["PUT", `/edges/https/${edgeId}/routes/${s}/backend`, backend],
      ["DELETE", `/edges/https/${s}/routes/${routeId}/backend`],
      ["PUT", `/edges/tls/${s}/ip_restriction`, '{"ip_policy_ids":["p"]}'],
      ["GET", `/edges/tls/${s}/ip_restriction`],
      ["DELETE", `/edges/tls/${s}/ip_restriction`],
    ];
    let n = 0;
    for (const s of ODD) {
      for (const [method, path, body] of templates(s)) {
        const before = await storeFingerprint(fx.store);
        const res = await rawHttp(fx.baseUrl, method, path, {
          body,
          headers: body ? { "content-type": "application/json" } : {},
        });
        const v = judge(
          res,
          { before, after: await storeFingerprint(fx.store) },
          `${method} ${path.slice(0, 200)}`,
        );
        tally.add("odd paths", `${v.status} ${v.code}`);
        n++;
        // An empty segment may land on an existing collection (GET /edges/https/ lists): 2xx is fine there.
        if (s === "" && v.status < 400) continue;
        // A path identifier holding U+0000 is not text the API keeps: a 400 naming it (a module
        // segment that holds one names no module: 404).
        const refusedText =
          s.includes("%00") && v.status === 400 && /^(id|edge_id)$/.test(res.json?.details?.field);
        expect([method, path.slice(0, 120), v.status]).toEqual([
          method,
          path.slice(0, 120),
          v.status === 405 ? 405 : refusedText ? 400 : 404,
        ]);
      }
    }
    expect(n).toBe(ODD.length * 18);
    expect((await fx.client.getRoute(edgeId, routeId)).backend).not.toBeNull();
    expect((await fx.client.getTlsEdge(tlsId)).id).toBe(tlsId);
  });

  test("what the HTTP parser refuses before the app (raw non-ASCII, a URL over 16 KiB) is a 4xx, and nothing breaks", async () => {
    const before = await storeFingerprint(fx.store);
    const lines = [
      Buffer.from(`GET /edges/https/${edgeId}/routes/é HTTP/1.1\r\n`),
      Buffer.from(`GET /edges/https/${"x".repeat(20_000)} HTTP/1.1\r\n`),
      Buffer.from("GET /edges/https/\u0001 HTTP/1.1\r\n"),
      Buffer.concat([
        Buffer.from("GET /edges/https/"),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(" HTTP/1.1\r\n"),
      ]),
      Buffer.from("GET /edges/https HTTP/1.1\r\nContent-Length: -1\r\n"),
    ];
    for (const line of lines) {
      const status = await rawSocket(fx.baseUrl, Buffer.concat([line, Buffer.from("Host: x\r\n\r\n")]));
      tally.add("parser refusals", String(status));
      const what = line.subarray(0, 40).toString();
      expect([what, status >= 400 && status < 500]).toEqual([what, true]);
    }
    expect(await storeFingerprint(fx.store)).toBe(before);
    expect((await raw(fx.transport, "GET", "/edges/https")).status).toBe(200);
  });

  test("garbage query parameters: a typed 400 naming the parameter (limit, before_id, or an unknown one), or a page", async () => {
    const queries = [
      "limit=abc",
      "limit=-1",
      "limit=0",
      "limit=101",
      "limit=1e2",
      "limit=%ff",
      "limit=",
      "limit=99999999999999999999999",
      "before_id=%00",
      "before_id=..",
      "before_id=",
      `before_id=${"x".repeat(5000)}`,
      `before_id=${tlsId}`,
      "limit=1&limit=2",
      "%ff=1",
      "limit[]=1",
    ];
    for (const path of [`/edges/https/${edgeId}/routes`, "/edges/https", "/edges/tls"]) {
      for (const q of queries) {
        const before = await storeFingerprint(fx.store);
        const res = await rawHttp(fx.baseUrl, "GET", `${path}?${q}`);
        const v = judge(res, { before, after: await storeFingerprint(fx.store) }, `GET ${path}?${q}`);
        tally.add("odd queries", `${v.status} ${v.code ?? ""}`.trim());
        // An unknown parameter (docs/decisions.md#compatibility) is refused too, naming it as it
        // came.
        if (v.status >= 400)
          expect([q, v.status, ["limit", "before_id", '["%ff"]', '["limit[]"]']]).toEqual([
            q,
            400,
            expect.arrayContaining([v.field]),
          ]);
      }
    }
  });

  test("a 1 MiB + 1 body sent chunked (no Content-Length) is refused with 413 on what is read", async () => {
    const before = await storeFingerprint(fx.store);
    const body = `{"description":"${"x".repeat(MAX_BODY_BYTES)}"}`;
    const res = await rawHttp(fx.baseUrl, "POST", "/edges/https", {
      body,
      chunked: true,
      headers: { "content-type": "application/json" },
    });
    const v = judge(res, { before, after: await storeFingerprint(fx.store) }, "chunked POST /edges/https");
    expect([v.status, v.code]).toEqual([413, ERROR_CODES.payloadTooLarge.code]);
    expect((await raw(fx.transport, "GET", "/edges/https")).status).toBe(200);
  });
});
