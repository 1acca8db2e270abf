// Managed against a running edge service: `pulumi config set edge:baseUrl http://127.0.0.1:8080`
// (and `pulumi config set --secret edge:apiKey ...` when the service requires a key).
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

// One host per stack (dev, staging, prod): a hostport belongs to one edge at a time.
const edge = new HttpsEdge("web", { hostports: [`${pulumi.getStack()}.drift.example.com:443`] });
const checkout = new HttpsEdgeRoute("checkout", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/checkout",
  backend: { backendId: "bkd_checkout" },
  circuitBreaker: { numBuckets: 10, errorThresholdPercentage: 0.5 },
});

export const edgeId = edge.id;
export const routeId = checkout.id;
