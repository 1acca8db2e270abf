/**
 * The fast drift path reads a stack's `edge:*` config from its file instead of running `pulumi
 * config` (a quarter second of CPU per stack): held here against the real CLI's answer for the
 * same files (a `stackConfigDir` included), and the cases the file alone cannot decide (a
 * secret, project config, an environment) must go to the CLI (undefined).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configKeysRead } from "../../provider/config";
import { configFromFiles } from "../../commands/drift/stacks";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

let dir: string;
let env: Record<string, string>;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "drift-config-"));
  env = { ...process.env, ...engine.engineEnv({ stateDir: join(dir, "state") }) } as Record<string, string>;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pulumi = (args: string[], cwd: string) =>
  execFileSync("pulumi", [...args, "--non-interactive"], { cwd, env, encoding: "utf8" });

/** A project directory with these files, and a stack `dev` of it on the file backend. */
function project(name: string, files: Record<string, string>): string {
  const projectDir = join(dir, name);
  execFileSync("mkdir", ["-p", projectDir]);
  writeFileSync(join(projectDir, "Pulumi.yaml"), `name: ${name}\nruntime: nodejs\n`);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(projectDir, file), text);
  pulumi(["stack", "init", "dev", "--secrets-provider", "passphrase"], projectDir);
  return projectDir;
}

/** What `pulumi config --show-secrets --json` says of the keys the settings read. */
function cliConfig(projectDir: string, keys: string[]): Record<string, unknown> {
  const all = JSON.parse(
    pulumi(["config", "--show-secrets", "--json", "--stack", "dev"], projectDir),
  ) as Record<string, { value?: string }>;
  return Object.fromEntries(keys.filter((k) => all[k] !== undefined).map((k) => [k, all[k]!.value]));
}

const values = (config: ReturnType<typeof configFromFiles>) =>
  config && Object.fromEntries(Object.entries(config).map(([k, v]) => [k, v.value]));

it("reads the edge keys as the CLI does: strings and numbers, other keys and secrets left alone", () => {
  const projectDir = project("plain", {});
  // Written the way users write them: by the CLI, and by hand (a number, a quoted string).
  pulumi(["config", "set", "edge:baseUrl", "http://127.0.0.1:9/x?y=1", "--stack", "dev"], projectDir);
  pulumi(["config", "set", "--secret", "other:token", "s3cret", "--stack", "dev"], projectDir);
  const file = join(projectDir, "Pulumi.dev.yaml");
  const text = execFileSync("cat", [file], { encoding: "utf8" });
  writeFileSync(file, `${text}  edge:requestTimeoutMs: 15000\n  edge:dataDir: "./state dir"\n`);
  const keys = configKeysRead({});
  const fromFile = configFromFiles(projectDir, "dev", {});
  expect(fromFile).toBeDefined();
  expect(values(fromFile)).toEqual(cliConfig(projectDir, keys));
  expect(values(fromFile)).toEqual({
    "edge:baseUrl": "http://127.0.0.1:9/x?y=1",
    "edge:requestTimeoutMs": "15000",
    "edge:dataDir": "./state dir",
  });
}, 120_000);

it("a secret edge key goes to the CLI, unless the environment's EDGE_API_KEY wins over it", () => {
  const projectDir = project("secret", {});
  pulumi(["config", "set", "edge:baseUrl", "http://127.0.0.1:9", "--stack", "dev"], projectDir);
  pulumi(["config", "set", "--secret", "edge:apiKey", "k-123", "--stack", "dev"], projectDir);
  expect(configFromFiles(projectDir, "dev", {})).toBeUndefined();
  const withEnvKey = configFromFiles(projectDir, "dev", { EDGE_API_KEY: "from-env" });
  expect(values(withEnvKey)).toEqual(cliConfig(projectDir, configKeysRead({ EDGE_API_KEY: "from-env" })));
  expect(values(withEnvKey)).toEqual({ "edge:baseUrl": "http://127.0.0.1:9" });
}, 120_000);

it("a stackConfigDir is where the settings file is read, as the CLI reads it", () => {
  const other = project("other-dir", {});
  const settings = readFileSync(join(other, "Pulumi.dev.yaml"), "utf8");
  mkdirSync(join(other, "config"));
  writeFileSync(
    join(other, "config", "Pulumi.dev.yaml"),
    `${settings}config:\n  edge:baseUrl: http://127.0.0.1:8\n`,
  );
  writeFileSync(join(other, "Pulumi.yaml"), `name: other-dir\nruntime: nodejs\nstackConfigDir: config\n`);
  const fromFile = configFromFiles(other, "dev", {});
  expect(values(fromFile)).toEqual({ "edge:baseUrl": "http://127.0.0.1:8" });
  expect(values(fromFile)).toEqual(cliConfig(other, configKeysRead({})));
}, 120_000);

it("what the stack's file alone cannot decide goes to the CLI; no file is no config", () => {
  const none = project("none", {});
  expect(configFromFiles(none, "dev", {})).toEqual({});
  expect(cliConfig(none, configKeysRead({}))).toEqual({});

  const projectConfig = project("project-config", {});
  writeFileSync(
    join(projectConfig, "Pulumi.yaml"),
    `name: project-config\nruntime: nodejs\nconfig:\n  edge:baseUrl: http://127.0.0.1:7\n`,
  );
  expect(configFromFiles(projectConfig, "dev", {})).toBeUndefined();
  expect(cliConfig(projectConfig, configKeysRead({}))).toEqual({ "edge:baseUrl": "http://127.0.0.1:7" });

  const environment = project("environment", { "Pulumi.dev.yaml": "environment:\n  - edge/prod\n" });
  expect(configFromFiles(environment, "dev", {})).toBeUndefined();

  const structured = project("structured", { "Pulumi.dev.yaml": "config:\n  edge:baseUrl:\n    a: 1\n" });
  expect(configFromFiles(structured, "dev", {})).toBeUndefined();
  expect(configFromFiles(structured, "organization/structured/dev", {})).toBeUndefined();
}, 120_000);
