/**
 * Every client verifies, with real certificates of a private CA made here (openssl):
 * - the HTTP transport and the typed client over https://, trusting the system's CAs plus a CA
 *   given as PEM text or as a file, presenting a client certificate to a service that requires one;
 * - a certificate the client cannot accept (untrusted, expired, for another host) and a service
 *   that does not speak TLS fail the call at once: one connection, no retry, an error that names
 *   the host and the setting that fixes it;
 * - settings that cannot be used fail before any connection, naming the setting;
 * - the provider's settings: `edge:caCertificate`, `edge:clientCertificate`, `edge:clientKey` with
 *   their environment variables (the client pair from the environment wins, as a pair), a file's
 *   path read from the program's directory;
 * - `edge-service request --url https://...` with EDGE_CA_CERTIFICATE.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { edgeClient } from "../../provider/client";
import { configKeysRead, settingsFor } from "../../provider/config";
import { EdgeApiError, EdgeClient } from "../../sdk/client";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport, type RetryNotice } from "../../sdk/transport";
import { CLI, ensureBuilt, ROOT } from "../support/edge-service";
import { scaled } from "../support/machine";
import { type Issued, makePki, type Pki } from "../support/pki";

let pki: Pki;
let client: Issued;
beforeAll(() => {
  pki = makePki();
  client = pki.issue("client", { client: true });
});
afterAll(() => pki?.cleanup());

/** A bare server (https with `served`, else http) answering `{}`, counting the connections made to it. */
async function bareServer(
  served?: Issued,
): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const answer = (_req: http.IncomingMessage, res: http.ServerResponse) => res.end("{}");
  const server = served
    ? https.createServer({ cert: served.certPem, key: served.keyPem }, answer)
    : http.createServer(answer);
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${served ? "https" : "http"}://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const get = (url: string) => new Request(`${url}/edges/https`);

describe("the HTTP transport over https://", () => {
  test("trusts a CA given as PEM text or as a file, besides the system's", async () => {
    const server = await bareServer(pki.server);
    try {
      for (const caCertificate of [pki.ca, pki.caPem]) {
        const transport = httpTransport({ baseUrl: server.url, tls: { caCertificate } });
        const answer = await transport.send(get(server.url));
        expect([answer.status, await answer.json()]).toEqual([200, {}]);
      }
      // The same CA by name, on localhost: a certificate's DNS name verifies too.
      const local = server.url.replace("127.0.0.1", "localhost");
      expect(
        (await httpTransport({ baseUrl: local, tls: { caCertificate: pki.ca } }).send(get(local))).status,
      ).toBe(200);
    } finally {
      await server.close();
    }
  });

  test("a CA given is trusted beside the defaults, not instead of them (NODE_EXTRA_CA_CERTS kept)", async () => {
    ensureBuilt();
    const ours = await bareServer(pki.server);
    const theirs = await bareServer(pki.issue("other-server", { foreign: true }));
    try {
      // In a child: Node.js reads NODE_EXTRA_CA_CERTS when it starts.
      const script = `
        const { httpTransport } = require(${JSON.stringify(join(ROOT, "dist/sdk/transport"))});
        (async () => {
          for (const url of process.argv.slice(1)) {
            const t = httpTransport({ baseUrl: url, retries: 0, tls: { caCertificate: ${JSON.stringify(pki.ca)} } });
            console.log((await t.send(new Request(url + "/x"))).status);
          }
        })().catch((e) => { console.log(e.message); process.exit(1); });`;
      const child = await run("-e", [script, ours.url, theirs.url], { NODE_EXTRA_CA_CERTS: pki.otherCa });
      expect(child).toEqual({ status: 0, out: "200\n200\n" });
    } finally {
      await Promise.all([ours.close(), theirs.close()]);
    }
  });

  const failures: Array<[string, () => Issued | undefined, string | undefined, RegExp]> = [
    [
      "an untrusted certificate",
      () => pki.server,
      undefined,
      /^TLS handshake with the edge service at 127\.0\.0\.1:\d+ failed \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): its certificate is signed by no CA this client trusts \(the system's CAs; tls\.caCertificate is not set\)\. Set tls\.caCertificate to the CA that signed the service's certificate/,
    ],
    [
      "an expired certificate",
      () => pki.issue("expired-server", { days: -1 }),
      "ca",
      /^TLS handshake with the edge service at 127\.0\.0\.1:\d+ failed \(CERT_HAS_EXPIRED\): the service's certificate has expired: its operator must renew it/,
    ],
    [
      "a certificate for another host",
      () => pki.issue("elsewhere", { hosts: ["edge.example.com"] }),
      "ca",
      /^TLS handshake with the edge service at 127\.0\.0\.1:\d+ failed \(ERR_TLS_CERT_ALTNAME_INVALID\): the service's certificate is for DNS:edge\.example\.com, not 127\.0\.0\.1\. Set baseUrl to a URL with a name the certificate holds/,
    ],
    [
      "a service that does not speak TLS",
      () => undefined,
      "ca",
      /^TLS handshake with the edge service at 127\.0\.0\.1:\d+ failed \(ERR_SSL_WRONG_VERSION_NUMBER\): 127\.0\.0\.1:\d+ does not speak TLS: set baseUrl to http:\/\/127\.0\.0\.1:\d+/,
    ],
  ];
  test.each(failures)(
    "%s fails at once, never retried, naming the host and the setting",
    async (_name, served, ca, message) => {
      const server = await bareServer(served());
      try {
        const baseUrl = server.url.replace(/^http:/, "https:");
        const retries: RetryNotice[] = [];
        const transport = httpTransport({
          baseUrl,
          retries: 5,
          backoffMs: 1,
          tls: ca ? { caCertificate: pki.ca } : {},
        });
        // A GET, which any transient failure would retry.
        const error = await transport
          .send(get(baseUrl), { onRetry: (r) => retries.push(r) })
          .catch((e: Error) => e);
        expect(error).toHaveProperty("message", expect.stringMatching(message));
        expect(retries).toEqual([]);
        expect(server.connections()).toBe(1);
      } finally {
        await server.close();
      }
    },
  );

  test("settings that cannot be used fail before any connection, naming the setting", () => {
    const make =
      (tls: Parameters<typeof httpTransport>[0]["tls"], baseUrl = "https://127.0.0.1:1") =>
      () =>
        httpTransport({ baseUrl, tls });
    expect(make({ caCertificate: join(pki.dir, "none.pem") })).toThrow(
      /^tls\.caCertificate \(\S+none\.pem\): no such file$/,
    );
    expect(make({ caCertificate: client.key })).toThrow(
      /^tls\.caCertificate: holds a private key, not a certificate/,
    );
    expect(make({ clientCertificate: client.cert })).toThrow(
      "tls.clientCertificate: is set without its private key: set tls.clientKey too",
    );
    expect(make({ clientKey: client.key })).toThrow(
      "tls.clientKey: is set without the certificate it is the key of: set tls.clientCertificate too",
    );
    expect(make({ clientCertificate: client.cert, clientKey: pki.server.key })).toThrow(
      /^tls\.clientKey: is not the key of the certificate of tls\.clientCertificate \(CN=client, issued by CN=test-ca\)/,
    );
    const expired = pki.issue("expired-client", { client: true, days: -1 });
    expect(make({ clientCertificate: expired.cert, clientKey: expired.key })).toThrow(
      /^tls\.clientCertificate: its certificate \(CN=expired-client, issued by CN=test-ca\) expired on \S+: get it renewed/,
    );
    expect(make({ caCertificate: pki.ca }, "http://127.0.0.1:1")).toThrow(
      "tls.caCertificate is set, but baseUrl http://127.0.0.1:1 is plain HTTP: nothing would be verified or presented. Use https://",
    );
  });
});

describe("the typed client against a service that requires client certificates", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      dataDir: ":memory:",
      port: 0,
      tls: { certFile: pki.server.cert, keyFile: pki.server.key, clientCaFile: pki.ca },
    });
  });
  afterAll(() => server?.close());

  test("presents the client certificate, from files or PEM text", async () => {
    for (const tls of [
      { caCertificate: pki.ca, clientCertificate: client.cert, clientKey: client.key },
      { caCertificate: pki.caPem, clientCertificate: client.certPem, clientKey: client.keyPem },
    ]) {
      const edges = new EdgeClient(httpTransport({ baseUrl: server.url, tls }));
      const made = await edges.createHttpsEdge({ description: "over mutual TLS" });
      expect(made.uri).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/edges\/https\/edghts_/);
    }
  });

  test("without one: the service's 401 names the settings", async () => {
    const edges = new EdgeClient(httpTransport({ baseUrl: server.url, tls: { caCertificate: pki.ca } }));
    const error = await edges.listHttpsEdges().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EdgeApiError);
    expect((error as EdgeApiError).status).toBe(401);
    expect((error as EdgeApiError).msg).toContain("edge:clientCertificate and edge:clientKey");
  });
});

describe("the provider's settings", () => {
  const config = (values: Record<string, string>) => ({ get: (k: string) => values[k] });
  const program = "/projects/edge-stack";

  test("stack config, else the environment; a file's path is the program directory's", () => {
    const s = settingsFor(
      config({
        "edge:caCertificate": "certs/ca.pem",
        "edge:clientCertificate": "c.pem",
        "edge:clientKey": "c.key",
      }),
      { EDGE_CA_CERTIFICATE: "/elsewhere/ca.pem" },
      program,
    );
    expect([s.caCertificate, s.clientCertificate, s.clientKey]).toEqual([
      join(program, "certs/ca.pem"),
      join(program, "c.pem"),
      join(program, "c.key"),
    ]);
    expect(settingsFor(config({}), { EDGE_CA_CERTIFICATE: "/elsewhere/ca.pem" }, program).caCertificate).toBe(
      "/elsewhere/ca.pem",
    );
    expect(settingsFor(config({ "edge:caCertificate": pki.caPem }), {}, program).caCertificate).toBe(
      pki.caPem,
    );
  });

  test("the client certificate of the environment wins over the stack's, as a pair", () => {
    const stack = config({ "edge:clientCertificate": "/stack/c.pem", "edge:clientKey": "/stack/c.key" });
    const s = settingsFor(
      stack,
      { EDGE_CLIENT_CERTIFICATE: "/ci/c.pem", EDGE_CLIENT_KEY: "/ci/c.key" },
      program,
    );
    expect([s.clientCertificate, s.clientKey]).toEqual(["/ci/c.pem", "/ci/c.key"]);
    // Half a pair in the environment is not completed from the stack: the client refuses it.
    const half = settingsFor(stack, { EDGE_CLIENT_CERTIFICATE: client.cert }, program);
    expect([half.clientCertificate, half.clientKey]).toEqual([client.cert, undefined]);
    expect(() => edgeClient({ ...half, baseUrl: "https://127.0.0.1:1" })).toThrow(
      "edge:clientCertificate (EDGE_CLIENT_CERTIFICATE): is set without its private key: set edge:clientKey (EDGE_CLIENT_KEY) too",
    );
    // The drift check reads no stack value the environment overrides.
    expect(configKeysRead({ EDGE_CLIENT_KEY: "/ci/c.key" })).not.toContain("edge:clientKey");
    expect(configKeysRead({ EDGE_CLIENT_KEY: "/ci/c.key" })).not.toContain("edge:clientCertificate");
    expect(configKeysRead({})).toEqual(
      expect.arrayContaining(["edge:caCertificate", "edge:clientCertificate", "edge:clientKey"]),
    );
  });

  test("the provider's client over https trusts edge:caCertificate, and names it when the certificate is refused", async () => {
    const server = await startServer({
      dataDir: ":memory:",
      port: 0,
      tls: { certFile: pki.server.cert, keyFile: pki.server.key },
    });
    try {
      const error = await edgeClient({ baseUrl: server.url, dataDir: "" })
        .listHttpsEdges()
        .catch((e: Error) => e);
      expect(error).toHaveProperty(
        "message",
        expect.stringContaining(
          "(the system's CAs; edge:caCertificate (EDGE_CA_CERTIFICATE) is not set). Set edge:caCertificate (EDGE_CA_CERTIFICATE) to the CA",
        ),
      );
      const trusted = edgeClient({ baseUrl: server.url, dataDir: "", caCertificate: pki.ca });
      expect(await trusted.listHttpsEdges()).toMatchObject({ https_edges: [] });
    } finally {
      await server.close();
    }
  });
});

/** `node <script> ARGS` with `env`, asynchronously (the server it calls may be in this process). */
function run(script: string, args: string[], env: Record<string, string>, cwd?: string) {
  return new Promise<{ status: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd,
      env: { ...process.env, EDGE_API_KEY: "", ...env },
      timeout: scaled(60_000),
    });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (status) => resolve({ status, out }));
  });
}

test("pulumi-edge export --base-url https://... over mutual TLS, with the environment's settings", async () => {
  ensureBuilt();
  const out = mkdtempSync(join(tmpdir(), "edge-export-"));
  const server = await startServer({
    dataDir: ":memory:",
    port: 0,
    tls: { certFile: pki.server.cert, keyFile: pki.server.key, clientCaFile: pki.ca },
  });
  try {
    const tls = { caCertificate: pki.ca, clientCertificate: client.cert, clientKey: client.key };
    await new EdgeClient(httpTransport({ baseUrl: server.url, tls })).createHttpsEdge({
      description: "exported",
    });
    const args = ["export", "--base-url", server.url, "--out", out];
    const exported = await run(join(ROOT, "dist/commands/cli.js"), args, {
      EDGE_CA_CERTIFICATE: pki.ca,
      EDGE_CLIENT_CERTIFICATE: client.cert,
      EDGE_CLIENT_KEY: client.key,
    });
    expect(exported.out).toContain("exported 1 HTTPS edge");
    expect(exported.status).toBe(0);
    expect(readFileSync(join(out, "edges.yaml"), "utf8")).toContain("description: exported");
    const refused = await run(join(ROOT, "dist/commands/cli.js"), [...args, "--force"], {});
    expect(refused.status).not.toBe(0);
    expect(refused.out).toContain("Set edge:caCertificate (EDGE_CA_CERTIFICATE) to the CA");
  } finally {
    await server.close();
    rmSync(out, { recursive: true, force: true });
  }
});

test("edge-service request --url https://... trusts EDGE_CA_CERTIFICATE", async () => {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "edge-request-"));
  const server = await startServer({
    dataDir: dir,
    port: 0,
    tls: { certFile: pki.server.cert, keyFile: pki.server.key },
  });
  try {
    const request = (env: Record<string, string>) =>
      run(CLI, ["request", "GET", "/edges/https", "--url", server.url], env);
    const trusted = await request({ EDGE_CA_CERTIFICATE: pki.ca });
    expect(trusted).toEqual({ status: 0, out: expect.stringContaining('"https_edges": []') });
    const untrusted = await request({});
    expect(untrusted.status).toBe(1);
    expect(untrusted.out).toContain(
      "Set EDGE_CA_CERTIFICATE to the CA that signed the service's certificate",
    );
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
