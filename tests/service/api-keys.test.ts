/**
 * Named API keys with a scope, as an operator runs them: made, listed and revoked with the compiled
 * `edge-service keys` on the store itself, while two replicas of the service keep serving on it
 * (two servers on one SQLite data directory, two on one real PostgreSQL database). Every operation
 * of `/openapi.json` is tried with each scope: out of scope is a 403 in the API's error shape that
 * changes nothing. Keys are found nowhere at rest, and logs name them without showing them.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Client } from "pg";
import { ERROR_CODES, requiredScope, type Method, type Scope } from "../../sdk/contract";
import { hashKey } from "../../service/api-keys";
import { SecretsKey } from "../../service/secrets";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport, type Transport } from "../../sdk/transport";
import { CLI, ensureBuilt, ROOT } from "../support/edge-service";
import { storeFingerprint } from "../support/fingerprint";
import { sharedCluster } from "../support/postgres";
import { expectErrorBody, makeTempDir, raw, removeDir } from "./helpers";

const BOOTSTRAP = "bootstrap-key.0123456789abcdefghijklmnopqrstuvwxyz";
/** How long the keys guide promises a change takes to reach every replica. */
const IN_FORCE_AFTER_MS = 1000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `edge-service keys ARGS` on the store, as an operator types it. */
function keysCli(args: string[], store: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, "keys", ...args, ...store],
      { cwd: ROOT, env: { ...process.env, EDGE_API_KEY: "", EDGE_DATABASE_URL: "", EDGE_SECRETS_KEY: "" } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function makeKey(name: string, scope: Scope, store: string[]): Promise<string> {
  const run = await keysCli(["create", name, "--scope", scope], store);
  if (run.code !== 0) throw new Error(`keys create ${name} failed (${run.code}): ${run.stderr}`);
  const key = run.stdout.trim();
  expect(key).toMatch(/^edge_[A-Za-z0-9_-]{43}$/);
  expect(run.stderr).toContain(`made key "${name}" (scope ${scope})`);
  return key;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** Every operation of the service's own OpenAPI document. */
async function documentedOperations(t: Transport, key: string) {
  const doc = await raw(t, "GET", "/openapi.json", { headers: auth(key) });
  expect(doc.status).toBe(200);
  const ops: Array<{ id: string; method: Method; path: string; public: boolean; scope: string | undefined }> =
    [];
  for (const [p, item] of Object.entries<Record<string, { operationId: string; security: unknown[] }>>(
    doc.json.paths,
  )) {
    for (const [m, op] of Object.entries(item)) {
      const bearer = op.security.find(
        (s): s is { bearer: string[] } => typeof s === "object" && s !== null && "bearer" in s,
      );
      ops.push({
        id: op.operationId,
        method: m.toUpperCase() as Method,
        path: p,
        public: op.security.length === 0,
        scope: bearer?.bearer[0],
      });
    }
  }
  return ops;
}

/** The path with its identifiers filled from `ids` (those of objects that exist, or of none). */
function fill(template: string, ids: { https: string; tls: string; route: string }): string {
  const edge = template.startsWith("/edges/tls") ? ids.tls : ids.https;
  return template
    .replace("{edge_id}", ids.https)
    .replace("{id}", template.includes("{edge_id}") ? ids.route : edge);
}

const STORES: Array<
  [string, () => Promise<{ args: string[]; url?: string; dataDir: string; done(): void }>]
> = [
  [
    "SQLite (two servers on one data directory)",
    () => {
      const dataDir = makeTempDir("keys");
      return Promise.resolve({ args: ["--data", dataDir], dataDir, done: () => removeDir(dataDir) });
    },
  ],
  [
    "PostgreSQL (two replicas on one database)",
    async () => {
      const url = await (await sharedCluster()).createDatabase();
      const dataDir = makeTempDir("keys-pg");
      return { args: ["--database", url], url, dataDir, done: () => removeDir(dataDir) };
    },
  ],
];

describe.each(STORES)("scoped API keys on %s", (_name, makeStore) => {
  let where: Awaited<ReturnType<typeof makeStore>>;
  let a: RunningServer;
  let b: RunningServer;
  let ta: Transport;
  let tb: Transport;
  const logA: string[] = [];
  const keys: Record<"read" | "write" | "admin", string> = { read: "", write: "", admin: "" };
  let ids: { https: string; tls: string; route: string };

  beforeAll(async () => {
    ensureBuilt();
    where = await makeStore();
    const serve = (log?: (l: string) => void) =>
      startServer({ dataDir: where.dataDir, databaseUrl: where.url, port: 0, apiKey: BOOTSTRAP, log });
    a = await serve((l) => logA.push(l));
    b = await serve();
    ta = httpTransport({ baseUrl: a.url, retries: 0 });
    tb = httpTransport({ baseUrl: b.url, retries: 0 });
    // Made while both replicas run: neither is restarted.
    keys.read = await makeKey("ci-drift", "read", where.args);
    keys.write = await makeKey("deployer", "write", where.args);
    keys.admin = await makeKey("ops", "admin", where.args);
    await sleep(IN_FORCE_AFTER_MS);
    const https = await raw(tb, "POST", "/edges/https", {
      body: { description: "keys" },
      headers: auth(keys.write),
    });
    expect(https.status).toBe(201);
    const route = await raw(tb, "POST", `/edges/https/${https.json.id}/routes`, {
      body: { match_type: "path_prefix", match: "/k", compression: { enabled: true } },
      headers: auth(keys.write),
    });
    expect(route.status).toBe(201);
    const tls = await raw(ta, "POST", "/edges/tls", { body: {}, headers: auth(keys.admin) });
    expect(tls.status).toBe(201);
    expect(
      (
        await raw(ta, "PUT", `/edges/tls/${tls.json.id}/ip_restriction`, {
          body: { ip_policy_ids: ["ipp_1"] },
          headers: auth(keys.admin),
        })
      ).status,
    ).toBe(200);
    ids = { https: https.json.id, tls: tls.json.id, route: route.json.id };
  }, 120_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    where?.done();
  });

  it("lists the keys by name and scope, never a key or its hash", async () => {
    const text = await keysCli(["list"], where.args);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^NAME +SCOPE +CREATED +REVOKED\n/);
    expect(text.stdout).toMatch(/\nci-drift +read +\d{4}-\d\d-\d\dT\S+ +-\n/);
    const json = await keysCli(["list", "--json"], where.args);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ name: "ci-drift", scope: "read", revoked_at: null }),
      expect.objectContaining({ name: "deployer", scope: "write", revoked_at: null }),
      expect.objectContaining({ name: "ops", scope: "admin", revoked_at: null }),
    ]);
    for (const out of [text.stdout + text.stderr, json.stdout + json.stderr]) {
      for (const key of Object.values(keys)) {
        expect(out).not.toContain(key);
        expect(out).not.toContain(hashKey(key));
      }
    }
  });

  it("keeps no key at rest: only its SHA-256", async () => {
    let stored: string;
    if (where.url) {
      const client = new Client({ connectionString: where.url });
      await client.connect();
      try {
        stored = JSON.stringify((await client.query("SELECT * FROM api_keys")).rows);
      } finally {
        await client.end();
      }
    } else {
      stored = fs
        .readdirSync(where.dataDir)
        .map((f) => fs.readFileSync(path.join(where.dataDir, f)).toString("latin1"))
        .join("");
    }
    for (const key of Object.values(keys)) {
      expect(stored).not.toContain(key);
      expect(stored).not.toContain(key.slice("edge_".length, 20));
      expect(stored).toContain(hashKey(key));
    }
  });

  it("answers every documented operation by the key's scope; out of scope is a 403 that changes nothing", async () => {
    const ops = await documentedOperations(ta, keys.read);
    expect(ops.length).toBeGreaterThanOrEqual(20);
    const unknown = { https: "edghts_missing", tls: "edgtls_missing", route: "edghtsrt_missing" };
    let forbidden = 0;
    for (const op of ops) {
      // The document states the scope the service enforces, and the table states it once.
      expect(op.scope).toBe(requiredScope({ method: op.method, ...(op.public ? { public: true } : {}) }));
      if (op.public) {
        expect((await raw(ta, op.method, op.path)).status).toBe(200);
        continue;
      }
      for (const [held, key] of Object.entries(keys) as Array<[Scope, string]>) {
        const allowed = op.scope === "read" || held !== "read";
        for (const t of [ta, tb]) {
          if (!allowed) {
            const before = await storeFingerprint(a.store);
            // A body that would succeed: only the scope stands in the way.
            const res = await raw(t, op.method, fill(op.path, ids), {
              body: op.method === "DELETE" ? undefined : {},
              headers: auth(key),
            });
            expectErrorBody(res, 403, ERROR_CODES.forbidden.code, null);
            expect(res.json.msg).toContain(`the API key "ci-drift" has scope read, and ${op.id} needs write`);
            expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
            expect(await storeFingerprint(a.store)).toBe(before);
            forbidden++;
          } else {
            // Past the scope check: a GET of what exists answers 200 (metrics included); a change
            // aimed at objects that do not exist is a 404 (or a 400 for a bad body), never 401/403.
            const res =
              op.method === "GET"
                ? await raw(t, "GET", fill(op.path, ids), { headers: auth(key) })
                : await raw(t, op.method, fill(op.path, unknown), {
                    body: op.method === "DELETE" ? undefined : { not_a_field: 1 },
                    headers: auth(key),
                  });
            // (A GET of a module the route does not have is a 404.)
            const expected =
              op.method === "GET" ? (op.path.includes("/routes/{id}/") ? [200, 404] : [200]) : [400, 404];
            expect([op.id, held, expected.includes(res.status)]).toEqual([op.id, held, true]);
            expect([401, 403]).not.toContain(res.status);
          }
        }
      }
    }
    // Every change the table holds, refused to the read key on both replicas.
    expect(forbidden).toBe(2 * ops.filter((o) => o.scope === "write").length);
  });

  it("answers secrets to write and admin keys only: a read key gets every secret leaf redacted", async () => {
    const secrets = { webhook: "whsec_scoped_1", oauth: "oauth_scoped_2", oidc: "oidc_scoped_3" };
    const made = async (body: object) => {
      const res = await raw(ta, "POST", `/edges/https/${ids.https}/routes`, {
        body,
        headers: auth(keys.write),
      });
      expect(res.status).toBe(201);
      return `/edges/https/${ids.https}/routes/${res.json.id}`;
    };
    const hooks = await made({
      match_type: "exact_path",
      match: "/scoped-hooks",
      webhook_verification: { provider: "github", secret: secrets.webhook },
      oauth: { provider: { github: { client_id: "cid", client_secret: secrets.oauth } } },
    });
    const login = await made({
      match_type: "exact_path",
      match: "/scoped-login",
      oidc: { issuer: "https://id.example.com", client_id: "cid", client_secret: secrets.oidc },
    });
    // An SNS webhook has no secret: nothing to redact, and "" stays "".
    const sns = await made({
      match_type: "exact_path",
      match: "/scoped-sns",
      webhook_verification: { provider: "sns" },
    });
    const every = [
      hooks,
      login,
      sns,
      `/edges/https/${ids.https}/routes`,
      `/edges/https/${ids.https}`,
      `${hooks}/webhook_verification`,
      `${hooks}/oauth`,
      `${login}/oidc`,
    ];
    for (const t of [ta, tb]) {
      for (const p of every) {
        // Twice each: the second answer may come from the response cache, which must not mix them.
        for (const round of [1, 2]) {
          const read = await raw(t, "GET", p, { headers: auth(keys.read) });
          expect([p, round, read.status]).toEqual([p, round, 200]);
          for (const secret of Object.values(secrets)) expect(read.text).not.toContain(secret);
          const write = await raw(t, "GET", p, { headers: auth(keys.write) });
          expect(write.status).toBe(200);
          if (p !== sns) expect(write.text).toMatch(/scoped_/);
        }
      }
      const hooksRead = (await raw(t, "GET", hooks, { headers: auth(keys.read) })).json;
      expect(hooksRead.webhook_verification).toEqual({
        enabled: true,
        provider: "github",
        secret: "[redacted]",
      });
      expect(hooksRead.oauth.provider.github.client_secret).toBe("[redacted]");
      expect(hooksRead.oauth.provider.github.client_id).toBe("cid"); // only the secret leaves
      expect((await raw(t, "GET", sns, { headers: auth(keys.read) })).json.webhook_verification.secret).toBe(
        "",
      );
      expect((await raw(t, "GET", login, { headers: auth(keys.admin) })).json.oidc.client_secret).toBe(
        secrets.oidc,
      );
    }
    // What a read key was shown is never taken back as a secret: a 400 naming the field, nothing changed.
    const before = await storeFingerprint(a.store);
    for (const [method, p, body, field] of [
      ["PUT", `${hooks}/webhook_verification`, { provider: "github", secret: "[redacted]" }, "secret"],
      [
        "PATCH",
        login,
        { oidc: { issuer: "https://id.example.com", client_id: "cid", client_secret: "[redacted]" } },
        "oidc.client_secret",
      ],
      [
        "POST",
        `/edges/https/${ids.https}/routes`,
        {
          match_type: "exact_path",
          match: "/scoped-echo",
          oauth: { provider: { google: { client_id: "c", client_secret: "[redacted]" } } },
        },
        "oauth.provider.google.client_secret",
      ],
    ] as const) {
      const res = await raw(ta, method, p, { body, headers: auth(keys.write) });
      expectErrorBody(res, 400, ERROR_CODES.validation.code, field);
    }
    expect(await storeFingerprint(a.store)).toBe(before);
    for (const p of [hooks, login, sns]) await raw(ta, "DELETE", p, { headers: auth(keys.write) });
  });

  it("refuses a wrong or missing key with a 401, and names the key in the log, never showing it", async () => {
    for (const headers of [{}, auth("edge_not-a-key"), auth(hashKey(keys.read))]) {
      expectErrorBody(
        await raw(ta, "GET", "/edges/https", { headers }),
        401,
        ERROR_CODES.unauthorized.code,
        null,
      );
    }
    expect((await raw(ta, "GET", "/edges/https", { headers: auth(keys.read) })).status).toBe(200);
    expect((await raw(ta, "GET", "/edges/https", { headers: auth(BOOTSTRAP) })).status).toBe(200);
    const log = logA.join("\n");
    expect(log).toMatch(/^GET \/edges\/https 200 \S+ms op_\w+ key=ci-drift$/m);
    expect(log).toMatch(/^GET \/edges\/https 200 \S+ms op_\w+ key=bootstrap$/m);
    expect(log).toMatch(/^DELETE \/edges\/https\/\w+ 403 \S+ms op_\w+ key=ci-drift$/m);
    for (const key of [...Object.values(keys), BOOTSTRAP]) expect(log).not.toContain(key);
  });

  it("takes a new key at once and puts a revocation in force on every replica within a second, without a restart", async () => {
    // Both replicas have just read their keys (the test before), so each holds a fresh snapshot
    // without "late": the key, made a moment ago by the CLI, is looked for again, not refused.
    for (const t of [ta, tb])
      expect((await raw(t, "GET", "/edges/tls", { headers: auth(keys.read) })).status).toBe(200);
    const late = await makeKey("late", "read", where.args);
    for (const t of [ta, tb])
      expect((await raw(t, "GET", "/edges/tls", { headers: auth(late) })).status).toBe(200);

    const revoked = await keysCli(["revoke", "late"], where.args);
    expect(revoked.code).toBe(0);
    await sleep(IN_FORCE_AFTER_MS);
    for (const t of [ta, tb]) {
      const res = await raw(t, "GET", "/edges/tls", { headers: auth(late) });
      expectErrorBody(res, 401, ERROR_CODES.unauthorized.code, null);
      expect(res.json.msg).toContain('the API key "late" was revoked');
      // The other keys are untouched.
      expect((await raw(t, "GET", "/edges/tls", { headers: auth(keys.read) })).status).toBe(200);
    }
    // A revoked name is never given again: logs name keys.
    const again = await keysCli(["create", "late", "--scope", "admin"], where.args);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a key named "late" exists already');
    const twice = await keysCli(["revoke", "late"], where.args);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('the key "late" was revoked already');
  });

  it.each([
    [["create", "x"], "keys create needs --scope read, write or admin"],
    [["create", "x", "--scope", "root"], '--scope must be read, write, admin; got "root"'],
    [["create", "no spaces", "--scope", "read"], "a key name is 1 to 63 letters"],
    [["create", "bootstrap", "--scope", "read"], '"bootstrap" names the key the service is started with'],
    [["revoke", "nobody"], 'no key is named "nobody"'],
    [["rotate"], "keys takes: create NAME --scope read|write|admin, list [--json], or revoke NAME"],
  ])("keys %j is a usage error (exit 2) that changes nothing", async (args, message) => {
    const before = (await keysCli(["list", "--json"], where.args)).stdout;
    const run = await keysCli(args, where.args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe("");
    expect((await keysCli(["list", "--json"], where.args)).stdout).toBe(before);
  });
});

test("keys create refused for its name or scope makes no data directory", async () => {
  ensureBuilt();
  const parent = makeTempDir("keys-refused");
  try {
    const dir = path.join(parent, "never-made");
    for (const args of [
      ["create", "x", "--scope", "root"],
      ["create", "no spaces", "--scope", "read"],
    ]) {
      const run = await keysCli(args, ["--data", dir]);
      expect(run.code).toBe(2);
      expect(fs.existsSync(dir)).toBe(false);
    }
  } finally {
    removeDir(parent);
  }
});

describe("a service with named keys only", () => {
  let dataDir: string;
  beforeAll(() => {
    ensureBuilt();
    dataDir = makeTempDir("keys-only");
  });
  afterAll(() => removeDir(dataDir));

  it("is open on loopback until a key is made, then listens anywhere with an admin key and no --api-key", async () => {
    const open = await startServer({ dataDir, port: 0 });
    try {
      const t = httpTransport({ baseUrl: open.url, retries: 0 });
      expect((await raw(t, "GET", "/edges/https")).status).toBe(200);
      await expect(startServer({ dataDir, host: "0.0.0.0", port: 0 })).rejects.toThrow(
        /refusing to listen on 0\.0\.0\.0 without an API key: .*make a named key/,
      );
      const admin = await makeKey("admin", "admin", ["--data", dataDir]);
      await sleep(IN_FORCE_AFTER_MS);
      // The loopback service that ran without keys now asks for one.
      expectErrorBody(await raw(t, "GET", "/edges/https"), 401, ERROR_CODES.unauthorized.code, null);
      expect((await raw(t, "GET", "/edges/https", { headers: auth(admin) })).status).toBe(200);
      const anywhere = await startServer({ dataDir, host: "0.0.0.0", port: 0 });
      try {
        const tw = httpTransport({ baseUrl: anywhere.url.replace("0.0.0.0", "127.0.0.1"), retries: 0 });
        expect((await raw(tw, "POST", "/edges/tls", { body: {}, headers: auth(admin) })).status).toBe(201);
        expect((await raw(tw, "GET", "/healthz")).status).toBe(200);
      } finally {
        await anywhere.close();
      }
    } finally {
      await open.close();
    }
  });
});

// Issue 27: keys are hashed, not sealed, so the keys commands need no secrets key, even on a
// store whose secrets are sealed (the docs' advice), and leave that store's key as it was.
describe.each(STORES)("keys on a sealed store, without its secrets key, on %s", (_name, makeStore) => {
  let where: Awaited<ReturnType<typeof makeStore>>;
  const secretsKey = SecretsKey.parse(randomBytes(32).toString("base64"), "test");
  const WEBHOOK_SECRET = "whsec-sealed-by-the-service";
  let edgeId = "";
  let routeId = "";
  const serve = (withKey: boolean) =>
    startServer({
      dataDir: where.dataDir,
      databaseUrl: where.url,
      port: 0,
      apiKey: BOOTSTRAP,
      log: () => {},
      ...(withKey ? { secretsKey } : {}),
    });

  beforeAll(async () => {
    ensureBuilt();
    where = await makeStore();
    const server = await serve(true);
    try {
      const t = httpTransport({ baseUrl: server.url, retries: 0 });
      edgeId = (await raw(t, "POST", "/edges/https", { body: {}, headers: auth(BOOTSTRAP) })).json.id;
      const route = await raw(t, "POST", `/edges/https/${edgeId}/routes`, {
        body: {
          match_type: "path_prefix",
          match: "/wh",
          webhook_verification: { provider: "github", secret: WEBHOOK_SECRET },
        },
        headers: auth(BOOTSTRAP),
      });
      expect(route.status).toBe(201);
      routeId = route.json.id;
    } finally {
      await server.close();
    }
  });
  afterAll(() => where.done());

  it("is sealed: the service itself refuses to start without the key", async () => {
    await expect(serve(false)).rejects.toThrow(/sealed with secrets key .*no key was given/);
  });

  it("creates, lists and revokes keys with no --secrets-key-file", async () => {
    const made = await makeKey("no-secrets-key", "read", where.args);
    const listed = await keysCli(["list", "--json"], where.args);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ name: "no-secrets-key", scope: "read", revoked_at: null }),
    ]);
    const revoked = await keysCli(["revoke", "no-secrets-key"], where.args);
    expect(revoked.code).toBe(0);
    expect(revoked.stderr).toContain('revoked key "no-secrets-key"');
    const after = JSON.parse((await keysCli(["list", "--json"], where.args)).stdout);
    expect(after[0].revoked_at).toEqual(expect.any(String));
    // The service, started with its key, still opens its secrets and refuses the revoked key.
    const server = await serve(true);
    try {
      const t = httpTransport({ baseUrl: server.url, retries: 0 });
      expect((await raw(t, "GET", "/edges/https", { headers: auth(made) })).status).toBe(401);
      const route = await raw(t, "GET", `/edges/https/${edgeId}/routes/${routeId}`, {
        headers: auth(BOOTSTRAP),
      });
      expect(route.status).toBe(200);
      expect(route.json.webhook_verification.secret).toBe(WEBHOOK_SECRET);
    } finally {
      await server.close();
    }
  });
});
