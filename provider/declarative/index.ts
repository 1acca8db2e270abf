export * from "./deploy";
export * from "./load";
