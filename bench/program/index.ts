// The benchmark program: one HTTPS edge and `routes` routes with several modules each. With
// `mode: floor` the same resources are served by a dynamic provider that does nothing (see
// floor.ts); with `mode: edge` by pulumi-edge's dynamic resources against the embedded service;
// with `packaged` and `packaged-floor` by the generated SDK (pulumi-edge/packaged), served by the
// plugin pulumi-resource-edge or by a plugin of that name that does nothing (bench/floor-plugin),
// which the benchmark names in Pulumi.yaml.
import * as pulumi from "@pulumi/pulumi";

const config = new pulumi.Config();
const count = config.requireNumber("routes");
const mode = config.require("mode");

type Ctor = new (name: string, args: any, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;
let Edge: Ctor;
let Route: Ctor;
if (mode === "edge") {
  const edge = require("pulumi-edge") as typeof import("pulumi-edge");
  Edge = edge.HttpsEdge;
  Route = edge.HttpsEdgeRoute;
} else if (mode === "packaged" || mode === "packaged-floor") {
  const edge = require("pulumi-edge/packaged") as typeof import("pulumi-edge/packaged");
  Edge = edge.HttpsEdge;
  Route = edge.HttpsEdgeRoute;
} else {
  const floor = require("./floor") as typeof import("./floor");
  Edge = floor.FloorHttpsEdge;
  Route = floor.FloorHttpsEdgeRoute;
}

// A hostport is a natural key on a service: stacks that share one (bench/fleet-drift.mjs) each name their own.
const hostport = config.get("hostport") ?? "bench.example.com:443";
const edge = new Edge("web", { description: "benchmark edge", hostports: [hostport] });

for (let i = 0; i < count; i++) {
  new Route(`route-${i}`, {
    edgeId: edge.id,
    matchType: "path_prefix",
    match: `/svc-${i}`,
    description: `service ${i}`,
    backend: { backendId: `bkd_${i % 7}` },
    ipRestriction: { ipPolicyIds: ["ipp_office", "ipp_vpn"] },
    circuitBreaker: { numBuckets: 10, errorThresholdPercentage: 0.5, volumeThreshold: 20 },
    compression: {},
    requestHeaders: { add: { "X-Edge-Service": `svc-${i}` }, remove: ["X-Internal"] },
    userAgentFilter: { deny: ["badbot/.*"] },
  });
}

export const edgeId = edge.id;
