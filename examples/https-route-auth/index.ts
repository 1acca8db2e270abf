// Before the first `pulumi up`:
//   pulumi config set --secret githubClientSecret <secret of your GitHub OAuth app>
//   pulumi config set --secret oidcClientSecret <secret of your OIDC client>
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";

const config = new pulumi.Config();
const edge = new HttpsEdge("internal", {
  description: "Internal tools",
  hostports: ["tools.example.com:443"],
});

// [snippet: oauth-github]
const admin = new HttpsEdgeRoute("admin", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/admin",
  backend: { backendId: "bkd_admin" },
  oauth: {
    provider: {
      github: {
        clientId: "Iv1.8a61f9b3a7aba766",
        clientSecret: config.requireSecret("githubClientSecret"),
        teams: ["acme/platform", "acme/sre"],
        organizations: ["acme"],
      },
    },
    authCheckInterval: 300, // recheck membership every 5 minutes
    inactivityTimeout: 3600,
  },
});
// [/snippet]

// [snippet: oidc]
const dashboards = new HttpsEdgeRoute("dashboards", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/dashboards",
  backend: { backendId: "bkd_grafana" },
  oidc: {
    issuer: "https://login.example.com/realms/acme",
    clientId: "dashboards",
    clientSecret: config.requireSecret("oidcClientSecret"),
    scopes: ["openid", "email", "groups"],
  },
});
// [/snippet]

// [snippet: saml]
const wiki = new HttpsEdgeRoute("wiki", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/wiki",
  backend: { backendId: "bkd_wiki" },
  saml: {
    idpMetadata: `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/metadata"/>`,
    authorizedGroups: ["engineering"],
    forceAuthn: true,
  },
});

// What the IdP administrator needs:
export const samlMetadataUrl = wiki.saml.apply((s) => s?.metadataUrl);
export const samlAcsUrl = wiki.saml.apply((s) => s?.assertionConsumerServiceUrl);
export const samlCertificate = wiki.saml.apply((s) => s?.requestSigningCertificatePem);
// [/snippet]

export const routes = { admin: admin.id, dashboards: dashboards.id, wiki: wiki.id };
export const edgeId = edge.id;
