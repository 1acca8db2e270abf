// The stack `npm run up` deploys (root Pulumi.yaml): an HTTPS edge with routes exercising most
// modules, and a TLS edge with its IP restriction module, against the embedded edge service.
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute, TlsEdge, TlsEdgeIpRestriction } from "pulumi-edge";

const config = new pulumi.Config();
// Secrets come from `pulumi config set --secret`; demo values keep the stack runnable as is.
const oidcClientSecret = config.getSecret("oidcClientSecret") ?? pulumi.secret("demo-oidc-client-secret");
const webhookSecret = config.getSecret("webhookSecret") ?? pulumi.secret("demo-webhook-secret");

const web = new HttpsEdge("web", { description: "Demo HTTPS edge", hostports: ["demo.example.com:443"] });

const api = new HttpsEdgeRoute("api", {
  edgeId: web.id,
  matchType: "path_prefix",
  match: "/api",
  description: "Public API",
  backend: { backendId: "bkd_api" },
  ipRestriction: { ipPolicyIds: ["ipp_office", "ipp_vpn"] },
  circuitBreaker: {
    trippedDuration: 30,
    rollingWindow: 60,
    numBuckets: 10,
    volumeThreshold: 20,
    errorThresholdPercentage: 0.5,
  },
  compression: {},
  requestHeaders: { add: { "X-Edge-Env": "demo" }, remove: ["Cookie"] },
  responseHeaders: { add: { "Strict-Transport-Security": "max-age=63072000" }, remove: ["Server"] },
  userAgentFilter: { deny: ["BadBot/.*"] },
  oidc: {
    issuer: "https://login.example.com",
    clientId: "edge-demo",
    clientSecret: oidcClientSecret,
    scopes: ["openid", "email"],
  },
});

const hooks = new HttpsEdgeRoute("hooks", {
  edgeId: web.id,
  matchType: "exact_path",
  match: "/hooks/github",
  backend: { backendId: "bkd_hooks" },
  webhookVerification: { provider: "github", secret: webhookSecret },
  trafficPolicy: {
    value: "on_http_request: [{actions: [{type: deny}], expressions: [\"req.method != 'POST'\"]}]",
  },
});

const app = new HttpsEdgeRoute("app", {
  edgeId: web.id,
  matchType: "path_prefix",
  match: "/app",
  backend: { backendId: "bkd_app" },
  websocketTcpConverter: { enabled: false },
  saml: {
    idpMetadata: `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com"/>`,
    authorizedGroups: ["engineering"],
  },
});

const tcp = new TlsEdge("tcp", { description: "Demo TLS edge", hostports: ["tcp.example.com:443"] });
const allowlist = new TlsEdgeIpRestriction("tcp-allowlist", { edgeId: tcp.id, ipPolicyIds: ["ipp_office"] });

export const httpsEdgeId = web.id;
export const routes = { api: api.uri, hooks: hooks.uri, app: app.uri };
export const samlMetadataUrl = app.saml.apply((s) => s?.metadataUrl);
export const tlsEdgeId = tcp.id;
export const tlsAllowedPolicies = allowlist.ipPolicyIds;
