/**
 * The SDK: the wire contract, the typed client and the HTTP transport. No Pulumi, no server here:
 * the bundled service (and its in-process transport) is `pulumi-edge/service`.
 */
export * from "./client";
export * from "./contract";
export * from "./transport";
