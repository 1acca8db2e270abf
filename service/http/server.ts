/** The standalone server: the same app on a socket, with a graceful stop that always ends. */
import { Server as HttpServer, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, Server as HttpsServer } from "node:https";
import { Server as NetServer, type Socket } from "node:net";
import { serve } from "@hono/node-server";
import { apiKeysOf } from "../api-keys";
import { createEdgeApp } from "./app";
import { type LogFormat, serviceLog } from "./log";
import type { Store } from "../store/store";
import { Secrets, type SecretsKey, UNSEALED_WARNING } from "../secrets";
import { openStore } from "../store/store-open";
import { Presence } from "../store/presence";
import { ServedTls, type TlsFiles, type TlsReload } from "./tls";
import {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  enforceLimits,
  serverOptionsOf,
} from "./connection-limits";
import { DEFAULT_DATABASE_DEADLINE_MS } from "../store/store";

export interface ServerOptions {
  /** Data directory (created if missing), or ":memory:": the SQLite store. */
  dataDir: string;
  /** A postgres:// URL: the PostgreSQL store instead of the data directory (several replicas). */
  databaseUrl?: string;
  /** PostgreSQL: connections of this replica's pool (default 10). */
  poolSize?: number;
  /**
   * PostgreSQL: how long any database call may take, from asking for a connection to its answer
   * (default DEFAULT_DATABASE_DEADLINE_MS; see PostgresStoreOptions.deadlineMs): then its request
   * is answered 503 with Retry-After, and nothing it began commits.
   */
  databaseDeadlineMs?: number;
  /** Timeouts and caps of the server's connections (see ./connection-limits); each defaults. */
  limits?: Partial<ConnectionLimits>;
  /**
   * Default 127.0.0.1. A non-loopback host requires an API key (the bootstrap key, or a named one
   * in force); without `tls` the server warns that keys and secrets cross the network in clear.
   */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** The bootstrap key (scope admin; see EdgeAppOptions); named keys of the store are always checked. */
  apiKey?: string;
  rateLimitPerMinute?: number;
  /** Where the log's lines go (see EdgeAppOptions). */
  log?: (line: string) => void;
  /**
   * Seals the secrets at rest (see ./secrets): one key, or a key ring (each opens what it sealed;
   * the store names the key new values are sealed under); without one they are stored unsealed,
   * and the server says so at start (`log`).
   */
  secretsKey?: SecretsKey | readonly SecretsKey[];
  /** `text` (default) or `json`: one JSON object per line. */
  logFormat?: LogFormat;
  /** Prometheus metrics at `GET /metrics` (default on; with the API key when there is one). */
  metrics?: boolean;
  /** Bound on the cached GET answers, in bytes (see EdgeAppOptions); 0 turns the cache off. */
  responseCacheBytes?: number;
  /** How long audit events are kept (see EdgeAppOptions; `serve` defaults to 90 days). */
  auditRetentionMs?: number;
  /**
   * How long a stop may take: `close()` lets in-flight requests finish until this long after it
   * began (the drain included), then cuts the connections still open (default
   * DEFAULT_SHUTDOWN_GRACE_MS). Kubernetes sends SIGKILL 30 s after SIGTERM by default.
   */
  shutdownGraceMs?: number;
  /**
   * How long a stop keeps the idle keep-alive connections open before it closes them (default 0:
   * at once; `edge-service serve` defaults to DEFAULT_DRAIN_MS). A load balancer may be sending a
   * request over an idle connection as the server closes it: the request is then lost, and one
   * that is not safe to repeat (a POST without an Idempotency-Key) fails. Through the drain the
   * server listens no more (new connections are refused, which a balancer retries elsewhere and
   * its health check sees), and answers each request still arriving on an open connection with
   * `Connection: close`; the drain ends early once every connection has closed. Set it above the
   * time the balancer takes to mark a replica down (deploy/haproxy.cfg: 2 checks 1 s apart), and
   * below `shutdownGraceMs`: the drain runs inside the grace, which cuts a longer one short.
   */
  drainMs?: number;
  /** How often the server records in the store that it is alive (see ./presence); default HEARTBEAT_MS. */
  heartbeatMs?: number;
  /**
   * Serve HTTPS with these PEM files (see ./tls): checked before the store is opened (a file that
   * cannot be served fails the start, naming it), then watched and loaded again when they change.
   */
  tls?: TlsFiles;
}

/** The default of `shutdownGraceMs`: well within an orchestrator's usual 30-s grace. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/**
 * `edge-service serve`'s default `drainMs`: above HAProxy's 2 s to mark a stopped replica down
 * (deploy/haproxy.cfg), and with the grace within an orchestrator's usual 30 s.
 */
export const DEFAULT_DRAIN_MS = 5_000;

/**
 * How long an idle keep-alive connection is kept open (node's default is 5 s): above the idle
 * timeouts of load balancers (AWS ALB 60 s, HAProxy's pooled server connections, nginx 60 s).
 */
export const KEEP_ALIVE_IDLE_MS = 65_000;

/**
 * After the connections are cut, how long the handlers still running (their request aborted) get
 * to end before the store is closed under them: they normally end within milliseconds.
 */
const HANDLER_DRAIN_MS = 5_000;

/** How a stop went. */
export interface StopReport {
  /** Connections still open when the grace ran out (or when `close({ now: true })` came), closed by the server. */
  cut: number;
  /** `finished`: every request ended in time; `grace`: the grace ran out; `now`: cut on demand. */
  ending: "finished" | "grace" | "now";
  /** Request handlers still running when the store was closed (0 unless one hung HANDLER_DRAIN_MS). */
  abandoned: number;
}

export interface RunningServer {
  /** `https://...` with `tls`, else `http://...`. */
  url: string;
  port: number;
  store: Store;
  /**
   * Stops accepting connections; answers every request from then on with `Connection: close`;
   * keeps idle connections open for `drainMs` (or until all closed), then closes them;
   * lets in-flight requests finish until `shutdownGraceMs` after the call (the drain runs inside
   * it), then cuts the connections still open (a client stalled mid-request included); then
   * closes the store. `now` cuts them at once,
   * also during a stop already begun (a second signal). Every call returns the same stop.
   */
  close(opts?: { now?: boolean }): Promise<StopReport>;
  /**
   * Loads the TLS files again (`serve` on SIGHUP; a change of a file does it by itself): new
   * handshakes get the new certificate, open connections keep theirs. Files that cannot be served
   * leave the certificate in use serving (`failed`, told in the log and in `/readyz`). Undefined
   * without TLS.
   */
  reloadTls?: (why: string) => TlsReload;
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ? serviceLog(opts.log, opts.logFormat) : undefined;
  // Before the store: files that cannot be served fail the start, having touched nothing.
  const tls = opts.tls && new ServedTls(opts.tls, log && ((level, line) => log.event(level, line)));
  const secrets = new Secrets(opts.secretsKey);
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    backgroundCheckpoints: true,
    poolSize: opts.poolSize,
    deadlineMs: opts.databaseDeadlineMs ?? DEFAULT_DATABASE_DEADLINE_MS,
    log: log && ((line) => log.event("warn", line)),
    secrets,
  });
  if (!isLoopback(host) && !opts.apiKey && !(await apiKeysOf(store)).some((k) => k.revoked_at === null)) {
    await store.close();
    throw new Error(
      `refusing to listen on ${host} without an API key: pass --api-key (or set EDGE_API_KEY), make a named key (edge-service keys create NAME --scope admin), or bind a loopback address`,
    );
  }
  if (secrets.keys.length === 0) log?.event("warn", UNSEALED_WARNING);
  if (!tls && !isLoopback(host)) log?.event("warn", plainHttpWarning(host));
  let stopping = false;
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
    // A stopping server is not ready: a balancer whose checks reuse a connection (one the drain
    // keeps open) learns it from the check too, not only from a refused connection.
    hostNotReady: () => (stopping ? "the server is stopping" : undefined),
    readyDetail: tls && (() => tls.detail()),
    clientCertificates: tls?.clientCertificates,
  });
  const handlers = new RunningHandlers();
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...opts.limits };
  const { server, url, port } = await listen(
    handlers.counting(app.fetch),
    host,
    opts.port ?? 8080,
    tls,
    limits,
    log && ((line) => log.event("warn", line)),
  ).catch(async (e: unknown) => {
    await store.close();
    throw e;
  });
  // Recorded alive, with its keys, before it is said to run: `secrets rotate` counts it from now.
  const presence = await Presence.start(store, {
    url,
    keyIds: secrets.keys.map((k) => k.id),
    beatMs: opts.heartbeatMs,
    log: log && ((level, line) => log.event(level, line)),
  });
  const connections = new Connections(server);

  const stop = async (): Promise<StopReport> => {
    stopping = true;
    tls?.stop();
    const { cut, ending } = await connections.close(
      opts.drainMs ?? 0,
      opts.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
    );
    // A cut request's handler sees its request aborted and ends; one stuck gets HANDLER_DRAIN_MS.
    const abandoned = await handlers.ended(HANDLER_DRAIN_MS);
    await presence.stop();
    // The store's close waits for the checkpoint worker (see Checkpointer.stop).
    await store.close();
    return { cut, ending, abandoned };
  };
  let stopped: Promise<StopReport> | undefined;
  return {
    url,
    port,
    store,
    close(closeOpts) {
      stopped ??= stop();
      if (closeOpts?.now) connections.cutNow("now");
      return stopped;
    },
    reloadTls: tls && ((why) => tls.reload(why)),
  };
}

/** What a server on a non-loopback address without TLS says at start. */
function plainHttpWarning(host: string): string {
  return `serving plain HTTP on ${host}: API keys and the secrets of route bodies (OAuth and OIDC client secrets, webhook secrets) cross the network in clear, readable by anyone on the path. Give a certificate (--tls-cert and --tls-key, or EDGE_TLS_CERT and EDGE_TLS_KEY), or listen on 127.0.0.1 behind a TLS-terminating proxy on this machine`;
}

type Fetch = (request: Request, env: unknown) => Response | Promise<Response>;

/**
 * Handlers still running: the store must not be closed under them. Counted only when the app
 * answers later (a promise); an answer given at once keeps @hono/node-server's fast path.
 */
class RunningHandlers {
  private running = 0;
  private allEnded?: () => void;

  counting(fetch: Fetch): Fetch {
    const ended = () => {
      this.running--;
      if (this.running === 0) this.allEnded?.();
    };
    return (request, env) => {
      const answer = fetch(request, env);
      if (answer instanceof Promise) {
        this.running++;
        answer.then(ended, ended);
      }
      return answer;
    };
  }

  /** Once every handler ended, or `boundMs` passed: how many were still running (abandoned). */
  async ended(boundMs: number): Promise<number> {
    if (this.running > 0) {
      await new Promise<void>((resolve) => {
        const bound = setTimeout(resolve, boundMs);
        this.allEnded = () => {
          clearTimeout(bound);
          resolve();
        };
      });
    }
    return this.running;
  }
}

/** node:https's server (whose type parameters `instanceof` alone would leave as `any`). */
const isHttps = (s: unknown): s is HttpsServer => s instanceof HttpsServer;

/** `fetch` served on host:port, over TLS with `tls`; the URL it is reached at. */
async function listen(
  fetch: Fetch,
  host: string,
  port: number,
  tls: ServedTls | undefined,
  limits: ConnectionLimits,
  log: ((line: string) => void) | undefined,
): Promise<{ server: HttpServer; url: string; port: number }> {
  const options = tls
    ? {
        createServer: createHttpsServer,
        serverOptions: { ...tls.serverOptions(), ...serverOptionsOf(limits) },
      }
    : { createServer: undefined, serverOptions: serverOptionsOf(limits) };
  const server = await new Promise<HttpServer>((resolve, reject) => {
    const s = serve({ fetch, hostname: host, port, ...options }, () => {
      if (isHttps(s)) {
        tls?.start(s);
        resolve(s);
      } else if (s instanceof HttpServer) resolve(s);
      else reject(new Error("@hono/node-server gave no node:http server: the stop needs one"));
    });
    s.once("error", reject);
  });
  // A load balancer keeps idle connections to each replica and reuses them; whichever side closes
  // an idle one may meet a request the other sends on it at that moment, which is lost. Node closes
  // them after 5 s idle, about when HAProxy may reuse one; longer than any balancer's idle time,
  // the balancer is the side that closes, and knows it. Headers may still take their 60 s once a
  // request begins (node counts headersTimeout from the request's first byte).
  server.keepAliveTimeout = KEEP_ALIVE_IDLE_MS;
  enforceLimits(server, limits, tls !== undefined, log);
  const address = server.address();
  if (address === null || typeof address === "string") {
    throw new Error(`the server listens on ${address}, not a TCP port`);
  }
  const urlHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return { server, url: `${tls ? "https" : "http"}://${urlHost}:${address.port}`, port: address.port };
}

/** The server's connections, for a stop that lets requests finish, then cuts what is left. */
class Connections {
  // Every socket, whatever the HTTP layer thinks of it: what is left at the deadline is cut.
  private readonly sockets = new Set<Socket>();
  // Responses not yet finished: those still to send their headers say `Connection: close` once
  // the stop begins, so a keep-alive client cannot keep its connection served for ever.
  private readonly unfinished = new Set<ServerResponse>();
  private stopping = false;
  /** The drain is over: an idle connection is closed as soon as it is idle. */
  private drained = false;
  private endDrain?: () => void;
  private cut?: (ending: "grace" | "now") => void;

  constructor(private readonly server: HttpServer) {
    server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    // Prepended: it runs before @hono/node-server's listener, which may answer synchronously.
    server.prependListener("request", (_req, res: ServerResponse) => {
      if (this.stopping) res.setHeader("Connection", "close");
      this.unfinished.add(res);
      res.once("close", () => this.unfinished.delete(res));
      res.once("finish", () => {
        // A response whose headers went out before the stop left its connection open: close it
        // now that it is idle (closeIdleConnections skips a connection mid-request). Not during
        // the drain: its client may be sending the next request on it (see drainMs).
        if (this.drained) setImmediate(() => server.closeIdleConnections());
      });
    });
  }

  /** During a stop, cuts every connection now (a second signal); otherwise nothing. */
  cutNow(ending: "grace" | "now"): void {
    this.endDrain?.();
    this.cut?.(ending);
  }

  /**
   * Stops listening; keeps the idle connections open for `drainMs` (or until none is left), then
   * closes them; lets requests finish until `graceMs` after the call, then cuts what is still
   * open. The grace bounds the whole stop: the drain runs inside it, and is cut short by it.
   */
  async close(drainMs: number, graceMs: number): Promise<Pick<StopReport, "cut" | "ending">> {
    this.stopping = true;
    for (const res of this.unfinished) if (!res.headersSent) res.setHeader("Connection", "close");
    let ending: StopReport["ending"] = "finished";
    let cut = 0;
    // Stops listening only: http.Server's own close() would also close the idle connections
    // (node >= 19), which is what the drain holds back. Resolves when no connection is left.
    const allClosed = new Promise<void>((resolve) =>
      NetServer.prototype.close.call(this.server, () => resolve()),
    );
    this.cut = (why) => {
      this.cut = undefined;
      ending = why;
      // The idle ones (kept through a drain) carry no request: closed, not counted as cut.
      this.server.closeIdleConnections();
      cut = [...this.sockets].filter((socket) => !socket.destroyed).length;
      // closeAllConnections: every connection of the HTTP layer, one stalled mid-headers or
      // mid-body too (the HTTP layer's headersTimeout/requestTimeout timers are stopped).
      this.server.closeAllConnections();
      for (const socket of this.sockets) socket.destroy();
    };
    // From the stop's start: a client stalled mid-request during the drain is cut at the grace,
    // not a grace after the drain (an orchestrator's SIGKILL counts from the signal too).
    const grace = setTimeout(() => this.cutNow("grace"), graceMs);
    if (drainMs > 0 && this.sockets.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        this.endDrain = () => {
          clearTimeout(timer);
          resolve();
        };
        void allClosed.then(this.endDrain);
      });
      this.endDrain = undefined;
    }
    this.drained = true;
    // Now the HTTP layer's close: the idle connections are closed, its timers stopped (listening
    // had already stopped, so this only adds that).
    this.server.close();
    await allClosed;
    clearTimeout(grace);
    this.cut = undefined;
    return { cut, ending };
  }
}
