import { resolve } from "node:path";
import type { Store } from "./store/store";
import type { Transport } from "../sdk/transport/types";

export interface EmbeddedTransportOptions {
  /** Data directory of the embedded database (created on first use), or ":memory:". */
  dataDir: string;
  /**
   * A file holding the key that seals secrets at rest (as `edge-service --secrets-key-file`; several:
   * a key ring); default: the environment's `EDGE_SECRETS_KEY`, else none (stored unsealed).
   */
  secretsKeyFile?: string | readonly string[];
}

/** Origin of in-process requests; Refs returned by the embedded service are built on it. */
export const EMBEDDED_ORIGIN = "http://edge-service.embedded";

// One open database and app per data directory per process: opening is not free, and one
// connection per process keeps in-process writers serialised by the event loop.
const apps = new Map<string, { store: Store; fetch: (req: Request) => Response | Promise<Response> }>();

/**
 * Calls the bundled service in this process: no socket, nothing to start. The service (Hono,
 * SQLite's native binding) is loaded on the first call, never by importing this module: a program
 * that talks to a remote service never loads it.
 */
export function embeddedTransport(opts: EmbeddedTransportOptions): Transport {
  const key = opts.dataDir === ":memory:" ? `:memory:${apps.size}` : resolve(opts.dataDir);
  let entry = opts.dataDir === ":memory:" ? undefined : apps.get(key);
  if (!entry) {
    const { SqliteStore } = require("./store/store-sqlite") as typeof import("./store/store-sqlite");
    const { createEdgeApp } = require("./http/app") as typeof import("./http/app");
    const { Secrets, secretsKeyFrom } = require("./secrets") as typeof import("./secrets");
    const store = SqliteStore.open(opts.dataDir, {
      secrets: new Secrets(secretsKeyFrom(opts.secretsKeyFile)),
    });
    const app = createEdgeApp({ store });
    entry = { store, fetch: (req) => app.fetch(req) };
    apps.set(key, entry);
  }
  const { fetch } = entry;
  return { baseUrl: EMBEDDED_ORIGIN, send: async (request) => fetch(request) };
}

/** Closes every embedded database opened by this process (tests, graceful exits). */
export function closeEmbeddedStores(): void {
  for (const { store } of apps.values()) void store.close();
  apps.clear();
}
