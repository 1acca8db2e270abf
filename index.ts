/**
 * pulumi-edge: Pulumi resources for the HTTPS/TLS edge management API.
 *
 * Resources: HttpsEdge, HttpsEdgeRoute, TlsEdge, TlsEdgeIpRestriction. Configure the provider
 * with stack config `edge:baseUrl` (absent: the embedded service, data in
 * `<project>/.edge-service`), `edge:apiKey` (secret) and `edge:dataDir`.
 */
export * from "./provider/resources";
