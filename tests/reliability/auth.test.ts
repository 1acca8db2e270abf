/**
 * Authentication: with a key, every operation (and every other method and path) answers 401 to a
 * missing, wrong or malformed credential — typed, before any body is read, changing nothing —
 * property-based over arbitrary Authorization headers too; keys never reach a log line, an error
 * body, the engine's output or the state; and a non-loopback bind without a key is refused.
 */
import { fingerprint } from "../support/fingerprint";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { ERROR_CODES, MAX_BODY_BYTES } from "../../sdk/contract";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport, type Transport } from "../../sdk/transport";
import { quiet, stateExport, stateFiles } from "../engine/support/harness";
import { makeTempDir, raw, removeDir } from "../service/helpers";
import { judge, Tally } from "./fuzz";
import {
  ensureBuilt,
  FC_SEED,
  killChildren,
  programStack,
  programWorkspace,
  setSpec,
  spawnCli,
  startCli,
} from "./support";

const KEY = "k3y-Auth-5b4a39e1d2c7f608";
const tally = new Tally();

let dataDir: string;
let server: RunningServer;
let anon: Transport;
let ids: { edge: string; route: string; tls: string };

beforeAll(async () => {
  dataDir = makeTempDir("auth");
  server = await startServer({ dataDir, port: 0, apiKey: KEY });
  anon = httpTransport({ baseUrl: server.url, retries: 0 });
  const withKey = httpTransport({ baseUrl: server.url, apiKey: KEY, retries: 0 });
  const edge = (await raw(withKey, "POST", "/edges/https", { body: {} })).json.id;
  const route = (
    await raw(withKey, "POST", `/edges/https/${edge}/routes`, {
      body: { match_type: "exact_path", match: "/a", backend: { backend_id: "b" } },
    })
  ).json.id;
  const tls = (await raw(withKey, "POST", "/edges/tls", { body: {} })).json.id;
  await raw(withKey, "PUT", `/edges/tls/${tls}/ip_restriction`, { body: { ip_policy_ids: ["p"] } });
  ids = { edge, route, tls };
});

afterAll(async () => {
  killChildren();
  tally.write("auth");
  await server?.close();
  if (dataDir) removeDir(dataDir);
});

/** Every operation of the API, with a body that would be accepted with the key. */
function operations(): Array<[string, string, unknown?]> {
  const { edge, route, tls } = ids;
  const r = `/edges/https/${edge}/routes/${route}`;
  return [
    ["POST", "/edges/https", {}],
    ["GET", "/edges/https"],
    ["GET", `/edges/https/${edge}`],
    ["DELETE", `/edges/https/${edge}`],
    ["POST", `/edges/https/${edge}/routes`, { match_type: "exact_path", match: "/new" }],
    ["GET", `/edges/https/${edge}/routes`],
    ["GET", r],
    ["PATCH", r, { description: "x" }],
    ["DELETE", r],
    ["PUT", `${r}/backend`, { backend_id: "b2" }],
    ["GET", `${r}/backend`],
    ["DELETE", `${r}/backend`],
    ["POST", "/edges/tls", {}],
    ["GET", "/edges/tls"],
    ["GET", `/edges/tls/${tls}`],
    ["DELETE", `/edges/tls/${tls}`],
    ["PUT", `/edges/tls/${tls}/ip_restriction`, { ip_policy_ids: ["q"] }],
    ["GET", `/edges/tls/${tls}/ip_restriction`],
    ["DELETE", `/edges/tls/${tls}/ip_restriction`],
    // Methods and paths the API does not have: no key, no hint of what exists.
    ["PUT", "/edges/https", {}],
    ["POST", `/edges/https/${edge}`, {}],
    ["PATCH", `/edges/tls/${tls}`, {}],
    ["GET", "/nothing/here"],
    ["OPTIONS", "/edges/https"],
  ];
}

const BAD_CREDENTIALS: Array<[string, Record<string, string>]> = [
  ["no Authorization header", {}],
  ["a wrong key", { authorization: "Bearer not-the-key" }],
  ["the key in another case", { authorization: `Bearer ${KEY.toUpperCase()}` }],
  ["a prefix of the key", { authorization: `Bearer ${KEY.slice(0, -1)}` }],
  ["the key and more", { authorization: `Bearer ${KEY}x` }],
  ["the key twice", { authorization: `Bearer ${KEY},Bearer ${KEY}` }],
  ["another scheme", { authorization: `Basic ${Buffer.from(`user:${KEY}`).toString("base64")}` }],
  ["the key without a scheme", { authorization: KEY }],
  ["an empty bearer token", { authorization: "Bearer " }],
  ["the key in another header", { "x-api-key": KEY }],
];

test("every operation × every bad credential: a typed 401, nothing changed, the same answer for existing and missing paths", async () => {
  let n = 0;
  for (const [method, path, body] of operations()) {
    for (const [what, headers] of BAD_CREDENTIALS) {
      const before = fingerprint(server.store);
      const res = await raw(anon, method, path, { body, headers });
      const v = judge(res, { before, after: fingerprint(server.store) }, `${method} ${path} with ${what}`);
      tally.add("bad credentials", `${v.status} ${v.code}`);
      expect([method, path, what, v.status, v.code]).toEqual([
        method,
        path,
        what,
        401,
        ERROR_CODES.unauthorized.code,
      ]);
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
      expect(res.headers.get("allow")).toBeNull(); // a 405's Allow would tell an anonymous caller what exists
      expect(res.text).not.toContain(KEY.slice(4, -4));
      n++;
    }
  }
  expect(n).toBe(operations().length * BAD_CREDENTIALS.length);
  // The key in the query string is not a credential either (and never logged: see the CLI test).
  const res = await raw(anon, "GET", `/edges/https?api_key=${KEY}`);
  expect(res.status).toBe(401);
});

test("a body is never read without the key: 2 MiB or invalid JSON still answer 401", async () => {
  const before = fingerprint(server.store);
  for (const body of ["x".repeat(2 * MAX_BODY_BYTES), "{not json", ""]) {
    const res = await raw(anon, "POST", "/edges/https", { body });
    expect([body.length, res.status]).toEqual([body.length, 401]);
  }
  expect(fingerprint(server.store)).toBe(before);
});

test("arbitrary Authorization headers (property): 401 unless they carry exactly the key", async () => {
  const header = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.string({ maxLength: 40 }).map((t) => `Bearer ${t}`),
    fc.constantFrom(KEY, `Bearer${KEY}`, `Bearer\t${KEY}x`, `bearer ${KEY.slice(1)}`),
    fc
      .nat({ max: KEY.length - 1 })
      .chain((i) =>
        fc
          .string({ minLength: 1, maxLength: 1 })
          .map((c) => `Bearer ${KEY.slice(0, i)}${c}${KEY.slice(i + 1)}`),
      ),
  );
  await fc.assert(
    fc.asyncProperty(
      header,
      fc.constantFrom(...operations()),
      async (authorization, [method, path, body]) => {
        let res;
        try {
          res = await raw(anon, method, path, { body, headers: { authorization } });
        } catch {
          return; // a header value fetch itself refuses (control characters) never leaves the client
        }
        const exact = /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim() === KEY;
        tally.add("random Authorization headers", exact ? "the key" : String(res.status));
        if (!exact) expect([authorization, res.status]).toEqual([authorization, 401]);
      },
    ),
    { numRuns: 300, seed: FC_SEED },
  );
  // The scheme is case-insensitive (RFC 7235) and surrounding spaces are not part of the token.
  for (const authorization of [`bearer ${KEY}`, `BEARER   ${KEY}  `]) {
    expect((await raw(anon, "GET", "/edges/https", { headers: { authorization } })).status).toBe(200);
  }
});

describe("non-loopback binds without a key", () => {
  test.each([
    "0.0.0.0",
    "::",
    "0",
    "192.0.2.10",
    "10.0.0.1",
    "example.com",
    "127.0.0.1.nip.io",
    "::ffff:127.0.0.1",
    "",
  ])("startServer({ host: %j }) without a key is refused before binding", async (host) => {
    const dir = makeTempDir("bind");
    try {
      for (const apiKey of [undefined, ""]) {
        await expect(startServer({ dataDir: dir, host, port: 0, apiKey })).rejects.toThrow(
          /refusing to listen on .* without an API key/,
        );
      }
    } finally {
      removeDir(dir);
    }
  });

  test("the CLI refuses --host 0.0.0.0 with an empty --api-key or an empty EDGE_API_KEY", async () => {
    ensureBuilt();
    const dir = makeTempDir("bind-cli");
    try {
      for (const [args, env] of [
        [["--api-key", ""], {}],
        [[], { EDGE_API_KEY: "" }],
      ] as Array<[string[], Record<string, string>]>) {
        const p = spawnCli(["--host", "0.0.0.0", "--port", "0", "--data", dir, ...args], env);
        const exit = await p.exit;
        expect(exit.code).toBe(1);
        expect(p.stdout()).toBe("");
        expect(p.stderr()).toContain("refusing to listen on 0.0.0.0 without an API key");
      }
    } finally {
      removeDir(dir);
    }
  });
});

describe("keys are never logged, echoed or stored", () => {
  test("the CLI's logs: requests with the key, wrong keys, the key in the query string — never a key", async () => {
    ensureBuilt();
    const dir = makeTempDir("auth-cli");
    try {
      const cli = await startCli(["--port", "0", "--data", dir, "--api-key", KEY]);
      const good = httpTransport({ baseUrl: cli.url, apiKey: KEY, retries: 0 });
      const wrong = httpTransport({ baseUrl: cli.url, apiKey: `${KEY}-wrong`, retries: 0 });
      const edge = (await raw(good, "POST", "/edges/https", { body: {} })).json.id;
      expect((await raw(wrong, "GET", `/edges/https/${edge}`)).status).toBe(401);
      // An unknown query parameter is refused naming the parameter, never echoing its value.
      const inQuery = await raw(good, "GET", `/edges/https?key=${KEY}`);
      expect(inQuery.status).toBe(400);
      expect(inQuery.json.details.field).toBe("key");
      expect(inQuery.text).not.toContain(KEY);
      expect((await raw(good, "POST", `/edges/https/${edge}/routes`, { body: { [KEY]: KEY } })).status).toBe(
        400,
      );
      cli.child.kill("SIGTERM");
      expect(await cli.exit).toEqual({ code: 0, signal: null });
      const logs = cli.stdout() + cli.stderr();
      expect(logs).toMatch(/GET \/edges\/https\/\S+ 401 /);
      expect(logs).toMatch(/POST \/edges\/https\/\S+\/routes 400 /);
      expect(logs).not.toContain(KEY);
      expect(logs).not.toContain(KEY.slice(4, -4));
    } finally {
      removeDir(dir);
    }
  });

  test("the engine: a wrong key fails the update clearly; neither key is in its output, the state or the stack file", async () => {
    ensureBuilt();
    const ws = programWorkspace("auth");
    const wrongKey = `${KEY}-wrong-7c1d`;
    try {
      const stack = await programStack(ws, server.url, { apiKey: wrongKey });
      await setSpec(stack, { edges: ["e"], routes: [] });
      const output: string[] = [];
      const err = await stack.up({ ...quiet, onOutput: (s) => output.push(s) }).catch((e: Error) => e);
      expect(String(err)).toMatch(/401 ERR_EDGE_401: the API key is not valid/);
      const text = `${output.join("")}\n${String(err)}`;
      for (const k of [KEY, wrongKey, KEY.slice(4, -4)]) expect(text).not.toContain(k);
      await stack.setConfig("edge:apiKey", { value: KEY, secret: true });
      await stack.up({ ...quiet, onOutput: (s) => output.push(s) });
      const exported = await stateExport(stack, ws.stateDir);
      const files = stateFiles(ws.stateDir).map((f) => readFileSync(f, "utf8"));
      const stackFile = readFileSync(join(ws.dir, "Pulumi.test.yaml"), "utf8");
      for (const k of [KEY, wrongKey]) {
        expect(output.join("")).not.toContain(k);
        expect(exported).not.toContain(k);
        for (const f of files) expect(f).not.toContain(k);
        expect(stackFile).not.toContain(k);
      }
      await stack.destroy(quiet);
    } finally {
      ws.cleanup();
    }
  });
});
