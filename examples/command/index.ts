// Interop with another provider: a @pulumi/command local.Command reads the deployed route back
// from the embedded service (outputs of our resources flow into the command, and its output
// flows back into the stack).
import * as pulumi from "@pulumi/pulumi";
import { local } from "@pulumi/command";
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

const edge = new HttpsEdge("web", {});
const route = new HttpsEdgeRoute("api", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/api",
  backend: { backendId: "bkd_command_demo" },
});

// [snippet: command-read-back]
const cli = require.resolve("pulumi-edge/cli"); // the edge-service CLI (npx edge-service)
const readBack = new local.Command("read-back", {
  create: pulumi.interpolate`node ${cli} request GET /edges/https/${route.edgeId}/routes/${route.id} --data .edge-service`,
  triggers: [route.id, route.backend],
});
export const backendSeenByService = readBack.stdout.apply(
  (out) => JSON.parse(out).backend.backend.id as string,
);
// [/snippet]
