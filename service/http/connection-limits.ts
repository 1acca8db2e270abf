/**
 * What a client may hold of the standalone server, and for how long: every connection is closed
 * when the step it is in takes too long (its TLS handshake, its first request's headers, a
 * request and its answer), and the server holds at most so many connections, and so many
 * handshakes not done yet. A connection costs the server memory (tens of kilobytes, more over
 * TLS) for as long as it is held, and a sender that opens many and then says nothing pays for
 * none of it: each bound here ends that cost (docs/operating.md, "Connections: limits and
 * timeouts").
 */
import type { Server as HttpServer, IncomingMessage, ServerOptions, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";

export interface ConnectionLimits {
  /** A TLS handshake must end within this, or its connection is closed (`--handshake-timeout`). */
  handshakeTimeoutMs: number;
  /**
   * The headers of a request must all arrive within this, counted from the connection's start
   * (from its handshake's end over TLS) for its first request, and from the request's first
   * byte for the next ones (`--headers-timeout`). A connection that says nothing is closed too.
   */
  headersTimeoutMs: number;
  /**
   * A request must be received, and its answer sent (handed to the kernel), within this, from
   * its first byte (`--request-timeout`): a client that sends its body slowly, or stops reading
   * its answer, is closed (the service's own work is bounded sooner: the database deadline).
   */
  requestTimeoutMs: number;
  /** Connections open at once; one over is closed as soon as it is accepted (`--max-connections`). */
  maxConnections: number;
  /**
   * TLS handshakes under way at once (`--max-handshakes`): one over closes the oldest handshake
   * still under way, which a client that began it and said no more holds (a real handshake ends
   * within milliseconds, so a new one is not what is closed).
   */
  maxPendingHandshakes: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  handshakeTimeoutMs: 10_000,
  // HAProxy's `timeout http-request` (deploy/haproxy.cfg) is 10 s too.
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxConnections: 1_000,
  maxPendingHandshakes: 256,
};

/**
 * How often node looks at its own headers and request timers (its default is 30 s, so a 10-s
 * timeout would end anywhere up to 40 s).
 */
const CHECK_EVERY_MS = 1_000;

/** The options node:http and node:https take from `limits` at the server's creation. */
export function serverOptionsOf(limits: ConnectionLimits): ServerOptions & { handshakeTimeout: number } {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: CHECK_EVERY_MS,
    // node:tls's own (120 s by default): the handshake's end is awaited this long at most.
    handshakeTimeout: limits.handshakeTimeoutMs,
  };
}

/** What the limits closed since the last line about it (logged at most once a minute). */
interface Closed {
  overConnections: number;
  overHandshakes: number;
  silent: number;
  slowAnswer: number;
}

/**
 * Applies the limits node's options do not cover on `server`: the cap on connections, the cap on
 * pending handshakes (`tls`), a connection that sends no request, an answer its client does not
 * read. Closings are told in `log`, at most one line a minute.
 */
export function enforceLimits(
  server: HttpServer,
  limits: ConnectionLimits,
  tls: boolean,
  log?: (line: string) => void,
): void {
  server.maxConnections = limits.maxConnections;
  const closed: Closed = { overConnections: 0, overHandshakes: 0, silent: 0, slowAnswer: 0 };
  let toldAt = 0;
  let pendingTell: NodeJS.Timeout | undefined;
  const tell = () => {
    if (!log || pendingTell) return;
    const say = () => {
      pendingTell = undefined;
      toldAt = Date.now();
      const parts = [
        closed.overConnections && `${closed.overConnections} over --max-connections ${limits.maxConnections}`,
        closed.overHandshakes &&
          `${closed.overHandshakes} TLS handshakes still under way, the oldest, over --max-handshakes ${limits.maxPendingHandshakes}`,
        closed.silent && `${closed.silent} that sent no request within --headers-timeout`,
        closed.slowAnswer && `${closed.slowAnswer} whose answer was not taken within --request-timeout`,
      ].filter(Boolean);
      Object.assign(closed, { overConnections: 0, overHandshakes: 0, silent: 0, slowAnswer: 0 });
      if (parts.length > 0) log(`connections closed by the server's limits: ${parts.join("; ")}`);
    };
    const wait = Math.max(0, toldAt + 60_000 - Date.now());
    pendingTell = setTimeout(say, wait);
    pendingTell.unref();
  };

  // node:net closes a connection over maxConnections itself, and says so with 'drop' (node 18.6).
  server.on("drop", () => {
    closed.overConnections++;
    tell();
  });

  /** Connections waiting for their first request: closed when it does not come in time. */
  const firstRequest = new WeakMap<Socket, NodeJS.Timeout>();
  const awaitFirstRequest = (socket: Socket) => {
    const timer = setTimeout(() => {
      closed.silent++;
      tell();
      socket.destroy();
    }, limits.headersTimeoutMs);
    timer.unref();
    firstRequest.set(socket, timer);
    socket.once("close", () => clearTimeout(timer));
  };

  if (tls) {
    // Handshakes under way, oldest first: the raw sockets by their peer's address and port (the
    // TLS socket made of one has the same), until the handshake ends or the connection closes.
    const pending = new Map<string, Socket>();
    const keyOf = (s: Socket) => `${s.remoteAddress}:${s.remotePort}`;
    server.on("connection", (raw: Socket) => {
      const key = keyOf(raw);
      pending.set(key, raw);
      raw.once("close", () => {
        if (pending.get(key) === raw) pending.delete(key);
      });
      if (pending.size > limits.maxPendingHandshakes) {
        // A Map iterates in insertion order: its first entry is the oldest handshake.
        for (const [oldestKey, oldest] of pending) {
          pending.delete(oldestKey);
          closed.overHandshakes++;
          tell();
          oldest.destroy();
          break;
        }
      }
    });
    server.on("secureConnection", (socket: TLSSocket) => {
      pending.delete(keyOf(socket));
      awaitFirstRequest(socket);
    });
  } else {
    server.on("connection", awaitFirstRequest);
  }

  // Prepended: before @hono/node-server's listener, which may answer synchronously.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    clearTimeout(firstRequest.get(socket));
    firstRequest.delete(socket);
    // The answer must be taken by its client within the request timeout: one that stops reading
    // would otherwise hold the connection, and the answer's bytes in memory, for good.
    const timer = setTimeout(() => {
      closed.slowAnswer++;
      tell();
      socket.destroy();
    }, limits.requestTimeoutMs);
    timer.unref();
    const done = () => clearTimeout(timer);
    res.once("finish", done);
    res.once("close", done);
  });
}
