/**
 * Authentication (bearer key on every operation, constant-time comparison) and the optional rate
 * limit (429 + Retry-After) — over real HTTP and in-process (the app's own fetch).
 */
import { fingerprint } from "../support/fingerprint";
import * as fs from "node:fs";
import * as path from "node:path";
import { EdgeClient } from "../../sdk/client";
import { ERROR_CODES, ROUTE_MODULE_NAMES } from "../../sdk/contract";
import { createEdgeApp } from "../../service/http/app";
import { startServer } from "../../service/http/server";
import type { Store } from "../../service/store/store";
import { SqliteStore } from "../../service/store/store-sqlite";
import { httpTransport, type Transport } from "../../sdk/transport";
import { expectErrorBody, makeTempDir, moduleSample, raw, removeDir } from "./helpers";

const API_KEY = "k3y_for-tests.0123456789abcdefghijklmnopqrstuvwxyz";

interface AuthFixture {
  transport: Transport;
  store: Store;
  close(): Promise<void>;
}

interface AppOptions {
  apiKey?: string;
  rateLimitPerMinute?: number;
}

/** The service on a socket, spoken to with raw requests (no key added by the transport). */
async function overHttp(opts: AppOptions): Promise<AuthFixture> {
  const dataDir = makeTempDir("auth-http");
  const server = await startServer({ dataDir, port: 0, ...opts });
  return {
    transport: httpTransport({ baseUrl: server.url, retries: 0 }),
    store: server.store,
    async close() {
      await server.close();
      removeDir(dataDir);
    },
  };
}

/** The same app called in this process through its fetch. */
async function inProcess(opts: AppOptions): Promise<AuthFixture> {
  const dataDir = makeTempDir("auth-app");
  const store = SqliteStore.open(dataDir);
  const app = createEdgeApp({ store, ...opts });
  return {
    transport: { baseUrl: "http://in-process.test", send: async (req) => app.fetch(req) },
    store,
    async close() {
      store.close();
      removeDir(dataDir);
    },
  };
}

const AUTH_FIXTURES: Array<[string, (opts: AppOptions) => Promise<AuthFixture>]> = [
  ["over HTTP", overHttp],
  ["in-process", inProcess],
];

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Authorization headers that must all be refused: missing, wrong, and keys of many lengths. */
const REFUSED: Array<[string, Record<string, string>]> = [
  ["no Authorization header", {}],
  ["wrong key of the same length", bearer("x".repeat(API_KEY.length))],
  ["key one character short", bearer(API_KEY.slice(0, -1))],
  ["key one character long", bearer(`${API_KEY}x`)],
  ["one-character key", bearer("k")],
  ["very long key", bearer("k".repeat(10_000))],
  ["key with the right prefix", bearer(API_KEY.slice(0, 10))],
  ["key differing in case", bearer(API_KEY.toUpperCase())],
  ["empty bearer", { authorization: "Bearer " }],
  ["Basic scheme with the key", { authorization: `Basic ${API_KEY}` }],
  ["key without a scheme", { authorization: API_KEY }],
];

describe.each(AUTH_FIXTURES)("authentication %s", (_name, make) => {
  let fx: AuthFixture;
  beforeAll(async () => {
    fx = await make({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("every operation: refused (401, nothing changed) without the right key, served with it", async () => {
    const ok = bearer(API_KEY);
    const send = (method: string, p: string, body: unknown, headers: Record<string, string>) =>
      raw(fx.transport, method, p, { body, headers });

    // Ids are filled in as the resources get created, so every path exists when tried.
    const ids = { edge: "", route: "", tls: "" };
    type Op = [method: string, path: () => string, body: (() => unknown) | undefined, status: number];
    const ops: Op[] = [
      ["POST", () => "/edges/https", () => ({ description: "e" }), 201],
      ["GET", () => "/edges/https", undefined, 200],
      ["GET", () => `/edges/https/${ids.edge}`, undefined, 200],
      [
        "POST",
        () => `/edges/https/${ids.edge}/routes`,
        () => ({ match_type: "exact_path", match: "/a" }),
        201,
      ],
      ["GET", () => `/edges/https/${ids.edge}/routes`, undefined, 200],
      ["GET", () => `/edges/https/${ids.edge}/routes/${ids.route}`, undefined, 200],
      ["PATCH", () => `/edges/https/${ids.edge}/routes/${ids.route}`, () => ({ description: "p" }), 200],
      ...ROUTE_MODULE_NAMES.flatMap((m): Op[] => [
        [
          "PUT",
          () => `/edges/https/${ids.edge}/routes/${ids.route}/${m}`,
          () => moduleSample(m, "", ids.route).request,
          200,
        ],
        ["GET", () => `/edges/https/${ids.edge}/routes/${ids.route}/${m}`, undefined, 200],
        ["DELETE", () => `/edges/https/${ids.edge}/routes/${ids.route}/${m}`, undefined, 204],
      ]),
      ["POST", () => "/edges/tls", () => ({}), 201],
      ["GET", () => "/edges/tls", undefined, 200],
      ["GET", () => `/edges/tls/${ids.tls}`, undefined, 200],
      ["PUT", () => `/edges/tls/${ids.tls}/ip_restriction`, () => ({ ip_policy_ids: ["p1"] }), 200],
      ["GET", () => `/edges/tls/${ids.tls}/ip_restriction`, undefined, 200],
      ["DELETE", () => `/edges/tls/${ids.tls}/ip_restriction`, undefined, 204],
      ["DELETE", () => `/edges/https/${ids.edge}/routes/${ids.route}`, undefined, 204],
      ["DELETE", () => `/edges/https/${ids.edge}`, undefined, 204],
      ["DELETE", () => `/edges/tls/${ids.tls}`, undefined, 204],
    ];
    expect(ops.length).toBe(7 + 13 * 3 + 6 + 3);

    for (const [method, p, body, status] of ops) {
      for (const [label, headers] of REFUSED) {
        const before = fingerprint(fx.store);
        const res = await send(method, p(), body?.(), headers);
        try {
          expectErrorBody(res, 401, ERROR_CODES.unauthorized.code, null);
        } catch (e) {
          throw new Error(`${method} ${p()} with ${label}: ${(e as Error).message}`);
        }
        expect(res.headers.get("www-authenticate")).toBe("Bearer");
        expect(fingerprint(fx.store)).toBe(before);
      }
      const res = await send(method, p(), body?.(), ok);
      expect([method, p(), res.status]).toEqual([method, p(), status]);
      if (method === "POST" && p() === "/edges/https") ids.edge = res.json.id;
      if (method === "POST" && p().endsWith("/routes")) ids.route = res.json.id;
      if (method === "POST" && p() === "/edges/tls") ids.tls = res.json.id;
    }
  });

  it("401 comes before routing details: unknown paths and bad bodies are refused the same way", async () => {
    expectErrorBody(await raw(fx.transport, "GET", "/nowhere"), 401, ERROR_CODES.unauthorized.code, null);
    expectErrorBody(
      await raw(fx.transport, "POST", "/edges/https", { body: "not json", contentType: "text/plain" }),
      401,
      ERROR_CODES.unauthorized.code,
      null,
    );
    // The scheme name is case-insensitive; surrounding spaces of the token are ignored.
    const lower = await raw(fx.transport, "GET", "/edges/https", {
      headers: { authorization: `bearer ${API_KEY}` },
    });
    expect(lower.status).toBe(200);
  });

  it("the typed client reports a 401 as EdgeApiError.isUnauthorized", async () => {
    const client = new EdgeClient(fx.transport);
    const err = await client.listHttpsEdges().catch((e) => e);
    expect(err.status).toBe(401);
    expect(err.isUnauthorized).toBe(true);
    expect(err.errorCode).toBe(ERROR_CODES.unauthorized.code);
  });
});

describe("key comparison (source)", () => {
  const source = fs.readFileSync(path.join(__dirname, "../../service/api-keys.ts"), "utf8");

  it("looks a key up only by its SHA-256, never comparing keys themselves", () => {
    expect(source).toMatch(/import\s*\{[^}]*\bcreateHash\b[^}]*\}\s*from\s*"node:crypto"/);
    expect(source).toMatch(
      /export const hashKey = \(key: string\): string => createHash\("sha256"\)\.update\(key\)\.digest\("hex"\);/,
    );
    // A presented key is hashed first (a fixed length whatever it is; the hash of a guess tells
    // nothing of a stored key's bytes), then looked up; the bootstrap key is stored hashed too.
    const check = source.slice(
      source.indexOf("function checkIn"),
      source.indexOf("export async function createKey"),
    );
    expect(check).toMatch(/s\.byHash\.get\(hashKey\(key\)\)/);
    expect(source).toMatch(
      /this\.bootstrapHash = bootstrapKey === undefined \? undefined : hashKey\(bootstrapKey\);/,
    );
    // No direct (early-exit) comparison of a key.
    expect(source).not.toMatch(/\b(key|bootstrapKey|token)\s*(===|!==|==|!=)(?!=)(?!\s*undefined\b)/);
    expect(source).not.toMatch(/(===|!==|==|!=)(?!=)\s*(key|bootstrapKey|token)\b/);
    expect(source).not.toMatch(/\.equals\(|Buffer\.compare|localeCompare/);
  });
});

describe.each(AUTH_FIXTURES)("rate limit %s", (_name, make) => {
  // Fixed clock: 30 s into a minute, so Retry-After is exactly 30 whatever the machine's speed.
  const T = Date.UTC(2030, 0, 1, 12, 0, 30);
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it("the 6th request in a minute → 429 with Retry-After; a rejected POST stores nothing; next minute is free", async () => {
    const fx = await make({ rateLimitPerMinute: 5 });
    try {
      const now = jest.spyOn(Date, "now").mockReturnValue(T);
      for (let i = 0; i < 5; i++) expect((await raw(fx.transport, "GET", "/edges/https")).status).toBe(200);
      const limited = await raw(fx.transport, "GET", "/edges/https");
      expectErrorBody(limited, 429, ERROR_CODES.rateLimited.code, null);
      expect(limited.headers.get("retry-after")).toBe("30");

      const before = fingerprint(fx.store);
      const post = await raw(fx.transport, "POST", "/edges/https", { body: {} });
      expectErrorBody(post, 429, ERROR_CODES.rateLimited.code, null);
      expect(fingerprint(fx.store)).toBe(before);

      now.mockReturnValue(T + 29_500);
      expect((await raw(fx.transport, "GET", "/edges/https")).headers.get("retry-after")).toBe("1");

      now.mockReturnValue(T + 30_000); // the next minute
      expect((await raw(fx.transport, "POST", "/edges/https", { body: {} })).status).toBe(201);
    } finally {
      await fx.close();
    }
  });

  it("without a key, varying the Authorization header does not escape the limit", async () => {
    const fx = await make({ rateLimitPerMinute: 5 });
    try {
      jest.spyOn(Date, "now").mockReturnValue(T);
      for (let i = 0; i < 5; i++) {
        expect((await raw(fx.transport, "GET", "/edges/https", { headers: bearer(`a${i}`) })).status).toBe(
          200,
        );
      }
      expect((await raw(fx.transport, "GET", "/edges/https", { headers: bearer("another") })).status).toBe(
        429,
      );
      expect((await raw(fx.transport, "GET", "/edges/https")).status).toBe(429);
    } finally {
      await fx.close();
    }
  });

  it("with a key, rewriting the same key (scheme case, spaces) does not escape the limit", async () => {
    const fx = await make({ rateLimitPerMinute: 5, apiKey: API_KEY });
    try {
      jest.spyOn(Date, "now").mockReturnValue(T);
      for (let i = 0; i < 5; i++) {
        expect((await raw(fx.transport, "GET", "/edges/https", { headers: bearer(API_KEY) })).status).toBe(
          200,
        );
      }
      for (const authorization of [`bearer ${API_KEY}`, `BEARER  ${API_KEY}`, `Bearer ${API_KEY} `]) {
        const res = await raw(fx.transport, "GET", "/edges/https", { headers: { authorization } });
        expect([authorization, res.status]).toEqual([authorization, 429]);
      }
      // Refused keys are answered 401, not counted against the key's limit either way.
      expect((await raw(fx.transport, "GET", "/edges/https", { headers: bearer("wrong") })).status).toBe(401);
    } finally {
      await fx.close();
    }
  });
});
