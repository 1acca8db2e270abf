/** The SDK: wire contract, typed client, transports and the bundled service. No Pulumi here. */
export * from "./client";
export * from "./contract";
export * from "./transport";
export { createEdgeApp, type EdgeAppOptions } from "./service/app";
export type { Store, StoreTx } from "./service/store";
export { SqliteStore } from "./service/store-sqlite";
export { openStore, type StoreChoice } from "./service/store-open";
export { Secrets, SecretsKey, SecretsKeyError } from "./service/secrets";
export { startServer, type RunningServer, type ServerOptions } from "./service/server";
