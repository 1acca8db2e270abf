import { TLSSocket } from "node:tls";
import type { MiddlewareHandler } from "hono";
import type { Env } from "../context";
import { ApiError } from "../../errors";

/**
 * Mutual TLS: a request must come over a connection whose client certificate the server
 * verified against its client CAs (`serve --tls-client-ca`). The handshake itself lets a
 * connection without one through (see ServedTls.serverOptions) so that the refusal can say what
 * is missing, in the API's error shape, before the key is looked at or the body read.
 */
export function clientCertificate(): MiddlewareHandler<Env> {
  return async (c, next) => {
    const socket = socketOf(c.env);
    if (socket instanceof TLSSocket && socket.authorized) return next();
    const presented = socket instanceof TLSSocket && Object.keys(socket.getPeerCertificate()).length > 0;
    const fix =
      "present a client certificate signed by a CA of the service's --tls-client-ca (pulumi-edge: edge:clientCertificate and edge:clientKey, or EDGE_CLIENT_CERTIFICATE and EDGE_CLIENT_KEY)";
    throw new ApiError(
      "unauthorized",
      !(socket instanceof TLSSocket)
        ? `this service requires a client certificate over TLS: ${fix}`
        : presented
          ? `the client certificate was refused (${String(socket.authorizationError)}): ${fix}`
          : `this service requires a client certificate (mutual TLS), and the connection presented none: ${fix}`,
    );
  };
}

/** The request's socket, as @hono/node-server hands it over (`env.incoming.socket`). */
function socketOf(env: unknown): unknown {
  const incoming: unknown =
    typeof env === "object" && env !== null ? Reflect.get(env, "incoming") : undefined;
  return typeof incoming === "object" && incoming !== null ? Reflect.get(incoming, "socket") : undefined;
}
