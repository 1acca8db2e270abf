// Managed against a running edge service: `pulumi config set edge:baseUrl http://127.0.0.1:8080`
// (and `pulumi config set --secret edge:apiKey ...` when the service requires a key).
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

const edge = new HttpsEdge("web", { hostports: ["drift.example.com:443"] });
const checkout = new HttpsEdgeRoute("checkout", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/checkout",
  backend: { backendId: "bkd_checkout" },
  circuitBreaker: { numBuckets: 10, errorThresholdPercentage: 0.5 },
});

export const edgeId = edge.id;
export const routeId = checkout.id;
