/**
 * Persistence across a restart, a standalone server (the compiled CLI, a child process) and an
 * in-process embedded transport sharing one data directory, and the CLI itself: SIGTERM, refusing
 * a public address without a key, requiring the key, and logs free of keys and secrets.
 */
import { fingerprint } from "../support/fingerprint";
import * as crypto from "node:crypto";
import * as path from "node:path";
import { EdgeClient } from "../../sdk/client";
import { ERROR_CODES } from "../../sdk/contract";
import { startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { closeEmbeddedStores, embeddedTransport } from "../../service/embedded";
import { type Cli, ensureBuilt, killClis, NO_DRAIN, spawnCli, startCli } from "../support/edge-service";
import { COMPATIBLE_MODULES, makeTempDir, moduleSample, raw, removeDir } from "./helpers";

/**
 * SIGTERM, and the exit. Servers here start with NO_DRAIN (stopped between the test's own
 * requests), but for the one that shows a stop with the default drain.
 */
async function stopCli(cli: Cli): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  cli.child.kill("SIGTERM");
  return cli.exit;
}

beforeAll(() => {
  ensureBuilt();
});

afterAll(() => {
  killClis();
  closeEmbeddedStores();
});

describe("persistence across a restart", () => {
  it("a second server on the same data dir serves everything the first one stored", async () => {
    const dataDir = makeTempDir("restart");
    try {
      const first = await startServer({ dataDir, port: 0 });
      const c1 = new EdgeClient(httpTransport({ baseUrl: first.url, retries: 0 }));
      const edge = await c1.createHttpsEdge({ description: "persisted", hostports: ["a.example.com:443"] });
      const body: Record<string, unknown> = { match_type: "path_prefix", match: "/kept", description: "ü" };
      for (const m of COMPATIBLE_MODULES) body[m] = moduleSample(m, "", "").request;
      const route = await c1.createRoute(edge.id, body as never);
      const other = await c1.createRoute(edge.id, {
        match_type: "exact_path",
        match: "/other",
        oauth: { provider: { github: { client_id: "i", client_secret: "s", teams: ["a/b"] } } },
      });
      const tls = await c1.createTlsEdge({ metadata: "m" });
      await c1.putTlsIpRestriction(tls.id, { ip_policy_ids: ["p2", "p1"] });
      const before = {
        edge: await c1.getHttpsEdge(edge.id),
        tls: await c1.getTlsEdge(tls.id),
        routes: await c1.listRoutes(edge.id),
      };
      const stored = fingerprint(first.store);
      await first.close();

      const second = await startServer({ dataDir, port: 0 });
      try {
        expect(fingerprint(second.store)).toBe(stored);
        const c2 = new EdgeClient(httpTransport({ baseUrl: second.url, retries: 0 }));
        const rebase = (v: unknown) => JSON.parse(JSON.stringify(v).split(first.url).join(second.url));
        expect(await c2.getHttpsEdge(edge.id)).toEqual(rebase(before.edge));
        expect(await c2.getTlsEdge(tls.id)).toEqual(rebase(before.tls));
        expect(await c2.listRoutes(edge.id)).toEqual(rebase(before.routes));
        const saml = (await c2.getRoute(edge.id, route.id)).saml!;
        expect(saml.request_signing_certificate_pem).toBe(route.saml!.request_signing_certificate_pem);
        expect(() => new crypto.X509Certificate(saml.request_signing_certificate_pem)).not.toThrow();
        expect((await c2.getRoute(edge.id, other.id)).oauth!.provider.github!.teams).toEqual(["a/b"]);
        // And it keeps working: the unique rule still holds across the restart.
        const dup = await raw(c2.transport, "POST", `/edges/https/${edge.id}/routes`, {
          body: { match_type: "path_prefix", match: "/kept" },
        });
        expect(dup.status).toBe(409);
      } finally {
        await second.close();
      }
    } finally {
      removeDir(dataDir);
    }
  });
});

describe("standalone CLI server and in-process embedded transport on one data dir", () => {
  let dataDir: string;
  let cli: Cli;
  let viaCli: EdgeClient;
  let viaEmbedded: EdgeClient;
  beforeAll(async () => {
    dataDir = makeTempDir("shared");
    cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir]);
    viaCli = new EdgeClient(httpTransport({ baseUrl: cli.url, retries: 0 }));
    viaEmbedded = new EdgeClient(embeddedTransport({ dataDir }));
  });
  afterAll(async () => {
    await stopCli(cli);
    closeEmbeddedStores();
    removeDir(dataDir);
  });

  it("the first stdout line names the URL, on loopback, with the data dir", () => {
    expect(cli.stdout().split("\n")[0]).toBe(
      `edge-service listening on ${cli.url} (data: ${path.join(path.resolve(dataDir), "edge.db")}, auth: none, loopback only)`,
    );
    expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("each sees the other's writes", async () => {
    const edge = await viaCli.createHttpsEdge({ description: "from cli" });
    expect((await viaEmbedded.getHttpsEdge(edge.id)).description).toBe("from cli");

    const route = await viaEmbedded.createRoute(edge.id, {
      match_type: "exact_path",
      match: "/shared",
      backend: { backend_id: "b1" },
    });
    const seen = await viaCli.getRoute(edge.id, route.id);
    expect(seen.backend).toMatchObject({
      enabled: true,
      backend: { id: "b1", uri: `${cli.url}/backends/b1` },
    });
    expect(route.backend!.backend.uri).toBe(`${viaEmbedded.transport.baseUrl}/backends/b1`);

    await viaCli.updateRoute(edge.id, route.id, { description: "patched by cli" });
    expect((await viaEmbedded.getRoute(edge.id, route.id)).description).toBe("patched by cli");

    await viaEmbedded.putRouteModule(edge.id, route.id, "traffic_policy", { value: "tp" });
    expect((await viaCli.getRouteModule(edge.id, route.id, "traffic_policy")).value).toBe("tp");

    const dup = await viaCli
      .createRoute(edge.id, { match_type: "exact_path", match: "/shared" })
      .catch((e) => e);
    expect(dup.status).toBe(409);

    await viaCli.deleteRoute(edge.id, route.id);
    expect((await viaEmbedded.getRoute(edge.id, route.id).catch((e) => e)).status).toBe(404);
  });

  it("parallel PATCHes of different modules from both processes all survive", async () => {
    const edge = await viaEmbedded.createHttpsEdge();
    const route = await viaCli.createRoute(edge.id, { match_type: "exact_path", match: "/two-processes" });
    for (let round = 1; round <= 2; round++) {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const module = COMPATIBLE_MODULES[i % COMPATIBLE_MODULES.length]!;
          const client = i % 2 === 0 ? viaCli : viaEmbedded;
          const request = { ...moduleSample(module, "", "").request, enabled: round % 2 === 0 };
          return raw(client.transport, "PATCH", `/edges/https/${edge.id}/routes/${route.id}`, {
            body: { [module]: request },
          });
        }),
      );
      expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
      const after = await viaCli.getRoute(edge.id, route.id);
      for (const m of COMPATIBLE_MODULES) {
        expect([m, after[m]]).toEqual([
          m,
          { ...moduleSample(m, cli.url, route.id).response, enabled: round % 2 === 0 },
        ]);
      }
    }
  });

  it("50 parallel creates of one (match_type, match) from both processes → one 201, 49 409s", async () => {
    const edge = await viaCli.createHttpsEdge();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        raw((i % 2 === 0 ? viaCli : viaEmbedded).transport, "POST", `/edges/https/${edge.id}/routes`, {
          body: { match_type: "path_prefix", match: "/race" },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 201).length).toBe(1);
    expect(results.filter((r) => r.status === 409).length).toBe(49);
    expect((await viaEmbedded.listRoutes(edge.id)).routes.length).toBe(1);
  });
});

describe("edge-service CLI", () => {
  it("SIGTERM shuts it down with exit code 0", async () => {
    const dataDir = makeTempDir("sigterm");
    try {
      const cli = await startCli(["--port", "0", "--data", dataDir]);
      const client = new EdgeClient(httpTransport({ baseUrl: cli.url, retries: 0 }));
      await client.createHttpsEdge();
      const exit = await stopCli(cli);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(cli.stderr()).toContain("SIGTERM received");
    } finally {
      removeDir(dataDir);
    }
  });

  it("--host 0.0.0.0 without a key exits non-zero with a clear message, and listens on nothing", async () => {
    const dataDir = makeTempDir("nokey");
    try {
      const p = spawnCli(["--host", "0.0.0.0", "--port", "0", "--data", dataDir]);
      const exit = await p.exit;
      expect(exit.code).not.toBe(0);
      expect(exit.code).toBe(1);
      expect(p.stdout()).toBe("");
      expect(p.stderr()).toContain("refusing to listen on 0.0.0.0 without an API key");
      expect(p.stderr()).toMatch(/--api-key|EDGE_API_KEY/);
    } finally {
      removeDir(dataDir);
    }
  });

  it("with a key (flag or EDGE_API_KEY) it requires the key; logs never contain the key or body secrets", async () => {
    const key = `cli-key-${crypto.randomBytes(12).toString("hex")}`;
    const secrets = {
      client: `oauth-secret-${crypto.randomBytes(8).toString("hex")}`,
      webhook: `whsec-${crypto.randomBytes(8).toString("hex")}`,
      oidc: `oidc-secret-${crypto.randomBytes(8).toString("hex")}`,
      rejected: `rejected-secret-${crypto.randomBytes(8).toString("hex")}`,
    };
    const dataDir = makeTempDir("withkey");
    const runs: Cli[] = [];
    try {
      for (const mode of ["flag", "env"] as const) {
        const cli =
          mode === "flag"
            ? await startCli([
                "--host",
                "0.0.0.0",
                "--port",
                "0",
                ...NO_DRAIN,
                "--data",
                dataDir,
                "--api-key",
                key,
              ])
            : await startCli(["--host", "0.0.0.0", "--port", "0", ...NO_DRAIN, "--data", dataDir], {
                EDGE_API_KEY: key,
              });
        runs.push(cli);
        expect(cli.stdout().split("\n")[0]).toMatch(/auth: bootstrap key\)$/);
        const anon = httpTransport({ baseUrl: cli.url, retries: 0 });
        const wrong = httpTransport({ baseUrl: cli.url, apiKey: `${key}x`, retries: 0 });
        const right = httpTransport({ baseUrl: cli.url, apiKey: key, retries: 0 });
        expect((await raw(anon, "GET", "/edges/https")).status).toBe(401);
        expect((await raw(wrong, "GET", "/edges/https")).status).toBe(401);
        expect((await raw(anon, "POST", "/edges/https", { body: {} })).json.error_code).toBe(
          ERROR_CODES.unauthorized.code,
        );

        const client = new EdgeClient(right);
        const edge = await client.createHttpsEdge();
        const route = await client.createRoute(edge.id, {
          match_type: "exact_path",
          match: `/secret/${mode}`,
          oauth: { provider: { google: { client_id: "id", client_secret: secrets.client } } },
          webhook_verification: { provider: "stripe", secret: secrets.webhook },
        });
        expect(route.oauth!.provider.google!.client_secret).toBe(secrets.client);
        await client.deleteRouteModule(edge.id, route.id, "oauth");
        await client.putRouteModule(edge.id, route.id, "oidc", {
          issuer: "https://id.example.com",
          client_id: "c",
          client_secret: secrets.oidc,
        });
        // Rejected bodies carrying secrets: bad JSON, a validation error, an unknown field.
        expect(
          (await raw(right, "POST", `/edges/https/${edge.id}/routes`, { body: `{"x":"${secrets.rejected}"` }))
            .status,
        ).toBe(400);
        expect(
          (
            await raw(right, "PUT", `/edges/https/${edge.id}/routes/${route.id}/webhook_verification`, {
              body: { provider: "sns", secret: secrets.rejected },
            })
          ).status,
        ).toBe(400);
        expect(
          (
            await raw(right, "PATCH", `/edges/https/${edge.id}/routes/${route.id}`, {
              body: { [secrets.rejected]: secrets.rejected },
            })
          ).status,
        ).toBe(400);
        expect((await client.getRoute(edge.id, route.id)).oidc!.client_secret).toBe(secrets.oidc);
        expect(await stopCli(cli)).toEqual({ code: 0, signal: null });
      }

      for (const cli of runs) {
        const logs = cli.stdout() + cli.stderr();
        // The logs are not empty: one line per request...
        expect(logs).toMatch(/POST \/edges\/https 201 /);
        expect(logs).toMatch(/GET \/edges\/https 401 /);
        expect(logs).toMatch(/PATCH \/edges\/https\/\S+\/routes\/\S+ 400 /);
        // ...and never a key or a secret.
        expect(logs).not.toContain(key);
        expect(logs).not.toContain(key.slice(8)); // not even part of it
        for (const secret of Object.values(secrets)) expect(logs).not.toContain(secret);
      }
    } finally {
      removeDir(dataDir);
    }
  });

  it("--rate-limit N/min answers 429 with Retry-After", async () => {
    const dataDir = makeTempDir("ratelimit");
    try {
      const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir, "--rate-limit", "5/min"]);
      const t = httpTransport({ baseUrl: cli.url, retries: 0 });
      // 12 requests: even if a minute boundary falls among them, one window gets at least 6.
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 12; i++) {
        const res = await raw(t, "GET", "/edges/tls");
        statuses.push(res.status);
        if (res.status === 429) retryAfter ??= res.headers.get("retry-after");
      }
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(60);
      expect(Number.isInteger(Number(retryAfter))).toBe(true);
      expect(await stopCli(cli)).toEqual({ code: 0, signal: null });
    } finally {
      removeDir(dataDir);
    }
  });

  it("bad arguments exit non-zero with a message", async () => {
    // A bad value is an error (1); a command line the parser cannot read is a usage error (2).
    for (const [args, message, code] of [
      [["--port", "70000"], "--port must be an integer from 0 to 65535, got 70000", 1],
      [["--port", "80.5"], "--port must be an integer from 0 to 65535, got 80.5", 1],
      [["--rate-limit", "fast"], "--rate-limit must look like 600/min", 1],
      // Every count is digits only, in one rule: no exponent, fraction or space slips through.
      [["--pool-size", "1e1"], "--pool-size must be an integer from 1 to 1000, got 1e1", 1],
      [["--max-connections", "0"], "--max-connections must be an integer from 1 to 1000000, got 0", 1],
      [["--max-handshakes", " 4"], "--max-handshakes must be an integer from 1 to 1000000, got  4", 1],
      [["--handshake-timeout", "10ms"], "--handshake-timeout must be 100ms or more, got 10ms", 1],
      [["--database-deadline", "100ms"], "--database-deadline must be from 1s to 600s, got 100ms", 1],
      [["--bogus"], "Unknown option", 2],
    ] as const) {
      const p = spawnCli([...args, "--data", ":memory:"]);
      const exit = await p.exit;
      expect([args.join(" "), exit.code]).toEqual([args.join(" "), code]);
      expect(p.stderr()).toContain(message);
    }
  });
});
