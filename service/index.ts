/**
 * The bundled service: the API's server (Hono), its two stores (SQLite, PostgreSQL), the
 * `edge-service` command (./cli), and the transport that calls it in this process. It depends on
 * the SDK's contract; nothing of the SDK depends on it.
 */
export { createEdgeApp, type EdgeAppOptions } from "./http/app";
export { closeEmbeddedStores, embeddedTransport, type EmbeddedTransportOptions } from "./embedded";
export { Secrets, SecretsKey, SecretsKeyError } from "./secrets";
export { startServer, type RunningServer, type ServerOptions } from "./http/server";
export type { Store, StoreTx } from "./store/store";
export { openStore, type StoreChoice } from "./store/store-open";
export { SqliteStore } from "./store/store-sqlite";
