export * from "./args";
export * from "./edges";
export * from "./route";
export * from "./tls-ip-restriction";
