/** The SDK: wire contract, typed client, transports and the bundled service. No Pulumi here. */
export * from "./client";
export * from "./contract";
export * from "./transport";
export { createEdgeApp, type EdgeAppOptions } from "./service/app";
export { Store } from "./service/store";
export { startServer, type RunningServer, type ServerOptions } from "./service/server";
