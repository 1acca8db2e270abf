/**
 * The audit trail (`GET /audit_events`), on both stores through a real server: every mutating
 * operation of the operation table writes exactly one event naming its operation, object, key and
 * request id; the diff holds the changed fields only; secrets never show (not in the answers, not
 * in the database's bytes); a rejected request writes nothing; two PostgreSQL replicas share one
 * trail; paging, filters and scopes; the retention of `edge-service serve` prunes.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { Client } from "pg";
import {
  ALL_OPERATIONS,
  AUDIT_REDACTED,
  AUDIT_TRUNCATED,
  type AuditEvent,
  auditEventListSchema,
  OPERATION_ID_HEADER,
  ROUTE_MODULE_NAMES,
  ROUTE_SECRET_PATHS,
} from "../../sdk/contract";
import { createKey, revokeKey } from "../../service/api-keys";
import { boundChanges, diffChanges } from "../../service/audit";
import { parseRetention } from "../../service/audit-retention";
import { SecretsKey } from "../../service/secrets";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport, type Transport } from "../../sdk/transport";
import { ensureBuilt, killClis, NO_DRAIN, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, moduleSample, raw, type RawResponse, removeDir } from "./helpers";

const BOOTSTRAP = "bootstrap-key.audit-0123456789abcdefghijklmnop";
const SECRETS_KEY = SecretsKey.parse(Buffer.alloc(32, 7).toString("base64"), "test");
/** Secrets the requests carry: none may appear in an event or in the database's bytes. */
const WEBHOOK_SECRET = "whsec_AUDIT_never_shown_1";
const OIDC_SECRET = "oidc_AUDIT_never_shown_2";
const OAUTH_SECRET = "oauth_AUDIT_never_shown_3";

interface Service {
  server: RunningServer;
  transport: Transport;
  dataDir: string;
}

/** A server on `dataDir` (or the PostgreSQL database), with the bootstrap key unless `keyless`. */
async function serve(dataDir: string, databaseUrl?: string, keyless = false) {
  const apiKey = keyless ? undefined : BOOTSTRAP;
  const server = await startServer({ dataDir, databaseUrl, port: 0, apiKey, secretsKey: SECRETS_KEY });
  return {
    server,
    transport: httpTransport({ baseUrl: server.url, retries: 0, timeoutMs: 60_000 }),
    dataDir,
  };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function call(
  s: Service,
  key: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<RawResponse> {
  return raw(s.transport, method, p, { headers: bearer(key), ...(body === undefined ? {} : { body }) });
}

/** The whole trail, newest first (following next_page_uri, bounded). */
async function trail(s: Service, key = BOOTSTRAP, query = ""): Promise<AuditEvent[]> {
  const out: AuditEvent[] = [];
  let next: string | null = `/audit_events${query}`;
  for (let i = 0; next !== null && i < 100; i++) {
    const res = await call(s, key, "GET", next);
    expect(res.status).toBe(200);
    const page = auditEventListSchema.parse(res.json);
    out.push(...page.audit_events);
    next = page.next_page_uri === null ? null : page.next_page_uri.slice(s.server.url.length);
  }
  return out;
}

/** Makes a change, and checks it wrote exactly one event, which it answers. */
async function oneEvent(s: Service, key: string, method: string, p: string, body?: unknown) {
  const before = (await trail(s)).length;
  const res = await call(s, key, method, p, body);
  expect([200, 201, 204]).toContain(res.status);
  const after = await trail(s);
  expect(after.length).toBe(before + 1);
  return { res, event: after[0]! };
}

/**
 * Every mutating operation of the table, in an order that leaves each one something to act on;
 * each checked to write one event naming its operation, its object (the id the answer or the
 * path gives), the key and the request id. Answers the events by operation id.
 */
async function everyChange(s: Service, key: string): Promise<Map<string, AuditEvent>> {
  const seen = new Map<string, AuditEvent>();
  const run = async (
    opId: string,
    method: string,
    p: string,
    body: unknown,
    kind: string,
    id: string | ((res: RawResponse) => string),
    edgeId: string | null = null,
  ) => {
    const { res, event } = await oneEvent(s, key, method, p, body);
    expect(event).toMatchObject({
      operation: opId,
      object_kind: kind,
      object_id: typeof id === "string" ? id : id(res),
      key: "ops-console",
      request_id: res.headers.get(OPERATION_ID_HEADER),
      edge_id: edgeId,
      truncated: false,
    });
    seen.set(opId, event);
    return res;
  };
  const newId = (res: RawResponse) => String(res.json.id);
  const https = newId(
    await run("create_https_edge", "POST", "/edges/https", { description: "shop" }, "https_edge", newId),
  );
  const tls = newId(await run("create_tls_edge", "POST", "/edges/tls", {}, "tls_edge", newId));
  const routes = `/edges/https/${https}/routes`;
  const route = newId(
    await run(
      "create_route",
      "POST",
      routes,
      { match_type: "path_prefix", match: "/shop" },
      "route",
      newId,
      https,
    ),
  );
  const R = `${routes}/${route}`;
  await run("update_route", "PATCH", R, { description: "new" }, "route", route, https);
  for (const m of ROUTE_MODULE_NAMES) {
    const request = moduleSample(m, s.server.url, route).request;
    const body =
      m === "webhook_verification"
        ? { ...request, secret: WEBHOOK_SECRET }
        : m === "oidc"
          ? { ...request, client_secret: OIDC_SECRET }
          : m === "oauth"
            ? { provider: { github: { client_id: "cid", client_secret: OAUTH_SECRET } } }
            : request;
    await run(`put_${m}_module`, "PUT", `${R}/${m}`, body, "route", route, https);
    // One auth module at a time: each is removed before the next is put.
    if (m === "oauth" || m === "oidc" || m === "saml") {
      await run(`delete_${m}_module`, "DELETE", `${R}/${m}`, undefined, "route", route, https);
    }
  }
  for (const m of ROUTE_MODULE_NAMES.filter((n) => !["oauth", "oidc", "saml"].includes(n))) {
    await run(`delete_${m}_module`, "DELETE", `${R}/${m}`, undefined, "route", route, https);
  }
  await run("delete_route", "DELETE", R, undefined, "route", route, https);
  const T = `/edges/tls/${tls}/ip_restriction`;
  await run("put_tls_ip_restriction", "PUT", T, { ip_policy_ids: ["ipp_a"] }, "tls_ip_restriction", tls);
  await run("delete_tls_ip_restriction", "DELETE", T, undefined, "tls_ip_restriction", tls);
  await run("delete_tls_edge", "DELETE", `/edges/tls/${tls}`, undefined, "tls_edge", tls);
  await run("delete_https_edge", "DELETE", `/edges/https/${https}`, undefined, "https_edge", https);
  return seen;
}

/** Every byte of a SQLite data directory's database files, as text. */
const databaseBytes = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.startsWith("edge.db"))
    .map((f) => fs.readFileSync(path.join(dir, f)).toString("latin1"))
    .join("");

describe.each([
  ["SQLite", false],
  ["PostgreSQL", true],
] as const)("the audit trail on %s", (_label, postgres) => {
  let s: Service;
  let dataDir: string;
  let databaseUrl: string | undefined;
  let writeKey: string;
  let readKey: string;

  beforeAll(async () => {
    dataDir = makeTempDir("audit");
    databaseUrl = postgres ? await (await sharedCluster()).createDatabase() : undefined;
    s = await serve(dataDir, databaseUrl);
    writeKey = await createKey(s.server.store, "ops-console", "write");
    readKey = await createKey(s.server.store, "dashboard", "read");
  }, 120_000);
  afterAll(async () => {
    await s?.server.close();
    removeDir(dataDir);
  });

  test("key administration writes events naming the key, never the key itself", async () => {
    const events = await trail(s);
    const made = events.filter((e) => e.operation === "create_api_key").map((e) => e.object_id);
    expect(made).toEqual(["dashboard", "ops-console"]);
    const ops = events.find((e) => e.object_id === "ops-console")!;
    expect(ops).toMatchObject({ object_kind: "api_key", key: null, request_id: null });
    expect(ops.changes).toEqual({ name: { after: "ops-console" }, scope: { after: "write" } });
    expect(JSON.stringify(events)).not.toContain(writeKey);
  });

  test("every mutating operation of the table writes exactly one event: kind, ids, key, request id", async () => {
    const seen = await everyChange(s, writeKey);
    const mutating = ALL_OPERATIONS.filter((op) => op.method !== "GET").map((op) => op.id);
    expect([...seen.keys()].sort()).toEqual([...mutating].sort());
  }, 120_000);

  test("the diff holds the changed fields only, in wire names, secrets redacted but shown changed", async () => {
    const edge = await call(s, writeKey, "POST", "/edges/https", {});
    const id = String(edge.json.id);
    const route = await call(s, writeKey, "POST", `/edges/https/${id}/routes`, {
      match_type: "path_prefix",
      match: "/diff",
      backend: { backend_id: "bkd_one" },
      webhook_verification: { provider: "github", secret: WEBHOOK_SECRET },
    });
    const R = `/edges/https/${id}/routes/${String(route.json.id)}`;
    const created = (await trail(s, BOOTSTRAP, `?object_id=${String(route.json.id)}`))[0]!;
    expect(created.changes["match"]).toEqual({ after: "/diff" });
    expect(created.changes["webhook_verification.secret"]).toEqual({ after: AUDIT_REDACTED });

    const { event } = await oneEvent(s, writeKey, "PATCH", R, { backend: { backend_id: "bkd_two" } });
    expect(event.changes).toEqual({ "backend.backend_id": { before: "bkd_one", after: "bkd_two" } });

    const rotated = await oneEvent(s, writeKey, "PUT", `${R}/webhook_verification`, {
      provider: "github",
      secret: `${WEBHOOK_SECRET}-rotated`,
    });
    expect(rotated.event.changes).toEqual({
      "webhook_verification.secret": { before: AUDIT_REDACTED, after: AUDIT_REDACTED },
    });
    const gone = await oneEvent(s, writeKey, "DELETE", R);
    expect(gone.event.changes["webhook_verification.secret"]).toEqual({ before: AUDIT_REDACTED });
    expect(gone.event.changes["backend.backend_id"]).toEqual({ before: "bkd_two" });
  });

  test("a request that changed nothing writes no event: an author cannot be buried under empty ones", async () => {
    const edge = await call(s, writeKey, "POST", "/edges/https", {});
    const route = await call(s, writeKey, "POST", `/edges/https/${String(edge.json.id)}/routes`, {
      match_type: "path_prefix",
      match: "/noop",
      compression: {},
    });
    const R = `/edges/https/${String(edge.json.id)}/routes/${String(route.json.id)}`;
    const before = (await trail(s)).length;
    for (const [method, p, body] of [
      ["PATCH", R, {}],
      ["PATCH", R, { match: "/noop", description: "" }],
      ["PUT", `${R}/compression`, {}],
      ["PUT", `${R}/compression`, { enabled: true }],
    ] as const) {
      const res = await call(s, writeKey, method, p, body);
      expect([method, p, res.status]).toEqual([method, p, 200]);
    }
    expect((await trail(s)).length).toBe(before);
    // A real change still writes its one event.
    const { event } = await oneEvent(s, writeKey, "PATCH", R, { description: "now" });
    expect(event.changes).toEqual({ description: { before: "", after: "now" } });
  });

  test("no secret value anywhere: not in the answers, not in the database's bytes", async () => {
    const answers = (await trail(s)).map((e) => JSON.stringify(e)).join("\n");
    expect(answers).toContain(AUDIT_REDACTED);
    let stored: string;
    if (databaseUrl) {
      const pg = new Client({ connectionString: databaseUrl });
      await pg.connect();
      try {
        stored = JSON.stringify((await pg.query("SELECT * FROM audit_events")).rows);
      } finally {
        await pg.end();
      }
    } else stored = databaseBytes(dataDir);
    for (const secret of [WEBHOOK_SECRET, OIDC_SECRET, OAUTH_SECRET]) {
      expect(answers).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
  });

  test("a rejected request writes nothing: 400, 404, 409, 403", async () => {
    const edge = await call(s, writeKey, "POST", "/edges/https", {});
    const id = String(edge.json.id);
    await call(s, writeKey, "POST", `/edges/https/${id}/routes`, {
      match_type: "exact_path",
      match: "/taken",
    });
    const before = await trail(s);
    const rejected: Array<[number, string, string, unknown, string]> = [
      [400, "POST", "/edges/https", { description: 5 }, writeKey],
      [404, "DELETE", "/edges/https/edghts_missing", undefined, writeKey],
      [409, "POST", `/edges/https/${id}/routes`, { match_type: "exact_path", match: "/taken" }, writeKey],
      [403, "POST", "/edges/https", {}, readKey],
      [404, "DELETE", `/edges/https/${id}/routes/edghtsrt_missing/backend`, undefined, writeKey],
    ];
    for (const [status, method, p, body, key] of rejected) {
      expect((await call(s, key, method, p, body)).status).toBe(status);
    }
    expect(await trail(s)).toEqual(before);
  });

  test("paging (before_id, newest first) and filters (object_id, key, since)", async () => {
    const since = new Date().toISOString();
    const edge = await call(s, writeKey, "POST", "/edges/https", {});
    const id = String(edge.json.id);
    for (let i = 0; i < 5; i++) await call(s, BOOTSTRAP, "PATCH", "/none", {}); // 404s: nothing
    const route = await call(s, BOOTSTRAP, "POST", `/edges/https/${id}/routes`, {
      match_type: "exact_path",
      match: "/p",
    });
    const R = `/edges/https/${id}/routes/${String(route.json.id)}`;
    for (let i = 0; i < 4; i++) await call(s, writeKey, "PATCH", R, { description: `d${i}` });

    const all = await trail(s, readKey, `?since=${encodeURIComponent(since)}`);
    expect(all.map((e) => e.operation)).toEqual([
      "update_route",
      "update_route",
      "update_route",
      "update_route",
      "create_route",
      "create_https_edge",
    ]);
    const paged = await trail(s, readKey, `?since=${encodeURIComponent(since)}&limit=2`);
    expect(paged).toEqual(all);
    const first = await call(s, readKey, "GET", `/audit_events?since=${encodeURIComponent(since)}&limit=2`);
    expect(first.json.next_page_uri).toContain("since=");
    expect(first.json.next_page_uri).toContain(`before_id=${all[1]!.id}`);

    const ofRoute = await trail(s, readKey, `?object_id=${String(route.json.id)}`);
    expect(ofRoute.map((e) => e.operation)).toEqual([...Array(4).fill("update_route"), "create_route"]);
    const byBootstrap = await trail(s, readKey, `?key=bootstrap&since=${encodeURIComponent(since)}`);
    expect(byBootstrap.map((e) => e.operation)).toEqual(["create_route"]);
    expect(byBootstrap[0]!.key).toBe("bootstrap");
    const descriptions = ofRoute.slice(0, 4).map((e) => e.changes["description"]?.after);
    expect(descriptions).toEqual(["d3", "d2", "d1", "d0"]);

    for (const bad of ["?before_id=nope", "?limit=0", "?since=yesterday", "?object=x", "?key=a%20b"]) {
      expect((await call(s, readKey, "GET", `/audit_events${bad}`)).status).toBe(400);
    }
  });

  test("read scope lists the trail; no key is a 401; a revoked key's changes keep its name", async () => {
    expect((await raw(s.transport, "GET", "/audit_events")).status).toBe(401);
    expect((await call(s, readKey, "GET", "/audit_events?limit=1")).status).toBe(200);
    expect((await call(s, readKey, "POST", "/edges/tls", {})).status).toBe(403);
    await revokeKey(s.server.store, "dashboard");
    const revoked = (await trail(s, BOOTSTRAP, "?object_id=dashboard"))[0]!;
    expect(revoked.operation).toBe("revoke_api_key");
    expect(revoked.changes["revoked_at"]!.before).toBeNull();
  });

  test("the trail outlives a restart", async () => {
    const before = await trail(s);
    await s.server.close();
    s = await serve(dataDir, databaseUrl);
    expect(await trail(s)).toEqual(before);
  });
});

describe("two PostgreSQL replicas", () => {
  test("see one trail: the changes made through each, newest first", async () => {
    const url = await (await sharedCluster()).createDatabase();
    const dirs = [makeTempDir("audit-a"), makeTempDir("audit-b")];
    const a = await serve(dirs[0]!, url);
    const b = await serve(dirs[1]!, url);
    try {
      const edge = await call(a, BOOTSTRAP, "POST", "/edges/https", {});
      const id = String(edge.json.id);
      const viaB = await call(b, BOOTSTRAP, "POST", `/edges/https/${id}/routes`, {
        match_type: "exact_path",
        match: "/b",
      });
      await call(a, BOOTSTRAP, "DELETE", `/edges/https/${id}/routes/${String(viaB.json.id)}`);
      const fromA = await trail(a);
      const fromB = await trail(b);
      expect(fromA).toEqual(fromB);
      expect(fromA.map((e) => [e.operation, e.request_id])).toEqual([
        ["delete_route", expect.stringMatching(/^op_/)],
        ["create_route", viaB.headers.get(OPERATION_ID_HEADER)],
        ["create_https_edge", edge.headers.get(OPERATION_ID_HEADER)],
      ]);
    } finally {
      await a.server.close();
      await b.server.close();
      dirs.forEach(removeDir);
    }
  }, 120_000);
});

describe("a service without keys", () => {
  test("records changes with no key name", async () => {
    const dir = makeTempDir("audit-open");
    const s = await serve(dir, undefined, true);
    try {
      await raw(s.transport, "POST", "/edges/tls", { body: {} });
      const res = await raw(s.transport, "GET", "/audit_events");
      expect(res.json.audit_events[0]).toMatchObject({ operation: "create_tls_edge", key: null });
    } finally {
      await s.server.close();
      removeDir(dir);
    }
  });
});

describe("retention (edge-service serve --audit-retention)", () => {
  beforeAll(() => ensureBuilt(), 300_000);
  afterAll(() => killClis());

  test("the flag is checked: a number and a unit", () => {
    expect(parseRetention("90d")).toBe(90 * 86_400_000);
    expect(parseRetention("2s")).toBe(2000);
    for (const bad of ["90", "d", "0d", "1w", "-1d"]) expect(parseRetention(bad)).toBeUndefined();
  });

  test("events older than the retention are pruned in the background, and counted", async () => {
    const dir = makeTempDir("audit-retention");
    const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dir, "--audit-retention", "2s"]);
    try {
      const t = httpTransport({ baseUrl: cli.url, retries: 0, timeoutMs: 60_000 });
      for (let i = 0; i < 3; i++) expect((await raw(t, "POST", "/edges/tls", { body: {} })).status).toBe(201);
      expect((await raw(t, "GET", "/audit_events")).json.audit_events).toHaveLength(3);
      // Bounded wait: the 2 s retention and a round every second; a loaded machine gets 120 s.
      let left = 3;
      for (let i = 0; i < 240 && left > 0; i++) {
        await new Promise((r) => setTimeout(r, 500));
        left = (await raw(t, "GET", "/audit_events")).json.audit_events.length;
      }
      expect(left).toBe(0);
      const metrics = (await raw(t, "GET", "/metrics")).text;
      expect(metrics).toMatch(/^edge_service_audit_events_written_total 3$/m);
      expect(metrics).toMatch(/^edge_service_audit_events_pruned_total 3$/m);
      // The edges stay: only their events aged out.
      expect((await raw(t, "GET", "/edges/tls")).json.tls_edges).toHaveLength(3);
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exit;
      removeDir(dir);
    }
  }, 180_000);

  test("a bad --audit-retention is refused at start", async () => {
    const dir = makeTempDir("audit-bad");
    try {
      await expect(startCli(["--port", "0", "--data", dir, "--audit-retention", "soon"])).rejects.toThrow(
        /--audit-retention must be a number and a unit/,
      );
    } finally {
      removeDir(dir);
    }
  });
});

/**
 * The diff by its definition, leaf by leaf over both whole images (what diffChanges computes
 * without walking the subtrees both images share).
 */
function diffByDefinition(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  const leaves = (v: unknown, at: string[], out: Map<string, unknown>): Map<string, unknown> => {
    if (isObject(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v)) leaves(x, [...at, k], out);
    } else if (v !== undefined && at.length > 0) out.set(at.join("."), v);
    return out;
  };
  const was = leaves(before, [], new Map());
  const is = leaves(after, [], new Map());
  const changes: Record<string, unknown> = {};
  for (const key of new Set([...was.keys(), ...is.keys()])) {
    if (was.has(key) && is.has(key) && JSON.stringify(was.get(key)) === JSON.stringify(is.get(key))) continue;
    changes[key] = {
      ...(was.has(key) ? { before: was.get(key) } : {}),
      ...(is.has(key) ? { after: is.get(key) } : {}),
    };
  }
  return changes;
}

describe("the diff, bounded", () => {
  test("is the leaf-by-leaf diff, in its order, whatever the two images share", () => {
    const key = fc.constantFrom("a", "b", "c", "d");
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom(null, 0, 1, "x", "y", true),
        fc.array(fc.constantFrom(1, "x"), { maxLength: 2 }),
        fc.dictionary(key, tie("node"), { maxKeys: 4 }),
      ),
    })).node;
    const image = fc.dictionary(key, value, { maxKeys: 4 });
    fc.assert(
      fc.property(image, image, fc.boolean(), (before, other, shareSome) => {
        // A PATCH's "after" keeps the objects it does not change: share some of before's.
        const after = shareSome ? { ...before, ...other, a: before.a } : other;
        for (const [b, a] of [
          [before, after],
          [undefined, after],
          [before, undefined],
          [before, before],
        ] as const) {
          expect(JSON.stringify(diffChanges(b, a))).toBe(JSON.stringify(diffByDefinition(b, a)));
        }
      }),
      { numRuns: 2000 },
    );
  });

  test("secret leaves under a whole module removed are redacted", () => {
    const changes = diffChanges(
      { oauth: { provider: { github: { client_id: "c", client_secret: "s1" } } } },
      undefined,
      ROUTE_SECRET_PATHS,
    );
    expect(changes).toEqual({
      "oauth.provider.github.client_id": { before: "c" },
      "oauth.provider.github.client_secret": { before: AUDIT_REDACTED },
    });
  });

  test("an event larger than 16 KiB keeps every path, values left out first: not truncated", () => {
    const changes = diffChanges(undefined, {
      a: "x".repeat(10_000),
      b: "y".repeat(10_000),
      c: "small",
    });
    const bounded = boundChanges(changes);
    expect(bounded.truncated).toBe(false);
    expect(JSON.stringify(bounded.changes).length).toBeLessThanOrEqual(16 * 1024);
    expect(bounded.changes).toEqual({
      a: { after: "x".repeat(10_000) },
      b: { after: AUDIT_TRUNCATED },
      c: { after: "small" },
    });
    // The first changed path is never the one dropped for the others' values (issue 35: a
    // header set, then 99 large ones: every name stays in the event).
    const headers = Object.fromEntries([
      ["X-Target", "v2"],
      ...Array.from({ length: 99 }, (_, i) => [`X-Big-${i}`, "z".repeat(1000)]),
    ]);
    const big = boundChanges(diffChanges(undefined, { request_headers: { add: headers } }));
    expect(big.truncated).toBe(false);
    expect(Object.keys(big.changes)).toHaveLength(100);
    expect(big.changes["request_headers.add.X-Target"]).toEqual({ after: "v2" });
  });

  test("only when the paths alone do not fit are some left out, and the event says so", () => {
    const many = Object.fromEntries(
      Array.from({ length: 2000 }, (_, i) => [`header-${"h".repeat(20)}-${i}`, "v"]),
    );
    const bounded = boundChanges(diffChanges(undefined, { request_headers: { add: many } }));
    expect(bounded.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(bounded.changes))).toBeLessThanOrEqual(16 * 1024);
    expect(Object.keys(bounded.changes).length).toBeLessThan(2000);
  });
});
