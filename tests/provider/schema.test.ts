/**
 * The packaged provider's schema is generated from the contract; the committed copy
 * (provider/plugin/schema.json, from which every language's SDK is generated) must be today's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { renderDynamicArgs, renderDynamicOutputs } from "../../provider/plugin/dynamic-args";
import { buildSchema, type PackageSchema, type PropertySpec } from "../../provider/plugin/schema";
import { toCamel } from "../../provider/model/case";
import {
  MATCH_TYPES,
  NAMEID_FORMATS,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  routeCreateSchema,
} from "../../sdk/contract";

const ROOT = join(__dirname, "../..");
const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const schema = buildSchema(version);

test("the committed schema.json is up to date (else: npm run schema)", () => {
  const committed = JSON.parse(
    readFileSync(join(ROOT, "provider/plugin/schema.json"), "utf8"),
  ) as PackageSchema;
  expect(committed).toEqual(schema);
});

test("the committed dynamic Args are up to date (else: npm run args)", () => {
  // One doc source: the dynamic face's Args and TSDoc are written from this schema.
  expect(readFileSync(join(ROOT, "provider/resources/args.ts"), "utf8")).toBe(renderDynamicArgs(schema));
});

test("the committed dynamic outputs are up to date (else: npm run args)", () => {
  // The classes' outputs and their TSDoc are written from this schema too.
  expect(readFileSync(join(ROOT, "provider/resources/outputs.ts"), "utf8")).toBe(
    renderDynamicOutputs(schema),
  );
});

/** Every property spec of the schema, with where it is. */
function* properties(): Generator<[string, PropertySpec]> {
  for (const [token, r] of Object.entries(schema.resources)) {
    for (const [k, p] of Object.entries(r.inputProperties)) yield [`${token} input ${k}`, p];
    for (const [k, p] of Object.entries(r.properties)) yield [`${token} output ${k}`, p];
  }
  for (const [token, t] of Object.entries(schema.types)) {
    if (t.type === "object") for (const [k, p] of Object.entries(t.properties)) yield [`${token}.${k}`, p];
  }
  for (const [k, p] of Object.entries(schema.config.variables)) yield [`config ${k}`, p];
}

test("every $ref resolves, and every property is described", () => {
  const missing: string[] = [];
  for (const [where, p] of properties()) {
    for (const ref of [p.$ref, p.items?.$ref, p.additionalProperties?.$ref]) {
      if (ref && !schema.types[ref.replace("#/types/", "")]) missing.push(`${where}: ${ref}`);
    }
    if (!p.description) missing.push(`${where}: no description`);
  }
  expect(missing).toEqual([]);
});

test("a route's inputs are the contract's create fields (camelCase), edgeId and adopt; required as the contract says", () => {
  const route = schema.resources["edge:index:HttpsEdgeRoute"]!;
  const wire = Object.keys(routeCreateSchema.shape).map(toCamel);
  expect(Object.keys(route.inputProperties).sort()).toEqual([...wire, "edgeId", "adopt"].sort());
  expect(route.requiredInputs).toEqual(["edgeId", "match", "matchType"]);
  expect(route.inputProperties.edgeId).toMatchObject({ replaceOnChanges: true });
  // Secret are the credential fields inside modules, not modules (tests/provider/secret-leaves.test.ts).
  expect(route.inputProperties.oidc?.secret).toBeUndefined();
});

test("module types have the contract's fields; enums its values", () => {
  for (const m of ROUTE_MODULE_NAMES) {
    const ref = schema.resources["edge:index:HttpsEdgeRoute"]!.inputProperties[toCamel(m)]!.$ref!;
    const type = schema.types[ref.replace("#/types/", "")]!;
    const shape = (ROUTE_MODULES[m].request as unknown as { shape: Record<string, unknown> }).shape;
    expect([m, type.type === "object" ? Object.keys(type.properties).sort() : []]).toEqual([
      m,
      Object.keys(shape).map(toCamel).sort(),
    ]);
  }
  const values = (token: string) => {
    const t = schema.types[token]!;
    return t.type === "string" ? t.enum.map((e) => e.value) : [];
  };
  expect(values("edge:index:MatchType")).toEqual([...MATCH_TYPES]);
  expect(values("edge:index:SamlNameIdFormat")).toEqual([...NAMEID_FORMATS]);
  expect(schema.config.variables.apiKey).toMatchObject({ secret: true });
  // TLS: the client key is a credential; the CA and the client certificate are public.
  expect(schema.config.variables.clientKey).toMatchObject({ type: "string", secret: true });
  for (const k of ["caCertificate", "clientCertificate"]) {
    expect(schema.config.variables[k]).toMatchObject({ type: "string" });
    expect(schema.config.variables[k]).not.toHaveProperty("secret");
  }
});
