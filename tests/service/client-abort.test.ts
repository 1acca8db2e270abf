/**
 * A client that hangs up is not a server error (issue 35, finding 8): a request whose client
 * closes its connection before the answer is counted as `status="499"` in the request metrics,
 * never as a 500, and leaves one quiet log line (its request line, 499), never "internal error"
 * with a stack trace: error-rate alerts must not fire on client disconnects. The compiled
 * `edge-service serve` as a process (in jest's sandbox Node's own errors are of another realm,
 * and Hono handles them otherwise), real sockets on loopback destroyed mid-request, both stores.
 */
import * as net from "node:net";
import { Client } from "pg";
import { httpTransport } from "../../sdk/transport";
import { type Cli, ensureBuilt, killClis, NO_DRAIN, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, raw, removeDir } from "./helpers";

jest.setTimeout(120_000);
beforeAll(() => ensureBuilt());
afterAll(() => killClis());

interface Served {
  cli: Cli;
  /** The lines of its log (stderr), the time in front of each taken off. */
  lines(): string[];
  databaseUrl?: string;
  close(): Promise<void>;
}

async function serve(store: "sqlite" | "postgres"): Promise<Served> {
  const dataDir = makeTempDir("abort");
  const databaseUrl = store === "postgres" ? await (await sharedCluster()).createDatabase() : undefined;
  const cli = await startCli([
    "--port",
    "0",
    ...NO_DRAIN, // stopped with nothing in flight
    "--data",
    dataDir,
    ...(databaseUrl ? ["--database", databaseUrl] : []),
  ]);
  return {
    cli,
    lines: () =>
      cli
        .stderr()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => l.replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z /, "")),
    databaseUrl,
    async close() {
      cli.child.kill("SIGTERM");
      await cli.exit;
      removeDir(dataDir);
    },
  };
}

/** A raw HTTP/1.1 connection to the server, open once this resolves. */
async function connect(cli: Cli): Promise<net.Socket> {
  const { port } = new URL(cli.url);
  const socket = net.connect(Number(port), "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => undefined); // destroyed by the test itself
  return socket;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded) until a log line from `from` on satisfies `cond`; the lines from `from` then. */
async function linesUntil(s: Served, from: number, cond: (l: string) => boolean): Promise<string[]> {
  const end = Date.now() + 10_000;
  while (!s.lines().slice(from).some(cond)) {
    if (Date.now() > end) throw new Error(`no such log line in:\n${s.lines().join("\n")}`);
    await sleep(20);
  }
  await sleep(100); // anything else the request made the service say
  return s.lines().slice(from);
}

/**
 * `edge_service_requests_total` of one operation, by status; returns once the scrape's own log
 * line is written (a turn of the server's event loop after its answer), so that the lines a test
 * reads next are the request's.
 */
async function requestCounts(s: Served, operation: string): Promise<Record<string, number>> {
  const from = s.lines().length;
  const res = await raw(httpTransport({ baseUrl: s.cli.url, retries: 0 }), "GET", "/metrics");
  await linesUntil(s, from, (l) => l.startsWith("GET /metrics "));
  const out: Record<string, number> = {};
  const re = new RegExp(
    `^edge_service_requests_total\\{operation="${operation}",status="(\\d+)"\\} (\\S+)$`,
    "gm",
  );
  for (const [, status, n] of res.text.matchAll(re)) out[status!] = Number(n);
  return out;
}

/** What the log said of the request: exactly its request line, 499, and nothing of an error. */
function expectOneQuietLine(logged: string[], request: string): void {
  expect(logged).toHaveLength(1);
  expect(logged[0]).toMatch(new RegExp(`^${request} 499 \\d+\\.\\dms op_[0-9A-Za-z]{20}$`));
  expect(logged.join("\n")).not.toMatch(/internal error|\n\s+at /);
}

describe.each(["sqlite", "postgres"] as const)("a client that hangs up, on %s", (store) => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(store);
  });
  afterAll(async () => {
    await s.close();
  });

  it("mid-upload of a large body: counted 499, one quiet line, no 500", async () => {
    const before = await requestCounts(s, "create_https_edge");
    const from = s.lines().length;
    const socket = await connect(s.cli);
    socket.write(
      "POST /edges/https HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n",
    );
    socket.write(`{"description":"${"x".repeat(100_000)}`);
    // The server reads the body meanwhile: the handler is waiting for the rest when the client leaves.
    await sleep(200);
    socket.destroy();
    const logged = await linesUntil(s, from, (l) => l.includes("POST /edges/https "));
    const after = await requestCounts(s, "create_https_edge");
    expect((after["499"] ?? 0) - (before["499"] ?? 0)).toBe(1);
    expect(after["500"] ?? 0).toBe(0);
    expectOneQuietLine(logged, "POST /edges/https");
    // The server goes on serving.
    const res = await raw(httpTransport({ baseUrl: s.cli.url, retries: 0 }), "GET", "/edges/https");
    expect(res.status).toBe(200);
  });

  if (store !== "postgres") return;

  it("while the request waits for a lock: counted 499 though the create went on to commit", async () => {
    // The edges table held by another session: the create waits in the database.
    const holder = new Client({ connectionString: s.databaseUrl });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE edges IN ACCESS EXCLUSIVE MODE");
      const before = await requestCounts(s, "create_https_edge");
      const from = s.lines().length;
      const socket = await connect(s.cli);
      const body = JSON.stringify({ description: "held" });
      socket.write(
        `POST /edges/https HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nIdempotency-Key: held-1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await sleep(300);
      socket.destroy();
      await sleep(100);
      await holder.query("COMMIT");
      const logged = await linesUntil(s, from, (l) => l.includes("POST /edges/https "));
      const after = await requestCounts(s, "create_https_edge");
      expect((after["499"] ?? 0) - (before["499"] ?? 0)).toBe(1);
      expect(after["201"] ?? 0).toBe(before["201"] ?? 0);
      expectOneQuietLine(logged, "POST /edges/https");
      // It was made: the client's retry with its key gets it.
      const retry = await raw(httpTransport({ baseUrl: s.cli.url, retries: 0 }), "POST", "/edges/https", {
        body: { description: "held" },
        headers: { "Idempotency-Key": "held-1" },
      });
      expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      await holder.end();
    }
  });
});
