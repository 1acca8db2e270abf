/**
 * pulumi-edge: Pulumi resources for the HTTPS/TLS edge management API.
 *
 * Resources: HttpsEdge, HttpsEdgeRoute, TlsEdge, TlsEdgeIpRestriction. Declarative
 * configuration: loadEdgeConfig + deployEdgeConfig. Configure the provider with stack config
 * `edge:baseUrl` (absent: the embedded service, data in the program's `.edge-service`),
 * `edge:apiKey` (secret) and `edge:dataDir`.
 */
export * from "./provider/declarative";
export * from "./provider/resources";
