/**
 * The dynamic classes' outputs are the packaged schema's: the same names, the same descriptions
 * (one doc source: the contract and provider/model/docs.ts, through the generated
 * provider/resources/outputs.ts), each typed as an Output, and each a real Output at runtime (the
 * class registers it). A module added to the contract, or an output declared by hand on a class,
 * fails here until both faces agree.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import ts from "typescript";
import type { PackageSchema } from "../../provider/plugin/schema";

const ROOT = join(__dirname, "../..");
const schema = JSON.parse(readFileSync(join(ROOT, "provider/plugin/schema.json"), "utf8")) as PackageSchema;
const CLASSES = ["HttpsEdge", "TlsEdge", "HttpsEdgeRoute", "TlsEdgeIpRestriction"] as const;
const schemaOutputs = (name: string) =>
  Object.fromEntries(
    Object.entries(schema.resources[`edge:index:${name}`]!.properties).map(([k, p]) => [k, p.description]),
  );

test("each class's outputs, as the compiler sees them, are the schema's: names, descriptions, Output types", () => {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  )!;
  const entry = join(ROOT, "provider/resources/index.ts");
  const program = ts.createProgram([entry], { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!);
  for (const name of CLASSES) {
    const exported = exports.find((s) => s.name === name)!;
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const instance = checker.getDeclaredTypeOfSymbol(symbol);
    // This package's members (Pulumi's own, `urn` and `id`, are declared in node_modules).
    const own = checker
      .getPropertiesOfType(instance)
      .filter((p) => p.declarations?.some((d) => !d.getSourceFile().fileName.includes("node_modules")));
    const found = Object.fromEntries(
      own.map((p) => [p.name, ts.displayPartsToString(p.getDocumentationComment(checker))]),
    );
    expect({ [name]: found }).toEqual({ [name]: schemaOutputs(name) });
    for (const p of own) {
      const type = checker.typeToString(checker.getTypeOfSymbol(p));
      expect(`${name}.${p.name}: ${type}`).toMatch(/: Output(Instance)?</);
    }
  }
}, 120_000);

test("each class registers every schema output: a real Output at runtime", async () => {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs as Record<string, unknown> }),
      call: () => ({}),
    },
    "project",
    "stack",
    true,
  );
  const resources = await import("../../provider/resources");
  const made: Record<(typeof CLASSES)[number], pulumi.CustomResource> = {
    HttpsEdge: new resources.HttpsEdge("https"),
    TlsEdge: new resources.TlsEdge("tls"),
    HttpsEdgeRoute: new resources.HttpsEdgeRoute("route", {
      edgeId: "edghts_1",
      matchType: "path_prefix",
      match: "/",
    }),
    TlsEdgeIpRestriction: new resources.TlsEdgeIpRestriction("ipr", {
      edgeId: "edgtls_1",
      ipPolicyIds: ["ipp_1"],
    }),
  };
  for (const name of CLASSES) {
    const resource = made[name] as unknown as Record<string, unknown>;
    const notOutputs = Object.keys(schemaOutputs(name)).filter((k) => !pulumi.Output.isInstance(resource[k]));
    expect({ [name]: notOutputs }).toEqual({ [name]: [] });
  }
  // Let the registrations settle before the mocks go.
  await Promise.all(Object.values(made).map((r) => new Promise((resolve) => r.urn.apply((u) => resolve(u)))));
});
