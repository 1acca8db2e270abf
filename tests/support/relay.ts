/**
 * A userspace TCP relay on loopback, between a client and its server, that can play a silent
 * network: a partition, with no root and no network namespace. While blocked it stops reading
 * both sockets of every connection (so the senders' kernels hold what they send, and their
 * writes back up as TCP's flow control says), sends no FIN and no RST, and accepts new
 * connections without taking them upstream. Unblocked, it delivers what was held, both ways, as
 * TCP would after a short partition, and takes the connections it accepted meanwhile upstream.
 * A side that ended its connection during the partition is told to the other only then: a reset
 * (RST) drops what its kernel had not delivered, as on a real network, and the other side is
 * reset; an orderly close (FIN) is delivered after what it had sent.
 * (docs/operating.md, "A partition between the replicas and PostgreSQL".)
 */
import * as net from "node:net";

export interface Relay {
  /** The loopback port clients connect to instead of the server's. */
  port: number;
  /** Whether the relay plays a partition now. */
  readonly blocked: boolean;
  /** From now on, nothing passes either way and nothing is closed (see the file's comment). */
  block(): void;
  /** Everything held is delivered, the connections accepted meanwhile are taken upstream. */
  unblock(): void;
  /** Connections open through the relay (accepted and not yet closed on both sides). */
  open(): number;
  /** Every connection cut, and the relay's port closed. */
  close(): Promise<void>;
}

/** One connection through the relay: the client's socket, and the server's once taken upstream. */
interface Pair {
  client: net.Socket;
  server?: net.Socket;
  /** A side ended (reset or closed) while the relay was blocked: told to the other on unblock. */
  clientGone: boolean;
  serverGone: boolean;
}

/** Starts a relay to 127.0.0.1:`target`. */
export async function startRelay(target: number): Promise<Relay> {
  const pairs = new Set<Pair>();
  let blocked = false;

  /** Ends the pair: a side that was reset resets the other (as its RST would), else closes it. */
  const end = (pair: Pair) => {
    pairs.delete(pair);
    for (const s of [pair.client, pair.server]) if (s && !s.destroyed) s.resetAndDestroy();
  };

  /** `from`'s bytes to `to`, paused while `to` is full or while the relay is blocked. */
  const forward = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => {
          if (!blocked) from.resume();
        });
      }
    });
    // An orderly close, read after everything before it: passed on in order.
    from.on("end", () => to.end());
  };

  const upstream = (pair: Pair) => {
    const server = net.connect(target, "127.0.0.1");
    pair.server = server;
    server.pause();
    server.on("error", () => {
      if (blocked) pair.serverGone = true;
      else end(pair);
    });
    server.on("close", () => {
      if (blocked) pair.serverGone = true;
      else if (pair.client.writableEnded || pair.client.destroyed) end(pair);
      else pair.client.end();
    });
    server.once("connect", () => {
      forward(pair.client, server);
      forward(server, pair.client);
      if (!blocked) {
        pair.client.resume();
        server.resume();
      }
    });
  };

  const listener = net.createServer({ pauseOnConnect: true }, (client) => {
    const pair: Pair = { client, clientGone: false, serverGone: false };
    pairs.add(pair);
    client.on("error", () => {
      if (blocked) pair.clientGone = true;
      else end(pair);
    });
    client.on("close", () => {
      if (blocked) pair.clientGone = true;
      else if (!pair.server || pair.server.destroyed) end(pair);
      else if (!pair.server.writableEnded) pair.server.end();
      else end(pair);
    });
    if (!blocked) upstream(pair);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = listener.address() as net.AddressInfo;

  return {
    port,
    get blocked() {
      return blocked;
    },
    block() {
      blocked = true;
      for (const pair of pairs) {
        pair.client.pause();
        pair.server?.pause();
      }
    },
    unblock() {
      blocked = false;
      for (const pair of [...pairs]) {
        if (pair.clientGone || pair.client.destroyed) {
          // Its reset dropped what it had sent and not yet delivered (the kernel discards it).
          end(pair);
          continue;
        }
        if (pair.serverGone) {
          end(pair);
          continue;
        }
        if (pair.server === undefined) upstream(pair);
        else {
          pair.client.resume();
          pair.server.resume();
        }
      }
    },
    open: () => pairs.size,
    async close() {
      for (const pair of [...pairs]) end(pair);
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
