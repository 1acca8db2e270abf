/** The standalone server: the same app on a socket, with graceful shutdown. */
import { serve } from "@hono/node-server";
import { createEdgeApp } from "./app";
import { type LogFormat, serviceLog } from "./log";
import type { Store } from "./store";
import { Secrets, type SecretsKey, UNSEALED_WARNING } from "./secrets";
import { openStore } from "./store-open";

export interface ServerOptions {
  /** Data directory (created if missing), or ":memory:": the SQLite store. */
  dataDir: string;
  /** A postgres:// URL: the PostgreSQL store instead of the data directory (several replicas). */
  databaseUrl?: string;
  /** PostgreSQL: connections of this replica's pool (default 10). */
  poolSize?: number;
  /** Default 127.0.0.1. A non-loopback host requires an API key (the bootstrap key, or a named one in force). */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** The bootstrap key (scope admin; see EdgeAppOptions); named keys of the store are always checked. */
  apiKey?: string;
  rateLimitPerMinute?: number;
  /** Where the log's lines go (see EdgeAppOptions). */
  log?: (line: string) => void;
  /**
   * Seals the secrets at rest (see ./secrets); without one they are stored unsealed, and the
   * server says so at start (`log`).
   */
  secretsKey?: SecretsKey;
  /** `text` (default) or `json`: one JSON object per line. */
  logFormat?: LogFormat;
  /** Prometheus metrics at `GET /metrics` (default on; with the API key when there is one). */
  metrics?: boolean;
  /** Bound on the cached GET answers, in bytes (see EdgeAppOptions); 0 turns the cache off. */
  responseCacheBytes?: number;
  /** How long audit events are kept (see EdgeAppOptions; `serve` defaults to 90 days). */
  auditRetentionMs?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  store: Store;
  /** Stops accepting connections, lets in-flight requests finish, closes the database. */
  close(): Promise<void>;
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ? serviceLog(opts.log, opts.logFormat) : undefined;
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    backgroundCheckpoints: true,
    poolSize: opts.poolSize,
    log: log && ((line) => log.event("warn", line)),
    secrets: new Secrets(opts.secretsKey),
  });
  if (!isLoopback(host) && !opts.apiKey && !(await store.apiKeys()).some((k) => k.revoked_at === null)) {
    await store.close();
    throw new Error(
      `refusing to listen on ${host} without an API key: pass --api-key (or set EDGE_API_KEY), make a named key (edge-service keys create NAME --scope admin), or bind a loopback address`,
    );
  }
  if (opts.secretsKey === undefined) log?.event("warn", UNSEALED_WARNING);
  const app = createEdgeApp({
    store,
    apiKey: opts.apiKey,
    namedKeys: true,
    rateLimitPerMinute: opts.rateLimitPerMinute,
    log: opts.log,
    logFormat: opts.logFormat,
    metrics: opts.metrics ?? true,
    responseCacheBytes: opts.responseCacheBytes,
    auditRetentionMs: opts.auditRetentionMs,
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: opts.port ?? 8080 }, () => resolve(s));
    s.once("error", reject);
  }).catch(async (e: unknown) => {
    await store.close();
    throw e;
  });
  const address = server.address();
  if (address === null || typeof address === "string")
    throw new Error(`the server listens on ${address}, not a TCP port`);
  const { port } = address;
  const urlHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    store,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          void Promise.resolve(store.close()).then(resolve, resolve);
        });
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        if ("closeIdleConnections" in server) server.closeIdleConnections();
      });
      return closing;
    },
  };
}
