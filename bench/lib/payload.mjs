// Section 5: what an update sends. A route with every module it can have (all ten non-auth
// modules plus one of oauth/oidc/saml: the API allows one auth module at a time, so 11 of the 13
// is the fullest route there is) is created through the real service; then, for each module,
// one inner field changes and the model's check → planRoute gives the PATCH body. Its
// bytes are compared with the full create body of the same route. Each PATCH is also sent to
// the service, to prove it is accepted and has the intended effect.
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import { median } from "./stats.mjs";

const require = createRequire(import.meta.url);
const { SqliteStore } = require("../../dist/service/store/store-sqlite.js");
const { EdgeService } = require("../../dist/service/service.js");
const {
  checkRoute,
  decodeRoute,
  routeCreateRequest,
  routeOutputsOf,
} = require("../../dist/provider/model/route.js");
const { planRoute } = require("../../dist/provider/plan/route.js");

const IDP_METADATA =
  '<?xml version="1.0" encoding="UTF-8"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ' +
  'entityID="https://idp.example.com/metadata"><md:IDPSSODescriptor protocolSupportEnumeration=' +
  '"urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>';

/** Every module as a user would write it, and the one-field change applied to it. */
const MODULES = {
  backend: [{ backendId: "bkd_1" }, (m) => ({ ...m, backendId: "bkd_2" })],
  ipRestriction: [
    { ipPolicyIds: ["ipp_office", "ipp_vpn"] },
    (m) => ({ ...m, ipPolicyIds: [...m.ipPolicyIds, "ipp_new"] }),
  ],
  circuitBreaker: [
    {
      trippedDuration: 30,
      rollingWindow: 60,
      numBuckets: 10,
      volumeThreshold: 5,
      errorThresholdPercentage: 0.5,
    },
    (m) => ({ ...m, numBuckets: 20 }),
  ],
  compression: [{ enabled: true }, (m) => ({ ...m, enabled: false })],
  requestHeaders: [
    { add: { "X-Edge": "1", "X-Team": "platform" }, remove: ["X-Internal"] },
    (m) => ({ ...m, add: { ...m.add, "X-Edge": "2" } }),
  ],
  responseHeaders: [
    { add: { "Strict-Transport-Security": "max-age=31536000" }, remove: ["Server"] },
    (m) => ({ ...m, remove: ["Server", "X-Powered-By"] }),
  ],
  webhookVerification: [{ provider: "stripe", secret: "whsec_1" }, (m) => ({ ...m, secret: "whsec_2" })],
  oauth: [
    {
      provider: {
        github: {
          clientId: "cid",
          clientSecret: "csec",
          scopes: ["read:org"],
          emailDomains: ["example.com"],
          teams: ["acme/ops"],
          organizations: ["acme"],
        },
      },
      optionsPassthrough: true,
      inactivityTimeout: 600,
      maximumDuration: 86400,
      authCheckInterval: 300,
    },
    (m) => ({ ...m, inactivityTimeout: 900 }),
  ],
  saml: [
    { idpMetadata: IDP_METADATA, forceAuthn: true, authorizedGroups: ["admins"], cookiePrefix: "sso." },
    (m) => ({ ...m, forceAuthn: false }),
  ],
  oidc: [
    {
      issuer: "https://idp.example.com",
      clientId: "oidc_client",
      clientSecret: "oidc_secret",
      scopes: ["openid", "email"],
      maximumDuration: 3600,
    },
    (m) => ({ ...m, maximumDuration: 7200 }),
  ],
  websocketTcpConverter: [{ enabled: true }, (m) => ({ ...m, enabled: false })],
  userAgentFilter: [
    { allow: ["curl/.*"], deny: ["badbot/.*"] },
    (m) => ({ ...m, deny: ["badbot/.*", "scraper"] }),
  ],
  trafficPolicy: [{ value: "on_http_request: []" }, (m) => ({ ...m, value: "on_http_response: []" })],
};
const AUTH = ["oauth", "oidc", "saml"];

const bytes = (x) => Buffer.byteLength(JSON.stringify(x));

/** What `pulumi up` plans from: the brain's value of the program's inputs (both faces check with it). */
function check(news) {
  const { inputs, failures } = checkRoute(news);
  if (failures.length > 0) throw new Error(`invalid benchmark route: ${JSON.stringify(failures)}`);
  return inputs;
}

export async function payloadSection() {
  const store = SqliteStore.open(":memory:");
  const service = new EdgeService(store);
  const ctx = { baseUrl: "http://edge-service.embedded" };
  try {
    const edge = await service.createEdge("https", {}, ctx);
    const variants = {};
    for (const auth of AUTH) {
      const args = {
        edgeId: edge.id,
        matchType: "path_prefix",
        match: `/full-${auth}`,
        description: "every module",
      };
      for (const [name, [sample]] of Object.entries(MODULES)) {
        if (!AUTH.includes(name) || name === auth) args[name] = sample;
      }
      const desired = check(args);
      const full = routeCreateRequest(desired);
      const created = await service.createRoute(edge.id, full, ctx);
      const current = decodeRoute(routeOutputsOf(created));
      const perModule = {};
      for (const [name, [, change]] of Object.entries(MODULES)) {
        if (args[name] === undefined) continue;
        const plan = planRoute(current, check({ ...args, [name]: change(args[name]) }));
        if (plan.steps.length !== 1 || plan.steps[0].op !== "patch" || plan.changed.join() !== name) {
          throw new Error(`${auth}/${name}: unexpected plan ${JSON.stringify(plan)}`);
        }
        const body = plan.steps[0].body;
        const after = await service.updateRoute(edge.id, created.id, body, ctx);
        const back = planRoute(decodeRoute(routeOutputsOf(after)), current);
        if (back.changed.join() !== name)
          throw new Error(`${auth}/${name}: the PATCH changed ${back.changed}`);
        await service.updateRoute(edge.id, created.id, back.steps[0].body, ctx); // restore
        perModule[name] = bytes(body);
      }
      variants[auth] = {
        modules: Object.keys(perModule).length,
        fullCreateBodyBytes: bytes(full),
        fullRouteResponseBytes: bytes(created),
        patchBytesByModule: perModule,
        patchBytesMedian: median(Object.values(perModule)),
        patchBytesMax: Math.max(...Object.values(perModule)),
      };
    }
    const headline = variants.oidc;
    return {
      headline: {
        route: "11 modules (10 non-auth + oidc)",
        change: "circuitBreaker.numBuckets 10 → 20",
        patchBytes: headline.patchBytesByModule.circuitBreaker,
        fullBytes: headline.fullCreateBodyBytes,
        ratio: Number((headline.patchBytesByModule.circuitBreaker / headline.fullCreateBodyBytes).toFixed(3)),
      },
      variants,
    };
  } finally {
    store.close();
  }
}
