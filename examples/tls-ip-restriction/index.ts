import * as pulumi from "@pulumi/pulumi";
import { TlsEdge, TlsEdgeIpRestriction } from "pulumi-edge";

const config = new pulumi.Config();

// [snippet: tls-restriction]
const db = new TlsEdge("postgres", {
  description: "Managed Postgres over TLS",
  hostports: ["db.example.com:5432"],
});

const allowlist = new TlsEdgeIpRestriction("postgres-allowlist", {
  edgeId: db.id,
  ipPolicyIds: config.getObject<string[]>("ipPolicyIds") ?? ["ipp_office", "ipp_ci_runners"],
  // adopt: true, // take over a module that already exists on the edge instead of failing
});
// [/snippet]

export const edgeId = db.id;
export const allowedPolicies = allowlist.ipPolicyIds;
export const enabled = allowlist.enabled;
