/**
 * The HTTP transport's retry rules, against a tiny local node:http fake that answers what each
 * test scripts: Retry-After honoured on 429, 503 retried for GET and never for POST, a POST
 * retried only when it provably never reached the server (connection refused), timeouts.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { EdgeApiError, EdgeClient } from "../../sdk/client";
import { httpTransport, type RetryNotice } from "../../sdk/transport";

type Reply = { status: number; headers?: Record<string, string>; body?: string } | "hang" | "reset";

interface FakeServer {
  url: string;
  port: number;
  /** Method and path of every request that reached the fake. */
  seen: string[];
  close(): Promise<void>;
}

/** Answers the scripted replies in order, then 200 `{}` forever. */
async function startFakeServer(replies: Reply[], port = 0): Promise<FakeServer> {
  const seen: string[] = [];
  const script = [...replies];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push(`${req.method} ${req.url}`);
      const reply = script.shift() ?? { status: 200, body: "{}" };
      if (reply === "hang") return; // never answers
      if (reply === "reset") {
        req.socket.destroy();
        return;
      }
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(reply.body ?? "{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const json = (method: string, url: string, body?: unknown) =>
  new Request(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("httpTransport retries", () => {
  const fakes: FakeServer[] = [];
  const fake = async (replies: Reply[], port?: number) => {
    const s = await startFakeServer(replies, port);
    fakes.push(s);
    return s;
  };
  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(fakes.splice(0).map((s) => s.close()));
  });

  it("honours Retry-After on a 429 (GET): waits, then retries once and succeeds", async () => {
    const s = await fake([
      { status: 429, headers: { "retry-after": "1" }, body: '{"error_code":"ERR_EDGE_429"}' },
    ]);
    const t = httpTransport({ baseUrl: s.url, retries: 3, backoffMs: 1 });
    const started = Date.now();
    const res = await t.send(json("GET", `${s.url}/edges/https`));
    const waited = Date.now() - started;
    expect(res.status).toBe(200);
    expect(s.seen).toEqual(["GET /edges/https", "GET /edges/https"]);
    // With backoffMs 1 only Retry-After can explain a wait of about a second (a lower bound only).
    expect(waited).toBeGreaterThanOrEqual(950);
  });

  it("retries a POST refused with 429 (refused before any handler ran)", async () => {
    const s = await fake([{ status: 429, headers: { "retry-after": "0" } }]);
    const t = httpTransport({ baseUrl: s.url, retries: 2, backoffMs: 1 });
    const res = await t.send(json("POST", `${s.url}/edges/https`, {}));
    expect(res.status).toBe(200);
    expect(s.seen).toEqual(["POST /edges/https", "POST /edges/https"]);
  });

  it("caps a long Retry-After at maxDelayMs", async () => {
    const s = await fake([{ status: 429, headers: { "retry-after": "3600" } }]);
    const t = httpTransport({ baseUrl: s.url, retries: 1, backoffMs: 1, maxDelayMs: 20 });
    const res = await t.send(json("GET", `${s.url}/x`));
    expect(res.status).toBe(200);
    expect(s.seen.length).toBe(2);
  });

  it("retries 503 for GET (then succeeds), and returns the last 503 when retries run out", async () => {
    const s = await fake([{ status: 503 }, { status: 503 }]);
    const t = httpTransport({ baseUrl: s.url, retries: 5, backoffMs: 1 });
    expect((await t.send(json("GET", `${s.url}/a`))).status).toBe(200);
    expect(s.seen).toEqual(["GET /a", "GET /a", "GET /a"]);

    const s2 = await fake([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }]);
    const t2 = httpTransport({ baseUrl: s2.url, retries: 2, backoffMs: 1 });
    expect((await t2.send(json("GET", `${s2.url}/b`))).status).toBe(503);
    expect(s2.seen.length).toBe(3);
  });

  it("never retries a POST that got a 503 (it may have been acted on)", async () => {
    const busy = {
      status: 503,
      body: '{"error_code":"ERR_BUSY","status_code":503,"msg":"busy","details":{}}',
    };
    const s = await fake([busy, busy]);
    const t = httpTransport({ baseUrl: s.url, retries: 5, backoffMs: 1 });
    const res = await t.send(json("POST", `${s.url}/edges/https`, {}));
    expect(res.status).toBe(503);
    expect(s.seen).toEqual(["POST /edges/https"]);
    // Through the client: an EdgeApiError 503, still one attempt.
    const client = new EdgeClient(t);
    const err = await client.createHttpsEdge().catch((e) => e);
    expect(err).toBeInstanceOf(EdgeApiError);
    expect(err.status).toBe(503);
    expect(err.errorCode).toBe("ERR_BUSY");
    expect(s.seen).toEqual(["POST /edges/https", "POST /edges/https"]);
  });

  it("retries a POST to a closed port (ECONNREFUSED: it provably never reached the server)", async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const realFetch = globalThis.fetch;
    let attempts = 0;
    jest.spyOn(globalThis, "fetch").mockImplementation(async (...args) => {
      attempts++;
      return realFetch(...args);
    });
    const t = httpTransport({ baseUrl: url, retries: 3, backoffMs: 1 });
    const err = await t.send(json("POST", `${url}/edges/https`, {})).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain("ECONNREFUSED");
    expect(attempts).toBe(4);
  });

  it("a POST refused once, then accepted when the service comes up, reaches the service exactly once", async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const realFetch = globalThis.fetch;
    let attempts = 0;
    jest.spyOn(globalThis, "fetch").mockImplementation(async (...args) => {
      attempts++;
      try {
        return await realFetch(...args);
      } catch (e) {
        if (attempts === 1) await fake([{ status: 201, body: '{"ok":true}' }], port);
        throw e;
      }
    });
    const t = httpTransport({ baseUrl: url, retries: 3, backoffMs: 1 });
    const res = await t.send(json("POST", `${url}/edges/https`, {}));
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ ok: true });
    expect(attempts).toBe(2);
    expect(fakes[0]!.seen).toEqual(["POST /edges/https"]);
  });

  it("a connection reset: retried for GET, not for POST (the server may have acted)", async () => {
    const s = await fake(["reset"]);
    const t = httpTransport({ baseUrl: s.url, retries: 3, backoffMs: 1 });
    expect((await t.send(json("GET", `${s.url}/r`))).status).toBe(200);
    expect(s.seen).toEqual(["GET /r", "GET /r"]);

    const s2 = await fake(["reset"]);
    const t2 = httpTransport({ baseUrl: s2.url, retries: 3, backoffMs: 1 });
    const err = await t2.send(json("POST", `${s2.url}/p`, {})).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/cannot reach the edge service/);
    expect(s2.seen).toEqual(["POST /p"]);
  });

  it("a timeout: retried for GET, not for POST, and reported as a timeout", async () => {
    const s = await fake(["hang"]);
    const t = httpTransport({ baseUrl: s.url, retries: 3, backoffMs: 1, timeoutMs: 500 });
    const res = await t.send(json("GET", `${s.url}/slow`));
    expect(res.status).toBe(200);
    // At least one retry after the hung attempt (more only if this machine is very slow).
    expect(s.seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(s.seen)).toEqual(new Set(["GET /slow"]));

    const s2 = await fake(["hang"]);
    const t2 = httpTransport({ baseUrl: s2.url, retries: 3, backoffMs: 1, timeoutMs: 500 });
    const err = await t2.send(json("POST", `${s2.url}/slow`, {})).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe(
      `cannot reach the edge service at ${s2.url} (TimeoutError): the service did not answer in time`,
    );
    expect(s2.seen).toEqual(["POST /slow"]);
  });

  it("a service that accepts and never answers: the whole call ends at its deadline, each retry told first", async () => {
    const s = await fake(Array.from({ length: 50 }, () => "hang" as const));
    const t = httpTransport({ baseUrl: s.url, backoffMs: 1, timeoutMs: 400, deadlineMs: 1500 });
    const notices: RetryNotice[] = [];
    const err = await t
      .send(json("GET", `${s.url}/edges/https`), { onRetry: (n) => notices.push(n) })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(
      new RegExp(
        `^cannot reach the edge service at ${s.url} \\(TimeoutError\\) after ${s.seen.length} attempts within the call's deadline of 1.5 s \\(last: no answer within [0-9.]+ s\\): the service did not answer in time$`,
      ),
    );
    // Every attempt but the last was told before it was retried, in order, each within the deadline.
    expect(s.seen.length).toBeGreaterThanOrEqual(2);
    expect(notices.map((n) => n.attempt)).toEqual(Array.from({ length: s.seen.length - 1 }, (_, i) => i + 1));
    for (const n of notices) {
      expect(n).toMatchObject({
        operation: "GET /edges/https",
        reason: expect.stringMatching(/^no answer within /),
      });
      expect(n.remainingMs).toBeGreaterThan(0);
      expect(n.remainingMs).toBeLessThanOrEqual(1500);
    }
  });

  it("a POST with an Idempotency-Key is retried after a timeout, within the deadline", async () => {
    const s = await fake(["hang"]);
    const t = httpTransport({ baseUrl: s.url, backoffMs: 1, timeoutMs: 300, deadlineMs: 10_000 });
    const notices: RetryNotice[] = [];
    const req = new Request(`${s.url}/edges/https`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "k" },
      body: "{}",
    });
    expect((await t.send(req, { onRetry: (n) => notices.push(n) })).status).toBe(200);
    expect(s.seen).toEqual(["POST /edges/https", "POST /edges/https"]);
    expect(notices).toHaveLength(1);
  });

  it("sends the bearer key and the body unchanged on every attempt", async () => {
    const bodies: string[] = [];
    const auths: Array<string | undefined> = [];
    const server = http.createServer((req, res) => {
      let data = "";
      req.on("data", (c) => {
        data += c;
      });
      req.on("end", () => {
        bodies.push(data);
        auths.push(req.headers.authorization);
        res.writeHead(bodies.length === 1 ? 503 : 200, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const t = httpTransport({ baseUrl: url, apiKey: "sekret", retries: 2, backoffMs: 1 });
      const body = { add: { "X-Foo": "1" } };
      const res = await t.send(json("PUT", `${url}/m`, body));
      expect(res.status).toBe(200);
      expect(bodies).toEqual([JSON.stringify(body), JSON.stringify(body)]);
      expect(auths).toEqual(["Bearer sekret", "Bearer sekret"]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
