import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

const config = new pulumi.Config();

// [snippet: basic-route]
const edge = new HttpsEdge("web", {
  description: "Public web edge",
  hostports: ["shop.example.com:443"],
});

const api = new HttpsEdgeRoute("api", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/api",
  description: "Shop API",
  backend: { backendId: config.get("backendId") ?? "bkd_shop_api" },
  compression: {},
  requestHeaders: { add: { "X-Request-Source": "edge" }, remove: ["Cookie"] },
  responseHeaders: { add: { "Strict-Transport-Security": "max-age=63072000" }, remove: ["Server"] },
  circuitBreaker: {
    trippedDuration: 30, // seconds before re-checking upstream health
    rollingWindow: 60,
    numBuckets: 10, // 1..128
    volumeThreshold: 20,
    errorThresholdPercentage: 0.5, // a fraction, not a percentage
  },
});
// [/snippet]

export const edgeId = edge.id;
export const routeId = api.id;
export const routeUri = api.uri;
export const circuitBreaker = api.circuitBreaker;
