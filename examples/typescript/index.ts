// A first stack in TypeScript: an HTTPS edge and a route on the dynamic resources of the npm
// package pulumi-edge. first-stack.sh installs the packages and deploys it (guide, "A first stack").
// [snippet: typescript-program]
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

const config = new pulumi.Config();

const web = new HttpsEdge("web", { description: "Public web edge", hostports: ["shop.example.com:443"] });
const api = new HttpsEdgeRoute("api", {
  edgeId: web.id,
  matchType: "path_prefix",
  match: "/api",
  backend: { backendId: config.get("backendId") ?? "bkd_shop_api" },
  circuitBreaker: { numBuckets: 10, errorThresholdPercentage: 0.5 },
  oidc: {
    issuer: "https://login.example.com",
    clientId: "shop",
    clientSecret: config.requireSecret("oidcClientSecret"),
  },
});

export const edgeId = web.id;
export const routeId = api.id;
// [/snippet]
