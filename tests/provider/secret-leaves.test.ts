/**
 * Secret leaves, not secret modules: the contract names the credential fields once
 * (ROUTE_SECRET_PATHS), and both faces keep exactly those secret in what they answer the engine,
 * whether or not the program marked them; the rest of a module stays readable. Check failures of
 * both faces name nested properties and never repeat a secret. (Through the real engine:
 * tests/engine/secret-leaves.test.ts.)
 */
import { z } from "zod";
import { ROUTE_MODULES, ROUTE_SECRET_PATHS } from "../../sdk/contract";
import { dynamicProvider } from "../../provider/dynamic";
import { ProviderProcess } from "../../provider/engine/process";
import { isSecretWrapper, keepSecretsOf, reveal, secret } from "../../provider/engine/secrets";
import type { CheckFailure } from "../../provider/model/check";
import { engineFailures } from "../../provider/model/failures";
import { leafRelation, mapLeaves, ROUTE_SECRET_LEAVES } from "../../provider/model/leaves";
import { buildSchema } from "../../provider/plugin/schema";
import { EdgeProvider } from "../../provider/plugin/provider";
import { EDGE_ID } from "./support";

const URN = "urn:pulumi:dev::leaves::edge:index:HttpsEdgeRoute::api";
const base = { edgeId: EDGE_ID, matchType: "path_prefix", match: "/app" };
const OIDC = { issuer: "https://id.example.com", clientId: "shop", clientSecret: "oidc-s3cret" };
const OAUTH = { provider: { github: { clientId: "cid", clientSecret: "gh-s3cret" } } };
const WEBHOOK = { provider: "github", secret: "wh-s3cret" };

/** Where a zod schema leads along a wire path ("*": any key of an object or a record). */
function schemaAt(schema: z.ZodType, path: readonly string[]): z.ZodType | undefined {
  let s: z.ZodType | undefined = schema;
  for (const seg of path) {
    while (s instanceof z.ZodDefault || s instanceof z.ZodNullable || s instanceof z.ZodOptional)
      s = s.unwrap() as z.ZodType;
    if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
    if (!(s instanceof z.ZodObject)) return undefined;
    const shape = s.shape as Record<string, z.ZodType>;
    s = seg === "*" ? Object.values(shape)[0] : shape[seg];
  }
  return s;
}

test("each secret path of the contract reaches a string field of its module's request", () => {
  for (const [module, ...path] of ROUTE_SECRET_PATHS) {
    const field = schemaAt(ROUTE_MODULES[module].request, path);
    expect(field && z.toJSONSchema(field, { io: "input" }).type).toBe("string");
  }
  // Every slot of OAuth has a client_secret.
  const slots = schemaAt(ROUTE_MODULES.oauth.request, ["provider"]) as z.ZodObject;
  for (const slot of Object.keys(slots.shape))
    expect(schemaAt(ROUTE_MODULES.oauth.request, ["provider", slot, "client_secret"])).toBeDefined();
  expect(ROUTE_SECRET_LEAVES).toEqual([
    ["webhookVerification", "secret"],
    ["oauth", "provider", "*", "clientSecret"],
    ["oidc", "clientSecret"],
  ]);
});

describe("the brain's leaf walk", () => {
  test("mapLeaves maps only the leaves, copying along the path; absent stays absent", () => {
    const value = { oidc: { ...OIDC }, oauth: OAUTH, description: "d" };
    const out = mapLeaves(value, ROUTE_SECRET_LEAVES, (v) => `<${String(v)}>`);
    expect(out).toEqual({
      oidc: { ...OIDC, clientSecret: "<oidc-s3cret>" },
      oauth: { provider: { github: { clientId: "cid", clientSecret: "<gh-s3cret>" } } },
      description: "d",
    });
    expect(value.oidc.clientSecret).toBe("oidc-s3cret");
    expect("webhookVerification" in out).toBe(false);
  });

  test("a value the walk cannot enter (an unknown) is mapped whole", () => {
    const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    expect(mapLeaves({ oidc: unknown }, ROUTE_SECRET_LEAVES, (v) => ["whole", v])).toEqual({
      oidc: ["whole", unknown],
    });
  });

  test("leafRelation: at, inside, above or apart from a leaf", () => {
    expect(leafRelation(["oidc", "clientSecret"], ROUTE_SECRET_LEAVES)).toEqual({ secret: true });
    expect(leafRelation(["oauth", "provider", "google", "clientSecret"], ROUTE_SECRET_LEAVES)).toEqual({
      secret: true,
    });
    expect(leafRelation(["oauth", "provider"], ROUTE_SECRET_LEAVES)).toEqual({
      secret: false,
      below: [["*", "clientSecret"]],
    });
    expect(leafRelation(["oidc", "issuer"], ROUTE_SECRET_LEAVES)).toEqual({ secret: false, below: [] });
  });
});

/** A value's secret leaves as the engine will see them: the paths wrapped as secrets. */
function secretPaths(value: unknown, at: string[] = []): string[] {
  if (isSecretWrapper(value)) return [at.join(".")];
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => secretPaths(v, [...at, k]));
}

describe.each(["packaged", "dynamic"] as const)("%s face: check answers leaves secret", (face) => {
  const check = async (
    news: Record<string, unknown>,
  ): Promise<{ inputs: unknown; failures: CheckFailure[] }> => {
    if (face === "packaged") {
      const { inputs, failures = [] } = await new EdgeProvider().check(URN, {}, news);
      return { inputs, failures };
    }
    const { inputs, failures = [] } = await dynamicProvider("httpsEdgeRoute", new ProviderProcess()).check!(
      {},
      news,
    );
    return { inputs, failures };
  };

  test("unmarked credentials: only the leaves are wrapped", async () => {
    const { inputs, failures } = await check({ ...base, oidc: OIDC, webhookVerification: WEBHOOK });
    expect(failures).toEqual([]);
    expect(secretPaths(inputs)).toEqual(["webhookVerification.secret", "oidc.clientSecret"]);
    const oauth = await check({ ...base, oauth: OAUTH });
    expect(secretPaths(oauth.inputs)).toEqual(["oauth.provider.github.clientSecret"]);
    expect(reveal(oauth.inputs)).toMatchObject({ oauth: OAUTH });
  });

  test("a module without credentials has no secret", async () => {
    const { inputs } = await check({ ...base, circuitBreaker: { numBuckets: 4 } });
    expect(secretPaths(inputs)).toEqual([]);
  });

  test("a nested failure names its property; a credential in it is never shown", async () => {
    const buckets = await check({ ...base, circuitBreaker: { numBuckets: 500 } });
    expect(buckets.failures).toEqual([
      { property: "circuitBreaker", reason: "numBuckets is 500: must be between 1 and 128" },
    ]);
    // Unmarked (the dynamic face never sees a mark): the leaf is hidden, and the failure names no
    // property, since the engine would print that property's value as the program gave it.
    const sns = await check({ ...base, webhookVerification: { provider: "sns", secret: "wh-s3cret" } });
    expect(sns.failures).toEqual([
      { property: "", reason: 'webhookVerification.secret is [secret]: must not be set for provider "sns"' },
    ]);
    const two = await check({
      ...base,
      oauth: {
        provider: { github: OAUTH.provider.github, google: { clientId: "x", clientSecret: "g-s3cret" } },
      },
    });
    expect(two.failures).toHaveLength(1);
    expect(two.failures[0]).toMatchObject({ property: "" });
    expect(two.failures[0]!.reason).toMatch(
      /^oauth\.provider is \{.*"clientSecret":"\[secret\]".*: must configure/,
    );
    expect(JSON.stringify(two.failures)).not.toMatch(/s3cret/);
  });
});

test("packaged: a marked credential keeps the failure on its property", async () => {
  const news = { ...base, webhookVerification: { provider: "sns", secret: secret("wh-s3cret") } };
  const { failures = [] } = await new EdgeProvider().check(URN, {}, news);
  expect(failures).toEqual([
    { property: "webhookVerification", reason: 'secret is [secret]: must not be set for provider "sns"' },
  ]);
});

test("packaged: a program's mark inside a module stays a leaf; the module is not made secret", async () => {
  const news = { ...base, oidc: { ...OIDC, clientId: secret("shop") } };
  const { inputs } = await new EdgeProvider().check(URN, {}, news);
  expect(secretPaths(inputs)).toEqual(["oidc.clientId", "oidc.clientSecret"]);
  // As the engine does for providers that take no secrets: a whole-module mark stays whole.
  expect(secretPaths(keepSecretsOf({ oidc: { ...OIDC } }, { oidc: secret(OIDC) }))).toEqual(["oidc"]);
});

test("engineFailures: a value the face sees as secret is hidden, nested or whole", () => {
  const seen = { isSecretWrapper, leaves: ROUTE_SECRET_LEAVES };
  const failure = { property: "requestHeaders.add.X", reason: "bad" };
  expect(engineFailures([failure], { requestHeaders: { add: { X: secret("v") } } }, seen)).toEqual([
    { property: "requestHeaders", reason: "add.X is [secret]: bad" },
  ]);
  expect(engineFailures([failure], { requestHeaders: secret({ add: { X: "v" } }) }, seen)).toEqual([
    { property: "requestHeaders", reason: "add.X is [secret]: bad" },
  ]);
  // Top-level failures are left to the engine, which prints the input as it has it, unless that
  // would show a credential; a marked or empty one is not shown.
  const oidcFailure = [{ property: "oidc", reason: "r" }];
  expect(engineFailures(oidcFailure, {}, seen)).toEqual(oidcFailure);
  expect(engineFailures(oidcFailure, { oidc: { clientSecret: secret("s") } }, seen)).toEqual(oidcFailure);
  expect(engineFailures(oidcFailure, { oidc: secret({ clientSecret: "s" }) }, seen)).toEqual(oidcFailure);
  expect(engineFailures(oidcFailure, { oidc: { clientSecret: "s" } }, seen)).toEqual([
    { property: "", reason: "oidc: r" },
  ]);
});

test("schema: the credential fields are secret in their object types, no module is secret whole", () => {
  const schema = buildSchema("0.0.0");
  const route = schema.resources["edge:index:HttpsEdgeRoute"]!;
  for (const props of [route.inputProperties, route.properties])
    for (const [name, spec] of Object.entries(props)) expect([name, spec.secret]).toEqual([name, undefined]);
  const secretFields = Object.entries(schema.types).flatMap(([token, t]) =>
    "properties" in t
      ? Object.entries(t.properties)
          .filter(([, p]) => p.secret)
          .map(([k]) => `${token.replace("edge:index:", "")}.${k}`)
      : [],
  );
  expect(secretFields.sort()).toEqual([
    "RouteOAuthGithub.clientSecret",
    "RouteOAuthIdentityProvider.clientSecret",
    "RouteOidc.clientSecret",
    "RouteWebhookVerification.secret",
  ]);
});
