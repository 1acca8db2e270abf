/**
 * The deployment the README documents, tested whole, behind a real HAProxy started with the
 * shipped deploy/haproxy.cfg (only its addresses changed), and with deploy/haproxy-tls.cfg:
 * - its retry rules, request by request, against replicas made to fail on purpose (a connection
 *   closed without an answer, a 503, a 500): what is repeated, on which replica, and what not;
 * - a rolling restart: three `edge-service serve` replicas (the compiled CLI, real processes) on
 *   one PostgreSQL database; keep-alive workers send creates (with an Idempotency-Key, and
 *   without one), PATCHes, GETs and DELETEs through HAProxy for the whole test, while each
 *   replica in turn gets SIGTERM, exits and is started again, and HAProxy sees it healthy and
 *   sends it requests before the next one is stopped. No request may fail (each answer is the
 *   one expected, first time: the workers never retry; only the balancer may), none be lost
 *   (each acknowledged create is in the database, each PATCH's value is there), none be done
 *   twice (one row per create, counted in the database).
 * - the same rolling restart through deploy/haproxy-tls.cfg: the workers speak HTTPS to HAProxy
 *   (a private CA), HAProxy speaks HTTPS to the replicas (`serve --tls-cert --tls-key`) and
 *   checks them over TLS; then, under the same load, each replica's certificate files are
 *   replaced by a new certificate of the same CA, which each replica loads by itself: no request
 *   fails, and a new handshake with each replica gets the new certificate. The two files share
 *   their health and retry rules line for line (checked first, without HAProxy).
 * Every wait is on a condition, bounded (tests/support/machine) and saying what it waited for;
 * nothing asserts on time. Everything started is stopped, and every directory made is removed,
 * in afterAll, so a test that timed out leaves nothing behind either.
 */
import type { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as path from "node:path";
import * as tls from "node:tls";
import { Client } from "pg";
import { errorBodySchema } from "../../sdk/contract";
import { type Cli, ensureBuilt, killClis, startCli } from "../support/edge-service";
import {
  findHaproxy,
  fixedPort,
  type Haproxy,
  HAPROXY_CONFIG,
  HAPROXY_TLS_CONFIG,
  sharedSections,
  startHaproxy,
} from "../support/haproxy";
import { scaled, TIME_SCALE } from "../support/machine";
import { type Issued, makePki } from "../support/pki";
import { freePort, type PgCluster, sharedCluster } from "../support/postgres";
import { makeTempDir, removeDir } from "./helpers";

const REPLICAS = 3;
const WORKERS = 6;
/** Requests between two events of the test (a restart, the end): enough for every replica to see load. */
const REQUESTS_BETWEEN = 300;

const haproxyFound = findHaproxy();
if (haproxyFound.bin === undefined && haproxyFound.installable) {
  // Installable but not installed: a missing step, not a reason to skip.
  throw new Error(
    `HAProxy is not installed; run 'bash scripts/provision-haproxy.sh' (npm test's pretest and .ci/run do): ${haproxyFound.why}`,
  );
}
if (haproxyFound.bin === undefined) {
  console.warn(
    `SKIPPED tests/service/rolling-restart.test.ts: HAProxy cannot be installed on this machine, so the documented load-balancer configuration is NOT tested here.\n${haproxyFound.why}`,
  );
}
const describeWithHaproxy = haproxyFound.bin === undefined ? describe.skip : describe;

/** What afterAll stops and removes, whatever state the test was left in. */
const started = new Set<ChildProcess>();
const fakes: http.Server[] = [];
const dirs: string[] = [];
let stopWorkers = false;
/** Set by afterAll: a test still running (it timed out) starts nothing more. */
let ended = false;

afterAll(() => {
  ended = true;
  stopWorkers = true;
  killClis();
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const fake of fakes) fake.close().closeAllConnections();
  for (const dir of dirs) removeDir(dir);
});

/**
 * After each start in a test: when afterAll has already run (the test timed out and went on),
 * undoes what was just started and ends the test, so nothing outlives the file.
 */
function stillRunning(undo: () => void): void {
  if (!ended) return;
  undo();
  throw new Error("the test went on past its timeout: stopped");
}

/** `promise`, or an error saying `what` was awaited when `boundMs` passes first. */
function within<T>(what: () => string, boundMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`waited ${Math.round(boundMs / 1000)} s for ${what()}`)),
      boundMs,
    );
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** Waits until `check` returns a value other than undefined, polling; past `boundMs`, fails saying `what`. */
async function until<T>(
  what: () => string,
  boundMs: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = performance.now() + boundMs;
  for (;;) {
    stillRunning(() => undefined);
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`waited ${Math.round(boundMs / 1000)} s for ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until HAProxy's checks give its servers these states, in order ("UP, DOWN, DOWN"). */
async function untilStates(lb: Haproxy, expected: string, what: string): Promise<void> {
  const states = async () => (await lb.servers()).map((s) => s.status).join(", ");
  await until(
    () => `HAProxy to see ${what}`,
    scaled(60_000),
    async () => ((await states()) === expected ? true : undefined),
  ).catch(async (e: Error) => {
    throw new Error(`${e.message}: ${await states()}\n${lb.stderr()}`);
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
  reusedSocket: boolean;
}

/**
 * One request on the worker's own keep-alive connection (an agent of one socket; for an
 * `https:` base, an https.Agent trusting the test's CA): node:http never repeats a request by
 * itself, so a failure here is a failure the balancer let through.
 */
function request(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const send = base.protocol === "https:" ? https.request : http.request;
    const req = send(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        agent,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...opts.headers,
        },
        timeout: scaled(60_000),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => {
          let json: unknown;
          try {
            json = text === "" ? undefined : JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode!, headers: res.headers, json, reusedSocket: req.reusedSocket });
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${scaled(60_000)} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** Requests a replica logged between its SIGTERM and its end: those it finished while stopping. */
function answeredAfterSignal(stderr: string): number {
  const after = stderr.split(/SIGTERM received: stopping.*\n/)[1] ?? "";
  return after.split("\n").filter((line) => / (GET|POST|PATCH|PUT|DELETE) \/\S* \d{3} /.test(line)).length;
}

/** The test's own record of what it asked and what it was told. */
interface RouteMade {
  key: string;
  id: string;
  description: string;
  deleted: boolean;
}

/** The fingerprint of the certificate a new TLS handshake with 127.0.0.1:`port` gets. */
function servedCertificate(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fingerprint);
    });
    socket.setTimeout(scaled(30_000), () => socket.destroy(new Error(`no TLS handshake on ${port}`)));
    socket.once("error", reject);
  });
}

describe("deploy/haproxy-tls.cfg", () => {
  it("has deploy/haproxy.cfg's health and retry rules, line for line: only its TLS lines differ", () => {
    const plain = fs.readFileSync(HAPROXY_CONFIG, "utf8");
    const withTls = fs.readFileSync(HAPROXY_TLS_CONFIG, "utf8");
    expect(sharedSections(withTls).join("\n")).toEqual(sharedSections(plain).join("\n"));
    // What the comparison leaves out is only TLS: a rule changed in one file alone is caught.
    const changed = withTls.replace(/^(\s*)retries 3$/m, "$1retries 2");
    expect(changed).not.toEqual(withTls);
    expect(sharedSections(changed)).not.toEqual(sharedSections(plain));
  });
});

describeWithHaproxy("behind HAProxy (deploy/haproxy.cfg, haproxy-tls.cfg), replicas on PostgreSQL", () => {
  let cluster: PgCluster;

  beforeAll(async () => {
    ensureBuilt();
    cluster = await sharedCluster();
  }, scaled(120_000));

  it(
    "repeats what cannot be done twice, on another replica, and nothing else",
    async () => {
      // Three replicas that fail on purpose: a request's first attempt (whichever replica gets it)
      // fails as its X-Fault header says; each replica records the attempts it saw, and the
      // X-Request-Start each carried.
      const attempts = new Map<string, string[]>();
      const starts = new Map<string, Array<string | string[] | undefined>>();
      const fake = (name: string) =>
        http.createServer((req, res) => {
          req.resume();
          req.on("end", () => {
            if (req.url === "/readyz") return void res.end('{"status":"ok"}');
            const id = String(req.headers["x-case"]);
            const seen = [...(attempts.get(id) ?? []), name];
            attempts.set(id, seen);
            starts.set(id, [...(starts.get(id) ?? []), req.headers["x-request-start"]]);
            const fault =
              seen.length === 1 || req.headers["x-fault"] === "always 503" ? req.headers["x-fault"] : "";
            const answer = (status: number) => {
              res.writeHead(status, { "content-type": "application/json" });
              res.end(JSON.stringify({ status }));
            };
            if (fault === "closed")
              req.socket.destroy(); // the request read, no byte of answer
            else if (fault === "503" || fault === "always 503") answer(503);
            else if (fault === "500") answer(500);
            else answer(200);
          });
        });
      const ports = await Promise.all([0, 1, 2].map(() => freePort()));
      for (const [i, port] of ports.entries()) {
        const server = fake(`edge${i + 1}`);
        fakes.push(server);
        await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
        stillRunning(() => server.close());
      }
      const dir = makeTempDir("haproxy-rules");
      dirs.push(dir);
      stillRunning(() => removeDir(dir));
      const lb = await startHaproxy(
        haproxyFound.bin!,
        dir,
        { frontend: await freePort(), servers: ports },
        started,
      );
      stillRunning(() => lb.child.kill("SIGKILL"));
      await until(
        () => "HAProxy to see the three replicas UP",
        scaled(60_000),
        async () => ((await lb.servers()).every((s) => s.status === "UP") ? true : undefined),
      );
      const base = new URL(lb.url);

      const cases: Array<[method: string, key: boolean, fault: string]> = [];
      for (const fault of ["closed", "503"]) {
        for (const method of ["GET", "PUT", "PATCH", "DELETE"]) cases.push([method, false, fault]);
        cases.push(["POST", true, fault], ["POST", false, fault]);
      }
      cases.push(["GET", false, "500"], ["GET", false, "always 503"]);
      const outcomes = [];
      for (const [n, [method, key, fault]] of cases.entries()) {
        // A connection of its own: a failure is answered (502), not a keep-alive connection closed.
        const agent = new http.Agent({ keepAlive: false });
        // A start the client claims: HAProxy replaces it with its own.
        const headers: Record<string, string> = {
          "x-case": String(n),
          "x-fault": fault,
          "x-request-start": "t=1",
        };
        if (key) headers["idempotency-key"] = `case-${n}`;
        const sentAt = Date.now();
        const status = await request(agent, base, method, "/anything", { body: {}, headers }).then(
          (res) => res.status,
          (e: Error) => e.message,
        );
        const seen = attempts.get(String(n)) ?? [];
        // Every attempt carries the time HAProxy received the request, the same on each replica
        // (a replica's deadline counts from it: service/http/request-start.ts).
        const [start, ...others] = starts.get(String(n)) ?? [];
        const at = typeof start === "string" ? /^t=(\d{13})$/.exec(start)?.[1] : undefined;
        expect({ n, start, others: others.filter((o) => o !== start) }).toEqual({ n, start, others: [] });
        expect(Number(at)).toBeGreaterThanOrEqual(sentAt - 10);
        expect(Number(at)).toBeLessThanOrEqual(Date.now());
        outcomes.push({
          request: `${method}${key ? " with key" : ""}, first attempt ${fault}`,
          status,
          attempts: seen.length,
          elsewhere: new Set(seen).size === seen.length,
        });
      }
      const repeated = { status: 200, attempts: 2, elsewhere: true };
      const once = (status: number) => ({ status, attempts: 1, elsewhere: true });
      expect(outcomes).toEqual([
        ...["closed", "503"].flatMap((fault) => [
          ...["GET", "PUT", "PATCH", "DELETE", "POST with key"].map((m) => ({
            request: `${m}, first attempt ${fault}`,
            ...repeated,
          })),
          // Not repeated: the replica may have made it. The client is told, never a silent repeat.
          { request: `POST, first attempt ${fault}`, ...once(fault === "closed" ? 502 : 503) },
        ]),
        { request: "GET, first attempt 500", ...once(500) },
        // `retries 3`: four attempts, the last answer passed on; redispatched, so the three
        // replicas are all tried (one of them twice).
        { request: "GET, first attempt always 503", status: 503, attempts: 4, elsewhere: false },
      ]);
      lb.child.kill("SIGTERM");
      await within(() => "HAProxy to exit after SIGTERM", scaled(30_000), lb.exit);
    },
    scaled(60_000),
  );

  it(
    "its own 503, every replica down, says Retry-After in the service's error shape; a replica's own 503 passes as sent",
    async () => {
      // One replica that answers every request 503 in the service's shape (a storage fault: the
      // client may repeat even a create without a key), ready until told otherwise; the two
      // others listen nowhere, so HAProxy marks them down.
      let ready = true;
      const replica = http.createServer((req, res) => {
        req.resume();
        req.on("end", () => {
          if (req.url === "/readyz") {
            res.writeHead(ready ? 200 : 503);
            return void res.end();
          }
          res.writeHead(503, { "content-type": "application/json", "retry-after": "7" });
          res.end(
            JSON.stringify({ error_code: "ERR_EDGE_507", status_code: 503, msg: "its own", details: {} }),
          );
        });
      });
      fakes.push(replica);
      const ports = await Promise.all([0, 1, 2].map(() => freePort()));
      await new Promise<void>((resolve) => replica.listen(ports[0], "127.0.0.1", resolve));
      stillRunning(() => replica.close());
      const dir = makeTempDir("haproxy-503");
      dirs.push(dir);
      stillRunning(() => removeDir(dir));
      const lb = await startHaproxy(
        haproxyFound.bin!,
        dir,
        { frontend: await freePort(), servers: ports },
        started,
      );
      stillRunning(() => lb.child.kill("SIGKILL"));
      // HAProxy starts with every server UP: wait for its checks to have marked the two down.
      await untilStates(lb, "UP, DOWN, DOWN", "edge1 UP, edge2 and edge3 DOWN");
      const base = new URL(lb.url);
      const agent = new http.Agent({ keepAlive: false });
      const passed = await request(agent, base, "GET", "/edges/https");
      expect({ status: passed.status, retryAfter: passed.headers["retry-after"], body: passed.json }).toEqual(
        {
          status: 503,
          retryAfter: "7",
          body: { error_code: "ERR_EDGE_507", status_code: 503, msg: "its own", details: {} },
        },
      );

      ready = false;
      await untilStates(lb, "DOWN, DOWN, DOWN", "every replica DOWN");
      const own = await request(agent, base, "POST", "/edges/https", { body: {} });
      expect({
        status: own.status,
        retryAfter: own.headers["retry-after"],
        contentType: own.headers["content-type"],
        body: own.json,
      }).toEqual({
        status: 503,
        retryAfter: "2",
        contentType: "application/json",
        body: {
          error_code: "ERR_EDGE_503",
          status_code: 503,
          msg: expect.stringContaining("no replica of the edge service is available"),
          details: {},
        },
      });
      // The client's own parse of an error answer takes it (the service's error shape).
      expect(errorBodySchema.safeParse(own.json).success).toBe(true);
      lb.child.kill("SIGTERM");
      await within(() => "HAProxy to exit after SIGTERM", scaled(30_000), lb.exit);
    },
    scaled(120_000),
  );

  it(
    "haproxy-tls.cfg sends to, and counts healthy, only a replica whose certificate its CA signed for edge-replica.internal",
    async () => {
      // Three replicas over TLS, all ready: one with the certificate the file asks for, one of
      // the same CA without the name, one with the name from another CA.
      const pki = makePki();
      dirs.push(pki.dir);
      const name = ["127.0.0.1", "edge-replica.internal"];
      const certs = [
        pki.issue("right", { hosts: name }),
        pki.issue("unnamed", { hosts: ["127.0.0.1", "localhost"] }),
        pki.issue("foreign", { hosts: name, foreign: true }),
      ];
      const ports = await Promise.all(certs.map(() => freePort()));
      for (const [i, issued] of certs.entries()) {
        const replica = https.createServer({ cert: issued.certPem, key: issued.keyPem }, (req, res) => {
          req.resume();
          res.end(JSON.stringify({ replica: i + 1 }));
        });
        fakes.push(replica);
        await new Promise<void>((resolve) => replica.listen(ports[i], "127.0.0.1", resolve));
        stillRunning(() => replica.close());
      }
      const dir = makeTempDir("haproxy-tls-verify");
      dirs.push(dir);
      stillRunning(() => removeDir(dir));
      const frontendPem = path.join(dir, "edge-api.pem");
      fs.writeFileSync(frontendPem, pki.server.certPem + pki.server.keyPem, { mode: 0o600 });
      const lb = await startHaproxy(
        haproxyFound.bin!,
        dir,
        { frontend: await freePort(), servers: ports },
        started,
        { frontendPem, replicasCa: pki.ca },
      );
      stillRunning(() => lb.child.kill("SIGKILL"));
      await untilStates(lb, "UP, DOWN, DOWN", "edge1 UP, edge2 and edge3 DOWN");
      // Why, in HAProxy's words: the name, then the chain.
      expect(lb.stderr()).toMatch(/edge2 is DOWN.*SSL certificate different from the configured one/);
      expect(lb.stderr()).toMatch(/edge3 is DOWN.*Layer6/);
      const agent = new https.Agent({ keepAlive: false, ca: pki.caPem });
      const answers = [];
      for (let n = 0; n < 3; n++) answers.push((await request(agent, new URL(lb.url), "GET", "/")).json);
      expect(answers).toEqual(Array(3).fill({ replica: 1 }));
      lb.child.kill("SIGTERM");
      await within(() => "HAProxy to exit after SIGTERM", scaled(30_000), lb.exit);
    },
    scaled(120_000),
  );

  it.each([
    { config: "deploy/haproxy.cfg", overTls: false },
    { config: "deploy/haproxy-tls.cfg, with a certificate reload under the load", overTls: true },
  ])(
    "a rolling restart by SIGTERM under keep-alive load ($config): no request failed, none lost, none made twice",
    async ({ overTls }) => {
      stillRunning(() => undefined);
      stopWorkers = false;
      const bin = haproxyFound.bin!;
      const database = await cluster.createDatabase();
      const dir = makeTempDir("haproxy");
      dirs.push(dir);
      stillRunning(() => removeDir(dir));
      // Outside the ephemeral range: each replica is started again on its port (see fixedPort).
      const ports = await Promise.all(Array.from({ length: REPLICAS }, () => fixedPort()));
      const serverName = (i: number) => `edge${i + 1}`;

      // Over TLS: a private CA; HAProxy's certificate for the clients; each replica's own, with
      // the name HAProxy verifies (edge-replica.internal), and the one that replaces it later,
      // made now so that the load does not wait on openssl.
      const pki = overTls ? makePki() : undefined;
      if (pki) dirs.push(pki.dir);
      const replicaCert = (i: number, generation: number) =>
        pki!.issue(`${serverName(i)}-${generation}`, {
          hosts: ["127.0.0.1", "localhost", "edge-replica.internal"],
        });
      const firstCerts = pki ? ports.map((_, i) => replicaCert(i, 1)) : [];
      const nextCerts = pki ? ports.map((_, i) => replicaCert(i, 2)) : [];
      const certFiles = ports.map((_, i) => ({
        cert: path.join(dir, `${serverName(i)}.crt`),
        key: path.join(dir, `${serverName(i)}.key`),
      }));
      /** Puts `issued` in replica i's files as a rotation does: written beside, renamed into place. */
      const install = (i: number, issued: Issued) => {
        for (const [file, pem] of [
          [certFiles[i]!.key, issued.keyPem],
          [certFiles[i]!.cert, issued.certPem],
        ] as const) {
          fs.writeFileSync(`${file}.new`, pem, { mode: 0o600 });
          fs.renameSync(`${file}.new`, file);
        }
      };
      firstCerts.forEach((issued, i) => install(i, issued));
      const frontendPem = path.join(dir, "edge-api.pem");
      if (pki) fs.writeFileSync(frontendPem, pki.server.certPem + pki.server.keyPem, { mode: 0o600 });

      const args = (i: number) => [
        "--port",
        String(ports[i]),
        "--database",
        database,
        "--pool-size",
        "4",
        ...(overTls ? ["--tls-cert", certFiles[i]!.cert, "--tls-key", certFiles[i]!.key] : []),
      ];
      // Started together: the schema migration runs once, under its advisory lock.
      const replicas: Cli[] = await Promise.all(ports.map((_, i) => startCli(args(i))));
      stillRunning(() => replicas.forEach((r) => r.child.kill("SIGKILL")));
      const lb: Haproxy = await startHaproxy(
        bin,
        dir,
        { frontend: await freePort(), servers: ports },
        started,
        pki && { frontendPem, replicasCa: pki.ca },
      );
      stillRunning(() => lb.child.kill("SIGKILL"));
      const base = new URL(lb.url);
      expect(base.protocol).toBe(overTls ? "https:" : "http:");
      const keepAliveAgent = () =>
        pki
          ? new https.Agent({ keepAlive: true, maxSockets: 1, ca: pki.caPem })
          : new http.Agent({ keepAlive: true, maxSockets: 1 });

      const stat = async (i: number) => (await lb.servers()).find((s) => s.name === serverName(i));
      const describeServers = async () =>
        (await lb.servers()).map((s) => `${s.name} ${s.status} (${s.sessions} sessions)`).join(", ");
      /** HAProxy sees replica i healthy (its checks of /readyz passed `rise` times). */
      const untilUp = (i: number) =>
        until(
          () => `HAProxy to see ${serverName(i)} UP`,
          scaled(60_000),
          async () => ((await stat(i))?.status === "UP" ? true : undefined),
        ).catch(async (e: Error) => {
          throw new Error(`${e.message}: ${await describeServers()}\nits stderr:\n${replicas[i]!.stderr()}`);
        });
      for (let i = 0; i < REPLICAS; i++) await untilUp(i);

      // ---- the load: each worker on its own keep-alive connection, on its own objects
      const agents: http.Agent[] = [];
      const failures: string[] = [];
      const counts = { requests: 0, reused: 0, replayed: 0, byKind: {} as Record<string, number> };
      let waiters: Array<() => void> = [];
      const answered = () => {
        counts.requests++;
        const ready = waiters;
        waiters = [];
        for (const w of ready) w();
      };
      /** Resolves once `n` more requests have been answered (or failed). */
      const requestsMore = (n: number) => {
        const target = counts.requests + n;
        return new Promise<void>((resolve) => {
          const look = () => (counts.requests >= target || stopWorkers ? resolve() : waiters.push(look));
          look();
        });
      };
      /** The phase of the test a request was sent in, for failures' stories; how many in each. */
      let phase = "warm-up";
      const sentIn = new Map<string, number>();
      const expectAnswer = async (
        agent: http.Agent,
        kind: string,
        method: string,
        path: string,
        expected: number,
        opts: { body?: unknown; headers?: Record<string, string> } = {},
      ): Promise<Answer | undefined> => {
        const sentDuring = phase;
        sentIn.set(phase, (sentIn.get(phase) ?? 0) + 1);
        counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
        try {
          const res = await request(agent, base, method, path, opts);
          if (res.reusedSocket) counts.reused++;
          if (res.headers["idempotent-replayed"] === "true") counts.replayed++;
          if (res.status !== expected) {
            failures.push(
              `${kind} ${method} ${path} (sent in ${sentDuring}): ${res.status}, expected ${expected}: ${JSON.stringify(res.json)?.slice(0, 300)}`,
            );
            return undefined;
          }
          return res;
        } catch (e) {
          failures.push(`${kind} ${method} ${path} (sent in ${sentDuring}): ${(e as Error).message}`);
          return undefined;
        } finally {
          answered();
        }
      };

      const edgeAgent = keepAliveAgent();
      agents.push(edgeAgent);
      const edge = await expectAnswer(edgeAgent, "setup", "POST", "/edges/https", 201, {
        body: { description: "rolling restart" },
        headers: { "Idempotency-Key": "rolling-edge" },
      });
      expect(failures).toEqual([]);
      const edgeId = edge!.json.id as string;
      const routesPath = `/edges/https/${edgeId}/routes`;

      const routes: RouteMade[] = [];
      const keyedEdges = new Map<string, string>(); // description (= its key) → id
      const plainEdges = new Map<string, string>(); // description → id, creates without a key
      const worker = async (w: number) => {
        const agent = keepAliveAgent();
        agents.push(agent);
        const mine: RouteMade[] = [];
        for (let n = 0; !stopWorkers; n++) {
          const key = `route-${w}-${n}`;
          const made = await expectAnswer(agent, "create route (key)", "POST", routesPath, 201, {
            body: { match_type: "path_prefix", match: `/w${w}/${n}`, description: key },
            headers: { "Idempotency-Key": key },
          });
          if (made) {
            const route: RouteMade = { key, id: made.json.id, description: key, deleted: false };
            mine.push(route);
            routes.push(route);
            const path = `${routesPath}/${route.id}`;
            const description = `${key} patched`;
            if (await expectAnswer(agent, "patch route", "PATCH", path, 200, { body: { description } })) {
              route.description = description;
            }
            const got = await expectAnswer(agent, "get route", "GET", path, 200);
            if (got && got.json.description !== route.description) {
              failures.push(
                `GET ${path} (in ${phase}): description ${got.json.description}, expected ${route.description}`,
              );
            }
          }
          // Every third step deletes the route of the step before, then finds it gone.
          const older = mine[mine.length - 2];
          if (n % 3 === 2 && older && !older.deleted) {
            const path = `${routesPath}/${older.id}`;
            if (await expectAnswer(agent, "delete route", "DELETE", path, 204)) {
              older.deleted = true;
              await expectAnswer(agent, "get deleted route", "GET", path, 404);
            }
          }
          if (n % 4 === 0) {
            const description = `keyed-${w}-${n}`;
            const res = await expectAnswer(agent, "create edge (key)", "POST", "/edges/https", 201, {
              body: { description },
              headers: { "Idempotency-Key": description },
            });
            if (res) keyedEdges.set(description, res.json.id);
          }
          if (n % 4 === 2) {
            // No key: HAProxy may repeat it only when nothing was sent (conn-failure). A TLS
            // edge, so that HAProxy's log tells these creates apart.
            const description = `plain-${w}-${n}`;
            const res = await expectAnswer(agent, "create TLS edge (no key)", "POST", "/edges/tls", 201, {
              body: { description },
            });
            if (res) plainEdges.set(description, res.json.id);
          }
        }
      };
      const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));

      // ---- the rolling restart: each replica in turn, the next only once this one serves again
      const restarts: string[] = [];
      let afterSignal = 0;
      try {
        await requestsMore(REQUESTS_BETWEEN);
        for (let i = 0; i < REPLICAS; i++) {
          const served = (await stat(i))!.sessions;
          phase = `the stop of ${serverName(i)}`;
          replicas[i]!.child.kill("SIGTERM");
          // Its grace is 10 s (the default): the stop ends well within this, or says why not.
          const exit = await within(
            () => `${serverName(i)} to exit after SIGTERM; its stderr:\n${replicas[i]!.stderr()}`,
            scaled(60_000),
            replicas[i]!.exit,
          );
          const stopLine = /stopped: .*/.exec(replicas[i]!.stderr())?.[0];
          afterSignal += answeredAfterSignal(replicas[i]!.stderr());
          expect({ replica: serverName(i), exit, stopLine }).toEqual({
            replica: serverName(i),
            exit: { code: 0, signal: null },
            stopLine: expect.stringMatching(/^stopped: 0 connections cut \(every request finished in time\)/),
          });
          phase = `the restart of ${serverName(i)}`;
          const again = await startCli(args(i));
          stillRunning(() => again.child.kill("SIGKILL"));
          replicas[i] = again;
          await untilUp(i);
          phase = `after the restart of ${serverName(i)}`;
          // It takes requests again before the next replica stops.
          const upAt = (await stat(i))!.sessions;
          await until(
            () => `${serverName(i)} to take requests after its restart`,
            scaled(60_000),
            async () => (((await stat(i))?.sessions ?? 0) > upAt ? true : undefined),
          );
          await requestsMore(REQUESTS_BETWEEN);
          restarts.push(`${serverName(i)}: served ${served} sessions, stopped (exit 0), UP again, serving`);
        }
        if (pki) {
          // ---- the certificate reload: every replica's files replaced under the load, no signal
          phase = "the certificate reload";
          const served = () => Promise.all(ports.map((port) => servedCertificate(port, pki.caPem)));
          expect(await served()).toEqual(firstCerts.map((c) => c.fingerprint));
          nextCerts.forEach((issued, i) => install(i, issued));
          const expected = nextCerts.map((c) => c.fingerprint).join(", ");
          let seen = "";
          await until(
            () => `every replica to serve its new certificate (${expected}); served: ${seen}`,
            scaled(60_000),
            async () => {
              seen = (await served()).join(", ");
              return seen === expected ? true : undefined;
            },
          );
          phase = "after the certificate reload";
          await requestsMore(REQUESTS_BETWEEN);
          // Each loaded its files itself, once; HAProxy's checks (new handshakes, each second)
          // verify the new certificates, so every replica is still UP.
          for (const [i, r] of replicas.entries()) {
            expect({ replica: serverName(i), reloads: r.stderr().match(/TLS: reloaded \(.*/g) }).toEqual({
              replica: serverName(i),
              reloads: [expect.stringMatching(/^TLS: reloaded \(a file changed\): new connections get /)],
            });
          }
          expect(await describeServers()).not.toMatch(/DOWN|MAINT/);
        }
      } finally {
        stopWorkers = true;
        await Promise.all(workers);
        for (const agent of agents) agent.destroy();
      }

      // ---- what the database holds
      const db = new Client({ connectionString: database });
      await db.connect();
      let rows: Array<{ id: string; create_key: string | null; description: string }>;
      let edgeRows: Array<{ id: string; description: string; create_key: string | null }>;
      try {
        rows = (
          await db.query(
            "SELECT id, create_key, convert_from(description, 'UTF8') AS description FROM routes WHERE edge_id = $1",
            [edgeId],
          )
        ).rows;
        edgeRows = (
          await db.query("SELECT id, create_key, convert_from(description, 'UTF8') AS description FROM edges")
        ).rows;
      } finally {
        await db.end();
      }
      const byId = new Map(rows.map((r) => [r.id, r]));
      const lost = routes
        .filter((r) => !r.deleted)
        .filter((r) => byId.get(r.id)?.create_key !== r.key || byId.get(r.id)?.description !== r.description)
        .map((r) => `${r.key} (${r.id}): ${JSON.stringify(byId.get(r.id) ?? "absent")}`);
      const notDeleted = routes.filter((r) => r.deleted && byId.has(r.id)).map((r) => r.key);
      const liveIds = new Set(routes.filter((r) => !r.deleted).map((r) => r.id));
      const unexpected = rows.filter((r) => !liveIds.has(r.id)).map((r) => `${r.id} ${r.create_key}`);
      const perDescription = new Map<string, number>();
      for (const e of edgeRows)
        perDescription.set(e.description, (perDescription.get(e.description) ?? 0) + 1);
      const madeTwice = [...perDescription].filter(([, n]) => n > 1).map(([d, n]) => `${d} × ${n}`);
      const edgesLost = [...keyedEdges, ...plainEdges]
        .filter(([description, id]) => !edgeRows.some((e) => e.id === id && e.description === description))
        .map(([description]) => description);

      const logged = lb.requests();
      const retried = logged.filter((l) => l.retries > 0);
      const whileDown = ports.map((_, i) => sentIn.get(`the restart of ${serverName(i)}`) ?? 0);
      const figures = {
        config: overTls ? "deploy/haproxy-tls.cfg" : "deploy/haproxy.cfg",
        timeScale: TIME_SCALE,
        requests: counts.requests,
        sentWhileEachReplicaWasDown: whileDown,
        ...(overTls && { sentDuringTheCertificateReload: sentIn.get("the certificate reload") ?? 0 }),
        byKind: counts.byKind,
        onReusedConnections: counts.reused,
        restarts: restarts.length,
        answeredByStoppingReplicas: afterSignal,
        haproxyLogged: logged.length,
        haproxyRetried: retried.length,
        haproxyRetriedOnAnotherReplica: retried.filter((l) => l.redispatched).length,
        haproxyRetriedCreatesWithoutKey: retried.filter((l) => l.method === "POST" && l.path === "/edges/tls")
          .length,
        createsReplayed: counts.replayed,
        routeRows: rows.length,
        edgeRows: edgeRows.length,
      };
      console.log(
        `rolling restart through HAProxy${overTls ? " over TLS" : ""}: ${JSON.stringify(figures, null, 1)}\n${restarts.join("\n")}`,
      );

      expect({ failures, lost, notDeleted, unexpected, madeTwice, edgesLost }).toEqual({
        failures: [],
        lost: [],
        notDeleted: [],
        unexpected: [],
        madeTwice: [],
        edgesLost: [],
      });
      // The test's own premises: the load was keep-alive, and requests were sent while each
      // replica was down (from its exit until HAProxy saw it UP again).
      expect(restarts).toHaveLength(REPLICAS);
      expect(counts.reused).toBeGreaterThan(counts.requests / 2);
      expect(whileDown.filter((n) => n === 0)).toEqual([]);
      if (overTls) expect(sentIn.get("the certificate reload") ?? 0).toBeGreaterThan(0);
      // Every live route and every edge answered is one row; nothing else was made.
      expect(rows).toHaveLength(liveIds.size);
      expect(edgeRows).toHaveLength(1 + keyedEdges.size + plainEdges.size);

      lb.child.kill("SIGTERM");
      await within(() => "HAProxy to exit after SIGTERM", scaled(30_000), lb.exit);
      for (const r of replicas) r.child.kill("SIGTERM");
      const exits = within(
        () => "the replicas to exit after SIGTERM",
        scaled(60_000),
        Promise.all(replicas.map((r) => r.exit)),
      );
      expect(await exits).toEqual(Array(REPLICAS).fill({ code: 0, signal: null }));
    },
    scaled(180_000),
  );
});
