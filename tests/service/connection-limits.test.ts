/**
 * The standalone server's connection limits (service/http/connection-limits.ts), on the compiled
 * `edge-service serve`, against clients that hold connections and say nothing:
 * - 2,000 TCP connections that each send part of a TLS ClientHello, then nothing: every one is
 *   closed within the handshake timeout (most at once: over --max-handshakes, the oldest
 *   handshake under way is closed), real HTTPS requests keep succeeding meanwhile, and the
 *   server's memory comes back to within 20 % of what it was;
 * - plain connections that send nothing, or half their headers: closed by the headers timeout;
 * - a client that stops reading in the middle of its answers: closed by the request timeout,
 *   while other clients are served.
 * The timeouts are given short here (the defaults are in docs/operating.md); waits are on
 * conditions, bounded (tests/support/machine). The bound the issue set, closed "within the
 * handshake timeout", is checked with the machine's slack added, as every bound of the suite.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as path from "node:path";
import { type Cli, ensureBuilt, killClis, loggedLines, ROOT, startCli } from "../support/edge-service";
import { scaled, TIME_SCALE, within } from "../support/machine";
import { makePki, type Pki } from "../support/pki";
import { makeTempDir, removeDir } from "./helpers";

const FLOOD = 2_000;
const HANDSHAKE_TIMEOUT_MS = 3_000;

let pki: Pki;
const dirs: string[] = [];
const sockets = new Set<net.Socket>();

beforeAll(() => {
  ensureBuilt();
  pki = makePki();
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  killClis();
  pki?.cleanup();
  for (const d of dirs) removeDir(d);
});

/** The server process's resident memory, in bytes (Linux). */
function rss(cli: Cli): number {
  const status = fs.readFileSync(`/proc/${cli.child.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
}

/** Polls `cond` until it holds; past the bound (scaled), fails saying `what`. */
async function until(what: () => string, boundMs: number, cond: () => boolean | Promise<boolean>) {
  const deadline = performance.now() + scaled(boundMs);
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`waited ${scaled(boundMs)} ms for ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request on a connection of its own (a new TLS handshake each over https); its status. */
function get(
  url: string,
  path: string,
  method = "GET",
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const send = u.protocol === "https:" ? https.request : http.request;
    const req = send(
      {
        host: u.hostname,
        port: u.port,
        path,
        method,
        agent: false,
        ca: pki.caPem,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        timeout: scaled(30_000),
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer")));
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * The first bytes of a ClientHello: a TLS handshake record header that announces 512 bytes, the
 * handshake header, and a few bytes of the hello: the server waits for the rest.
 */
const PARTIAL_HELLO = Buffer.from([
  0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 1, 2, 3, 4,
]);

/**
 * The malloc settings the Dockerfile runs the service with (its `ENV MALLOC_…` lines): what
 * docs/operating.md tells an operator to set, so this test measures what they get.
 */
const MALLOC_SETTINGS = Object.fromEntries(
  [...fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8").matchAll(/^ENV (MALLOC_\w+)=(\d+)$/gm)].map(
    ([, name, value]) => [name!, value!],
  ),
);

/** Opens a connection that sends `first` and then nothing; resolves when it is closed, with when. */
function silent(port: number, first: Buffer | string | undefined): { closed: Promise<number> } {
  // From when the connection is made, as the server's handshake timer counts: not from the
  // socket's creation, which waits behind this process's other 1,999 connects on a loaded machine.
  let opened = performance.now();
  const socket = net.connect(port, "127.0.0.1", () => {
    opened = performance.now();
    if (first !== undefined) socket.write(first);
  });
  sockets.add(socket);
  socket.on("error", () => undefined); // a reset: closed, as counted below
  const closed = new Promise<number>((resolve) =>
    socket.once("close", () => {
      sockets.delete(socket);
      resolve(performance.now() - opened);
    }),
  );
  socket.on("data", () => undefined);
  return { closed };
}

/** A handshake the server closed before it ended: nothing was sent, so a client repeats it. */
const HANDSHAKE_CLOSED = /before secure TLS connection was established|ECONNRESET|socket hang up/;

/**
 * Real requests, one after another, until `stop`, each repeated (up to 5 times) when its
 * connection was closed during its handshake, as the SDK's transport and HAProxy do (nothing
 * was sent); each one's final status, and how many repeats they took.
 */
async function steadyRequests(
  url: string,
  stop: () => boolean,
): Promise<{ outcomes: Array<number | string>; repeats: number }> {
  const outcomes: Array<number | string> = [];
  let repeats = 0;
  for (let n = 0; !stop(); n++) {
    let outcome: number | string = "not sent";
    for (let attempt = 0; attempt < 5; attempt++) {
      outcome = await (
        n % 2 === 0
          ? get(url, "/healthz")
          : get(
              url,
              "/edges/https",
              "POST",
              { description: `during ${n}` },
              { "Idempotency-Key": `during-${n}` },
            )
      ).catch((e: Error) => e.message);
      if (typeof outcome === "number" || !HANDSHAKE_CLOSED.test(outcome)) break;
      repeats++;
    }
    outcomes.push(outcome);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { outcomes, repeats };
}

describe("connection limits of edge-service serve", () => {
  it(
    `${FLOOD} half-open TLS handshakes: each closed within the handshake timeout, real requests served, memory back`,
    async () => {
      expect(Object.keys(MALLOC_SETTINGS)).toEqual(["MALLOC_TRIM_THRESHOLD_"]);
      const dir = makeTempDir("limits-tls");
      dirs.push(dir);
      const cli = await startCli(
        [
          "--port",
          "0",
          "--data",
          dir,
          "--tls-cert",
          pki.server.cert,
          "--tls-key",
          pki.server.key,
          "--handshake-timeout",
          `${HANDSHAKE_TIMEOUT_MS}ms`,
        ],
        MALLOC_SETTINGS,
      );
      const port = Number(new URL(cli.url).port);
      // Warm: what the first requests allocate once is not the flood's.
      for (let n = 0; n < 40; n++) expect(await get(cli.url, n % 2 ? "/healthz" : "/edges/https")).toBe(200);
      const before = rss(cli);

      let flooding = true;
      const served = steadyRequests(cli.url, () => !flooding);
      const flood = Array.from({ length: FLOOD }, () => silent(port, PARTIAL_HELLO));
      let peak = rss(cli);
      const peakTimer = setInterval(() => (peak = Math.max(peak, rss(cli))), 100);
      const lifetimes = await Promise.race([
        Promise.all(flood.map((f) => f.closed)),
        new Promise<never>((_, reject) =>
          setTimeout(
            () =>
              reject(new Error(`the flood's connections were not all closed within ${scaled(60_000)} ms`)),
            scaled(60_000),
          ),
        ),
      ]);
      flooding = false;
      clearInterval(peakTimer);
      const { outcomes, repeats } = await served;

      // Memory comes back once the flood is gone, with nothing asked of the server: V8's memory
      // reducer runs a full collection once the process is idle (requests every 50 ms kept it
      // from running for minutes on a loaded machine), and malloc, with the trim threshold the
      // Dockerfile sets, gives the freed pages back to the system.
      let now = rss(cli);
      await until(
        () => `RSS back within 20 % of ${before} bytes (now ${now})`,
        60_000,
        () => {
          now = rss(cli);
          return now <= before * 1.2;
        },
      );
      const longest = Math.max(...lifetimes);
      const closedAtOnce = lifetimes.filter((ms) => ms < HANDSHAKE_TIMEOUT_MS / 2).length;
      console.log(
        `slow-handshake flood: ${JSON.stringify({
          timeScale: TIME_SCALE,
          connections: FLOOD,
          closedAtOnce,
          longestMs: Math.round(longest),
          realRequests: outcomes.length,
          handshakesRepeated: repeats,
          rssBefore: before,
          rssPeak: peak,
          rssAfter: now,
        })}`,
      );
      // Each closed within the handshake timeout (with the machine's slack: one check interval, scaled).
      expect(longest).toBeLessThanOrEqual(HANDSHAKE_TIMEOUT_MS + scaled(1_000));
      // Over --max-handshakes (256), the oldest were closed as the new ones came.
      expect(closedAtOnce).toBeGreaterThan(FLOOD / 2);
      expect(outcomes.length).toBeGreaterThan(0);
      expect(outcomes.filter((s) => s !== 200 && s !== 201)).toEqual([]);
      expect(await loggedLines(cli, "connections closed by the server's limits")).toEqual([
        expect.stringMatching(/TLS handshakes still under way, the oldest, over --max-handshakes 256/),
      ]);
    },
    scaled(180_000),
  );

  it(
    "plain connections that send nothing, or half their headers, are closed by the headers timeout",
    async () => {
      const dir = makeTempDir("limits-plain");
      dirs.push(dir);
      const cli = await startCli(["--port", "0", "--data", dir, "--headers-timeout", "1500ms"]);
      const port = Number(new URL(cli.url).port);
      const idle = Array.from({ length: 100 }, () => silent(port, undefined));
      const half = Array.from({ length: 100 }, () => silent(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n"));
      const lifetimes = await Promise.all([...idle, ...half].map((c) => c.closed));
      expect(Math.max(...lifetimes)).toBeLessThanOrEqual(1_500 + scaled(1_000));
      expect(await get(cli.url, "/healthz")).toBe(200);
      expect(await loggedLines(cli, "that sent no request within --headers-timeout")).toHaveLength(1);
    },
    scaled(60_000),
  );

  it(
    "a client that stops reading mid-answer is closed by the request timeout; others are served",
    async () => {
      const dir = makeTempDir("limits-reader");
      dirs.push(dir);
      const cli = await startCli([
        "--port",
        "0",
        "--data",
        dir,
        "--request-timeout",
        "2s",
        "--headers-timeout",
        "1s",
      ]);
      const port = Number(new URL(cli.url).port);
      // Pipelined requests for the largest answer, never read: the kernel's buffers fill, then
      // the server's own, and an answer stays unsent.
      const before = rss(cli);
      const socket = net.connect(port, "127.0.0.1");
      sockets.add(socket);
      socket.pause();
      socket.on("error", () => undefined);
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      const request = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n";
      socket.write(request.repeat(400));
      const stalled = await loggedLines(cli, "whose answer was not taken within --request-timeout");
      expect(stalled).toHaveLength(1);
      // Closed by the server: read now, the connection ends after what the kernel held.
      let received = 0;
      socket.on("data", (d: Buffer) => (received += d.length));
      socket.resume();
      await within("the stalled connection to end", 10_000, closed);
      const answer = await new Promise<number>((resolve) => {
        let n = 0;
        http.get(`${cli.url}/openapi.json`, (res) =>
          res.on("data", (d: Buffer) => (n += d.length)).on("end", () => resolve(n)),
        );
      });
      // Not every answer was sent: the connection was cut mid-answer.
      expect(received).toBeLessThan(400 * answer);
      expect(await get(cli.url, "/openapi.json")).toBe(200);
      console.log(`a reader that stopped: ${JSON.stringify({ rssBefore: before, rssAfter: rss(cli) })}`);
    },
    scaled(60_000),
  );
});
