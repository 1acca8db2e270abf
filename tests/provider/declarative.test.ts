/** The declarative loader: every problem as file:line:col: entry: field: message. */
import { EdgeConfigError, parseEdgeConfig, SecretRef } from "../../provider/declarative";

async function problems(yaml: string): Promise<string[]> {
  try {
    await parseEdgeConfig(yaml, "edges.yaml");
  } catch (e) {
    if (e instanceof EdgeConfigError) return e.problems;
    throw e;
  }
  throw new Error("expected the configuration to be rejected");
}

const valid = `
httpsEdges:
  web:
    hostports: [www.example.com:443]
    routes:
      api:
        matchType: path_prefix
        match: /api
        backend: { backendId: bkd_api }
        requestHeaders: { add: { X-Api: "1" } }
        webhookVerification: { provider: GitHub, secret: !secret hookSecret }
tlsEdges:
  db:
    ipRestriction: { ipPolicyIds: [ipp_1] }
`;

test("a valid file parses; !secret becomes a SecretRef; header names stay verbatim", async () => {
  const config = await parseEdgeConfig(valid, "edges.yaml");
  const api = config.httpsEdges.web!.routes.api!;
  expect((api.webhookVerification as { secret: unknown }).secret).toEqual(new SecretRef("hookSecret"));
  expect(api.requestHeaders).toEqual({ add: { "X-Api": "1" } });
  expect(config.tlsEdges.db!.ipRestriction).toEqual({ ipPolicyIds: ["ipp_1"] });
});

test("field problems name file, line, column, entry and the camelCase field", async () => {
  const bad = valid.replace(
    "backend: { backendId: bkd_api }",
    "backend: { backendId: bkd_api }\n        circuitBreaker: { numBuckets: 0 }",
  );
  expect(await problems(bad)).toEqual([
    "edges.yaml:10:39: httpsEdges.web.routes.api: circuitBreaker.numBuckets: must be between 1 and 128",
  ]);
});

test("every problem is reported, not just the first", async () => {
  const bad = valid
    .replace("match: /api", "match: ''")
    .replace("ipPolicyIds: [ipp_1]", "ipPolicyIds: []")
    .replace("hostports: [www.example.com:443]", "hostports: [nope]");
  const found = await problems(bad);
  expect(found).toHaveLength(3);
  expect(found[0]).toMatch(
    /^edges\.yaml:4:17: httpsEdges\.web: hostports\[0\]: must have the form "host:port"/,
  );
  expect(found[1]).toMatch(/^edges\.yaml:8:16: httpsEdges\.web\.routes\.api: match: must not be empty/);
  expect(found[2]).toMatch(
    /^edges\.yaml:14:\d+: tlsEdges\.db\.ipRestriction: ipPolicyIds: must list at least one IP policy id/,
  );
});

test("unknown keys, snake_case fields and YAML syntax errors are refused with their place", async () => {
  expect(await problems("httpEdges: {}\n")).toEqual(['edges.yaml:1:12: httpEdges: unknown key "httpEdges"']);
  expect(await problems(valid.replace("backendId: bkd_api", "backend_id: bkd_api"))).toEqual([
    expect.stringMatching(
      /^edges\.yaml:9:\d+: httpsEdges\.web\.routes\.api: backend\.backend_id: use camelCase/,
    ),
  ]);
  expect((await problems("httpsEdges: [\n"))[0]).toMatch(/^edges\.yaml:\d+:\d+: /);
  expect(await problems("httpsEdges:\n  web: {}\n  web: {}\n")).toEqual([
    expect.stringMatching(/^edges\.yaml:3:3: Map keys must be unique/),
  ]);
});

test("two routes of one edge with the same selector are refused (the service would answer 409)", async () => {
  const dup = valid.replace(
    "tlsEdges:",
    "      again:\n        matchType: path_prefix\n        match: /api\ntlsEdges:",
  );
  expect(await problems(dup)).toEqual([
    'edges.yaml:14:16: httpsEdges.web.routes.again: match: same matchType and match as route "api" (one route per selector on an edge)',
  ]);
});

test("at most one of oauth, oidc and saml per route", async () => {
  const both = valid.replace(
    "backend: { backendId: bkd_api }",
    "backend: { backendId: bkd_api }\n        oidc: { issuer: https://id.example.com, clientId: a, clientSecret: b }\n        saml: { idpMetadata: '<EntityDescriptor/>' }",
  );
  expect(await problems(both)).toEqual([
    expect.stringMatching(
      /httpsEdges\.web\.routes\.api: oidc: a route can have only one of oauth, oidc and saml; it would also have saml/,
    ),
  ]);
});
