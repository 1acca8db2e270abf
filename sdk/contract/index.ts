/**
 * The wire contract of the edge API: zod schemas for every request and response shape, the
 * limits, the error catalogue. The one source of truth, imported by the service, the client
 * and the provider. Imports nothing else of ours.
 */
export * from "./audit";
export * from "./edges";
export * from "./errors";
export * from "./limits";
export * from "./modules";
export * from "./openapi";
export * from "./operations";
export * from "./problems";
export * from "./body-scan";
export * from "./render";
export * from "./routes";
export * from "./text";
export * from "./wire";
