/**
 * examples/yaml: Pulumi YAML on the packaged provider. Its resources are checked against the
 * schema always (a renamed property fails here, with or without a YAML host). It is deployed
 * through the real engine when a `pulumi-language-yaml` host is installed: the host ships in the
 * official CLI archive, and the Go module proxy this project builds the engine from refuses it,
 * so on machines without it the deploy test is skipped with that reason in its title.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { parse } from "yaml";
import { quiet, stateExport } from "../engine/support/harness";
import { declareCheckoutPlugin } from "../packaged/support/plugin";
import { programWorkspace, type Workspace } from "../support/workspace";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const EXAMPLE = join(engine.ROOT, "examples", "yaml");

interface SchemaProperty {
  $ref?: string;
  type?: string;
  items?: SchemaProperty;
  additionalProperties?: SchemaProperty;
}
interface Schema {
  resources: Record<string, { inputProperties: Record<string, SchemaProperty> }>;
  types: Record<string, { properties?: Record<string, SchemaProperty>; enum?: unknown[] }>;
}
const schema = JSON.parse(
  readFileSync(join(engine.ROOT, "provider", "plugin", "schema.json"), "utf8"),
) as Schema;
const program = parse(readFileSync(join(EXAMPLE, "Pulumi.yaml"), "utf8")) as {
  config?: Record<string, { secret?: boolean; default?: unknown }>;
  resources: Record<string, { type: string; properties: Record<string, unknown> }>;
};
const OIDC_SECRET = "yaml-example-oidc-secret";

test("examples/yaml declares no secret config key with a default (the official CLI refuses to deploy one)", () => {
  // `Stack 'dev' with configuration key 'oidcClientSecret' must be encrypted as it's secret`:
  // a default is plaintext in Pulumi.yaml, so a secret key must be set with `config set --secret`.
  const secretWithDefault = Object.entries(program.config ?? {})
    .filter(([, c]) => c.secret && c.default !== undefined)
    .map(([key]) => key);
  expect(secretWithDefault).toEqual([]);
  expect(program.config?.oidcClientSecret).toEqual({ type: "string", secret: true });
});

/** Paths of the properties in `value` that the schema does not declare. */
function undeclared(value: unknown, props: Record<string, SchemaProperty>, at: string): string[] {
  if (!value || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const prop = props[key];
    if (!prop) return [`${at}${key}`];
    const ref = prop.$ref?.replace("#/types/", "");
    const nested = ref ? schema.types[ref]?.properties : undefined;
    return nested ? undeclared(v, nested, `${at}${key}.`) : [];
  });
}

test.each(Object.entries(program.resources))(
  "examples/yaml resource %s uses only the schema's types and properties",
  (_name, { type, properties }) => {
    const resource = schema.resources[type];
    expect(resource).toBeDefined();
    expect(undeclared(properties, resource!.inputProperties, "")).toEqual([]);
  },
);

/** Where the engine finds a language host: beside the CLI, on PATH, or in the plugin cache. */
function yamlHost(): string | undefined {
  const name = "pulumi-language-yaml";
  for (const dir of [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)])
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  const plugins = join(process.env.PULUMI_HOME ?? join(homedir(), ".pulumi"), "plugins");
  const cached = existsSync(plugins)
    ? readdirSync(plugins).find((d) => d.startsWith("language-yaml-"))
    : undefined;
  return cached && join(plugins, cached, name);
}

/** The copies a test made, removed after it (jest runs afterEach after a timeout too). */
const made: Workspace[] = [];
afterEach(() => {
  for (const ex of made.splice(0)) ex.cleanup();
});

const host = yamlHost();
const deploy = host ? test : test.skip;
deploy(
  host
    ? `examples/yaml deploys, previews no changes, keeps its secret encrypted and destroys (host: ${host})`
    : "examples/yaml deploy: SKIPPED, no pulumi-language-yaml host on this machine (it ships in the official Pulumi CLI archive; the Go module proxy refuses it)",
  async () => {
    const ex = programWorkspace(EXAMPLE, "example-yaml");
    made.push(ex);
    // The example names no plugin (a user's engine takes it from its cache); the tests' engine
    // downloads nothing, so it gets this checkout's by path.
    declareCheckoutPlugin(ex.dir);
    const stack = await engine.directoryStack({ workDir: ex.dir, stateDir: ex.stateDir, stackName: "dev" });
    await stack.setConfig("oidcClientSecret", { value: OIDC_SECRET, secret: true });
    const up = await stack.up(quiet);
    expect(up.summary.resourceChanges?.create).toBe(5);
    expect(up.outputs.routeId!.value).toMatch(/^edghts_\w+\/edghtsrt_\w+$/);
    expect(up.outputs.allowed!.value).toEqual(["ipp_office", "ipp_vpn"]);
    await stack.preview({ ...quiet, expectNoChanges: true });
    expect(await stateExport(stack, ex.stateDir)).not.toContain(OIDC_SECRET);
    await stack.destroy(quiet);
  },
);
