/**
 * The service serving TLS itself, with real certificates of a private CA made here (openssl):
 * - files that cannot be served fail the start, naming the file and the problem, before the store
 *   is touched (programmatic and `edge-service serve`, options and environment variables);
 * - TLS 1.2 at least;
 * - a certificate rotated under a steady stream of keep-alive requests: no request fails, open
 *   connections carry on, new handshakes get the new certificate (a file changed, and SIGHUP);
 * - a bad file on reload: the old certificate keeps serving, the log says why, `/readyz` says so
 *   in its detail until a good file comes;
 * - mutual TLS: a verified client certificate is let in; none, or one of another CA, gets a 401
 *   that says what to present, while the probes answer without one;
 * - plain HTTP on a non-loopback address warns that keys cross the network in clear.
 */
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import * as https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tls from "node:tls";
import { type RunningServer, startServer } from "../../service/http/server";
import {
  CLI,
  ensureBuilt,
  killClis,
  loggedLines,
  NO_DRAIN,
  spawnCli,
  startCli,
} from "../support/edge-service";
import { scaled } from "../support/machine";
import { type Issued, makePki, type Pki } from "../support/pki";

let pki: Pki;
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "edge-tls-"));
  dirs.push(d);
  return d;
};

beforeAll(() => {
  ensureBuilt();
  pki = makePki();
});
afterAll(() => {
  killClis();
  pki?.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A certificate and key copied to files of their own, which a test may replace. */
function servedFiles(from: Issued = pki.server): { dir: string; cert: string; key: string } {
  const dir = tempDir();
  const files = { dir, cert: join(dir, "cert.pem"), key: join(dir, "key.pem") };
  copyFileSync(from.cert, files.cert);
  copyFileSync(from.key, files.key);
  return files;
}

/** Replaces a file the way rotations do: a new file renamed over the old one. */
function replace(file: string, fromFile: string): void {
  const next = `${file}.next`;
  copyFileSync(fromFile, next);
  renameSync(next, file);
}

/** The fingerprint of the certificate a new handshake gets. */
function handshake(port: number, opts: tls.ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, ca: pki.caPem, servername: "localhost", ...opts },
      () => {
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        socket.end();
        resolve(fingerprint);
      },
    );
    socket.once("error", reject);
  });
}

/** One GET over `agent` (keep-alive), with the status, body, socket and the certificate it got. */
function get(
  port: number,
  path: string,
  opts: { agent?: https.Agent; cert?: Issued } = {},
): Promise<{ status: number; body: string; socket: tls.TLSSocket; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    let socket: tls.TLSSocket | undefined;
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path,
        ca: pki.caPem,
        agent: opts.agent,
        cert: opts.cert?.certPem,
        key: opts.cert?.keyPem,
      },
      (res) => {
        const fingerprint = socket?.getPeerCertificate().fingerprint256 ?? "";
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => socket && resolve({ status: res.statusCode ?? 0, body, socket, fingerprint }));
      },
    );
    req.once("socket", (s) => (socket = s as tls.TLSSocket));
    req.once("error", reject);
    req.end();
  });
}

/** Until `lines` has one containing `text` (bounded); that line. */
async function logged(lines: string[], text: string): Promise<string> {
  const end = Date.now() + scaled(20_000);
  for (;;) {
    const line = lines.find((l) => l.includes(text));
    if (line) return line;
    if (Date.now() > end) throw new Error(`no log line with "${text}"; the log:\n${lines.join("\n")}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("files that cannot be served fail the start, naming the file", () => {
  const cases: Array<[string, () => { cert: string; key: string; clientCa?: string }, RegExp]> = [
    [
      "a missing certificate file",
      () => ({ cert: join(tempDir(), "none.pem"), key: pki.server.key }),
      /--tls-cert \S+none\.pem: no such file/,
    ],
    [
      "a directory for the key",
      () => ({ cert: pki.server.cert, key: tempDir() }),
      /--tls-key \S+: is a directory/,
    ],
    [
      "the key given as the certificate",
      () => ({ cert: pki.server.key, key: pki.server.cert }),
      /--tls-cert \S+: holds a private key, not a certificate/,
    ],
    [
      "a key that is not the certificate's",
      () => ({ cert: pki.server.cert, key: pki.issue("stranger").key }),
      /--tls-key \S+stranger\.key: is not the key of the certificate of \S+server\.pem \(CN=server/,
    ],
    [
      "an expired certificate",
      () => pki.issue("expired", { days: -1 }),
      /--tls-cert \S+expired\.pem: its certificate \(CN=expired.*\) expired on \d{4}-/,
    ],
    [
      "an encrypted key",
      () => {
        const key = join(tempDir(), "encrypted.key");
        execFileSync("openssl", [
          "pkey",
          "-in",
          pki.server.key,
          "-aes256",
          "-passout",
          "pass:x",
          "-out",
          key,
        ]);
        return { cert: pki.server.cert, key };
      },
      /--tls-key \S+encrypted\.key: is encrypted: give it unencrypted/,
    ],
    [
      "a client CA file with no certificate",
      () => {
        const clientCa = join(tempDir(), "ca.pem");
        writeFileSync(clientCa, "not a certificate\n");
        return { cert: pki.server.cert, key: pki.server.key, clientCa };
      },
      /--tls-client-ca \S+ca\.pem: holds no PEM certificate/,
    ],
  ];
  test.each(cases)("%s", async (_name, files, message) => {
    const data = tempDir();
    const { cert, key, clientCa } = files();
    const started = startServer({
      dataDir: join(data, "store"),
      port: 0,
      tls: { certFile: cert, keyFile: key, clientCaFile: clientCa },
    });
    await expect(started).rejects.toThrow(message);
    expect(existsSync(join(data, "store"))).toBe(false); // the store was never opened
  });

  test("edge-service serve: options, then the environment; exit 1 with the file's name, 2 for half a pair", async () => {
    const data = tempDir();
    const stranger = pki.issue("stranger-cli");
    const flags = spawnCli([
      "--port",
      "0",
      "--data",
      data,
      "--tls-cert",
      pki.server.cert,
      "--tls-key",
      stranger.key,
    ]);
    expect((await flags.exit).code).toBe(1);
    expect(flags.stderr()).toMatch(
      /^edge-service: --tls-key \S+stranger-cli\.key: is not the key of the certificate/m,
    );
    const env = spawnCli(["--port", "0", "--data", data], {
      EDGE_TLS_CERT: pki.server.cert,
      EDGE_TLS_KEY: join(data, "missing.key"),
    });
    expect((await env.exit).code).toBe(1);
    expect(env.stderr()).toContain(`--tls-key ${join(data, "missing.key")}: no such file`);
    const half = spawnCli(["--port", "0", "--data", data, "--tls-cert", pki.server.cert]);
    expect((await half.exit).code).toBe(2);
    expect(half.stderr()).toContain(
      "--tls-cert (EDGE_TLS_CERT) needs the certificate's private key: give --tls-key FILE",
    );
  });

  test("edge-service serve: a key the service's user cannot read", async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    copyFileSync(pki.server.cert, cert);
    chmodSync(cert, 0o644);
    copyFileSync(pki.server.key, key);
    chmodSync(key, 0o600);
    const data = join(dir, "data");
    mkdirSync(data);
    // As root every file is readable: the service runs as nobody, the key stays root's.
    const asNobody = process.getuid?.() === 0;
    if (asNobody) execFileSync("chown", ["nobody", data]);
    else chmodSync(key, 0o000);
    const argv = [CLI, "serve", "--port", "0", "--data", data, "--tls-cert", cert, "--tls-key", key];
    let stderr = "";
    let status: number | null = 0;
    try {
      execFileSync(
        asNobody ? "runuser" : process.execPath,
        asNobody ? ["-u", "nobody", "--", process.execPath, ...argv] : argv,
        {
          stdio: "pipe",
          timeout: scaled(60_000),
          env: { ...process.env, EDGE_API_KEY: "" },
        },
      );
    } catch (e) {
      status = (e as { status: number | null }).status;
      stderr = String((e as { stderr: Buffer }).stderr);
    }
    expect(status).toBe(1);
    expect(stderr).toMatch(
      new RegExp(`--tls-key ${key}: cannot be read by this process \\(uid \\d+\\): permission denied`),
    );
  });
});

describe("a server with TLS", () => {
  let server: RunningServer;
  let files: ReturnType<typeof servedFiles>;
  const lines: string[] = [];

  beforeAll(async () => {
    files = servedFiles();
    server = await startServer({
      dataDir: ":memory:",
      port: 0,
      tls: { certFile: files.cert, keyFile: files.key },
      log: (line) => lines.push(line),
    });
  });
  afterAll(() => server?.close());

  test("serves https, says what it serves, and refuses TLS 1.1", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await logged(lines, "TLS: serving the certificate")).toMatch(
      /CN=server \(IP Address:127\.0\.0\.1, DNS:localhost\), issued by CN=test-ca, valid until \S+ \(29 days from now\); no client certificate asked for/,
    );
    expect(await handshake(server.port)).toBe(pki.server.fingerprint);
    await expect(
      handshake(server.port, { maxVersion: "TLSv1.1", minVersion: "TLSv1", ciphers: "DEFAULT@SECLEVEL=0" }),
    ).rejects.toThrow();
    const ready = await get(server.port, "/readyz");
    expect([ready.status, JSON.parse(ready.body)]).toEqual([200, { status: "ok" }]);
  });

  test("a rotation under keep-alive load: no request fails, new handshakes get the new certificate", async () => {
    const next = pki.issue("rotated");
    const agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
    const failures: unknown[] = [];
    /** The sockets requests went over before and after the reload, with the certificate each got. */
    const before = new Map<tls.TLSSocket, string>();
    const after = new Map<tls.TLSSocket, string>();
    let reloaded = false;
    let running = true;
    const worker = async () => {
      while (running) {
        try {
          const r = await get(server.port, "/edges/https", { agent });
          if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
          (reloaded ? after : before).set(r.socket, r.fingerprint);
        } catch (e) {
          failures.push(e);
        }
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    await new Promise((r) => setTimeout(r, 300));
    replace(files.key, next.key);
    replace(files.cert, next.cert);
    await logged(lines, "TLS: reloaded (a file changed): new connections get CN=rotated");
    reloaded = true;
    // New handshakes get the new certificate, while the load goes on.
    expect(await handshake(server.port)).toBe(next.fingerprint);
    await new Promise((r) => setTimeout(r, 300));
    running = false;
    await Promise.all(workers);
    agent.destroy();
    expect(failures).toEqual([]);
    // The connections open before the reload served requests after it, with the old certificate.
    const kept = [...after].filter(([s]) => before.has(s));
    expect(kept.length).toBeGreaterThan(0);
    for (const [, fingerprint] of kept) expect(fingerprint).toBe(pki.server.fingerprint);
    expect(lines.filter((l) => l.includes("TLS: reload") && l.includes("failed"))).toEqual([]);
  });

  test("a bad file on reload: the old certificate serves on, the log and /readyz say so, a good file ends it", async () => {
    const served = await handshake(server.port);
    const stranger = pki.issue("stranger-reload");
    replace(files.key, stranger.key); // the certificate stays: the key no longer matches it
    const line = await logged(lines, "TLS: reload (a file changed) failed");
    expect(line).toMatch(/so the certificate loaded at \S+ is still served \(CN=rotated/);
    expect(line).toContain(`--tls-key ${files.key}: is not the key of the certificate of ${files.cert}`);
    expect(await handshake(server.port)).toBe(served);
    const ready = await get(server.port, "/readyz");
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({
      status: "ok",
      detail: expect.stringMatching(
        /^TLS: the certificate files could not be reloaded at \S+; the certificate loaded at \S+ is still served, valid until \S+ \(29 days from now\); the reason is in the service's log$/,
      ),
    });
    const good = pki.issue("repaired");
    replace(files.key, good.key);
    replace(files.cert, good.cert);
    await logged(lines, "TLS: reloaded (a file changed): new connections get CN=repaired");
    expect(await handshake(server.port)).toBe(good.fingerprint);
    expect(JSON.parse((await get(server.port, "/readyz")).body)).toEqual({ status: "ok" });
  });

  test("a client that refuses the certificate, or speaks plain HTTP, is told in the log", async () => {
    // openssl, unlike node, sends the alert that tells the server why (run asynchronously: the
    // server answering it is in this process).
    await new Promise((resolve) => {
      const args = [
        "s_client",
        "-connect",
        `127.0.0.1:${server.port}`,
        "-CAfile",
        pki.otherCa,
        "-verify_return_error",
      ];
      const child = spawn("openssl", args, { stdio: "ignore", timeout: scaled(20_000) });
      child.on("close", resolve); // refused: what the test wants
    });
    expect(await logged(lines, "a client refused this server's certificate")).toMatch(
      /handshake from 127\.0\.0\.1 failed \(ERR_SSL_\w+\)/,
    );
    await expect(fetch(`http://127.0.0.1:${server.port}/readyz`)).rejects.toThrow("fetch failed");
    await logged(
      lines,
      "(ERR_SSL_HTTP_REQUEST): a client spoke plain HTTP to this TLS port: its URL must begin with https://",
    );
  });
});

test("edge-service serve reloads on SIGHUP, and says so", async () => {
  const files = servedFiles();
  const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", tempDir()], {
    EDGE_TLS_CERT: files.cert,
    EDGE_TLS_KEY: files.key,
  });
  try {
    expect(cli.url).toMatch(/^https:\/\//);
    const port = Number(new URL(cli.url).port);
    expect(await handshake(port)).toBe(pki.server.fingerprint);
    const next = pki.issue("hup");
    replace(files.key, next.key);
    replace(files.cert, next.cert);
    cli.child.kill("SIGHUP"); // before the watch's poll settles: the reload is the signal's
    expect((await loggedLines(cli, "TLS: reloaded (SIGHUP)"))[0]).toContain("new connections get CN=hup");
    expect(await handshake(port)).toBe(next.fingerprint);
    cli.child.kill("SIGHUP");
    expect(
      (await loggedLines(cli, "TLS: SIGHUP: the files hold the certificate already served"))[0],
    ).toContain("CN=hup");
    expect(cli.child.exitCode).toBeNull(); // SIGHUP reloads; it does not stop the service
  } finally {
    cli.child.kill("SIGTERM");
    await cli.exit;
  }
});

describe("mutual TLS", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      dataDir: ":memory:",
      port: 0,
      tls: { certFile: pki.server.cert, keyFile: pki.server.key, clientCaFile: pki.ca },
    });
  });
  afterAll(() => server?.close());

  test("a certificate of the client CA is let in", async () => {
    const r = await get(server.port, "/edges/https", { cert: pki.issue("client", { client: true }) });
    expect(r.status).toBe(200);
  });

  test("none, or one of another CA, gets a 401 that says what to present; the probes answer without", async () => {
    const none = await get(server.port, "/edges/https");
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({
      error_code: "ERR_EDGE_401",
      msg: expect.stringMatching(
        /requires a client certificate \(mutual TLS\), and the connection presented none: present a client certificate signed by a CA of the service's --tls-client-ca \(pulumi-edge: edge:clientCertificate and edge:clientKey/,
      ),
    });
    const foreign = await get(server.port, "/edges/https", {
      cert: pki.issue("foreign", { client: true, foreign: true }),
    });
    expect(foreign.status).toBe(401);
    expect(JSON.parse(foreign.body).msg).toMatch(
      /^the client certificate was refused \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/,
    );
    for (const probe of ["/healthz", "/readyz"]) expect((await get(server.port, probe)).status).toBe(200);
  });
});

describe("plain HTTP on a non-loopback address", () => {
  test("warns that keys cross the network in clear; TLS does not", async () => {
    const lines: string[] = [];
    const plain = await startServer({
      dataDir: ":memory:",
      host: "0.0.0.0",
      port: 0,
      apiKey: "k",
      log: (l) => lines.push(l),
    });
    await plain.close();
    expect(lines.find((l) => l.includes("serving plain HTTP on 0.0.0.0"))).toContain(
      "API keys and the secrets of route bodies (OAuth and OIDC client secrets, webhook secrets) cross the network in clear",
    );
    const secure: string[] = [];
    const served = await startServer({
      dataDir: ":memory:",
      host: "0.0.0.0",
      port: 0,
      apiKey: "k",
      tls: { certFile: pki.server.cert, keyFile: pki.server.key },
      log: (l) => secure.push(l),
    });
    await served.close();
    expect(secure.filter((l) => l.includes("plain HTTP"))).toEqual([]);
    expect(secure.some((l) => l.includes("TLS: serving"))).toBe(true);
  });
});
