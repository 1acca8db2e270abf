// The packaged provider from TypeScript: the same resources as the dynamic face, through the
// generated Node.js SDK and the plugin `pulumi-resource-edge` (declared in Pulumi.yaml).
// [snippet: packaged-route]
import * as pulumi from "@pulumi/pulumi";
import * as edge from "pulumi-edge/packaged";

const web = new edge.HttpsEdge("web", { hostports: ["shop.example.com:443"] });
const api = new edge.HttpsEdgeRoute("api", {
  edgeId: web.id,
  matchType: "path_prefix",
  match: "/api",
  backend: { backendId: "bkd_shop_api" },
  circuitBreaker: { numBuckets: 10, errorThresholdPercentage: 0.5 },
  oidc: {
    issuer: "https://login.example.com",
    clientId: "shop",
    clientSecret: new pulumi.Config().getSecret("oidcClientSecret") ?? pulumi.secret("demo-secret"),
  },
});
// [/snippet]

// A route's id says where it is, `<edgeId>/<routeId>` (the form `pulumi import` takes).
export const routeId = api.id;
export const serviceRouteId = api.routeId;
export const circuitBreaker = api.circuitBreaker;
