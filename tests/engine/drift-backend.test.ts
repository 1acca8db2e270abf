/**
 * The fast drift path reads a file backend's stack files itself (commands/drift/backend.ts)
 * instead of running `pulumi stack export` and `pulumi stack history` (a quarter second of CPU
 * each, per stack): held here against the real CLI's answers for the same stacks, in each layout
 * and compression the CLI writes, with a `pulumi` on the command's PATH that logs every run. What
 * it must leave to the CLI (a state holding an encrypted secret the check reads) goes to the CLI.
 * No program runs: the states are the CLI's own (`stack init`, `refresh`, `destroy`, `stack
 * import`).
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { projectBackend, stackFiles } from "../../commands/drift/backend";
import { pulumiEnv } from "../../commands/drift/run";
import { type Engine, readStack, stackFilesOf, stacksOnDisk } from "../../commands/drift/stacks";
import { encryptedRead, stateOf } from "../../commands/drift/state";
import { UnknownPlace } from "../../provider/identity/place";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

let dir: string;
/** Every `pulumi` run the drift code makes, one line each (its arguments). */
let log: string;
let command: PulumiCommand;

beforeAll(async () => {
  engine.assertEngine();
  dir = mkdtempSync(join(tmpdir(), "drift-backend-"));
  // A `pulumi` that logs its arguments, then runs the pinned one.
  const bin = join(dir, "logging-pulumi", "bin");
  mkdirSync(bin, { recursive: true });
  log = join(dir, "runs.log");
  writeFileSync(
    join(bin, "pulumi"),
    `#!/bin/sh\necho "$*" >> '${log}'\nexec '${join(engine.PULUMI_BIN, "pulumi")}' "$@"\n`,
  );
  chmodSync(join(bin, "pulumi"), 0o755);
  command = await PulumiCommand.get({ root: join(dir, "logging-pulumi"), skipVersionCheck: true });
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment of a run: an empty PULUMI_HOME of its own, the empty passphrase. */
function envFor(name: string, extra: Record<string, string> = {}): Record<string, string> {
  const home = join(dir, name, "pulumi-home");
  mkdirSync(home, { recursive: true });
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => !/^PULUMI_/.test(e[0]) && !!e[1]),
  );
  return pulumiEnv({
    ...inherited,
    PATH: `${engine.PULUMI_BIN}:${process.env.PATH ?? ""}`,
    PULUMI_HOME: home,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_CONFIG_PASSPHRASE: "",
    ...extra,
  });
}

const pulumi = (args: string[], cwd: string, env: Record<string, string>) =>
  execFileSync(join(engine.PULUMI_BIN, "pulumi"), [...args, "--non-interactive"], {
    cwd,
    env,
    encoding: "utf8",
  });

/** A project directory named `name` with this project file (its name is the project's). */
function project(name: string, file: "Pulumi.json" | "Pulumi.yaml", backendUrl?: string): string {
  const projectDir = join(dir, name, "project");
  mkdirSync(projectDir, { recursive: true });
  const config = { name, runtime: "nodejs", ...(backendUrl ? { backend: { url: backendUrl } } : {}) };
  writeFileSync(
    join(projectDir, file),
    file === "Pulumi.json"
      ? JSON.stringify(config)
      : `name: ${name}\nruntime: nodejs\n${backendUrl ? `backend:\n  url: ${backendUrl}\n` : ""}`,
  );
  return projectDir;
}

/**
 * A deployment of this provider's resources, with `secret` as a secret input when given: the
 * stack's own (its manifest and secrets provider, as `stack export` gives them) with them added.
 */
function deployment(projectDir: string, env: Record<string, string>, projectName: string, secret?: string) {
  const urn = (type: string, name: string) => `urn:pulumi:dev::${projectName}::${type}::${name}`;
  const provider = urn("pulumi:providers:pulumi-nodejs", "default");
  const inputs = {
    description: "web",
    hostports: ["web.example.com:443"],
    ...(secret === undefined
      ? {}
      : {
          token: {
            "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
            plaintext: JSON.stringify(secret),
          },
        }),
  };
  const own = cliExport(projectDir, env, false).deployment as object;
  return {
    version: 3,
    deployment: {
      ...own,
      resources: [
        {
          urn: provider,
          custom: true,
          id: "p-1",
          type: "pulumi:providers:pulumi-nodejs",
          inputs: {},
          outputs: {},
        },
        {
          urn: urn("pulumi-nodejs:dynamic/edge:HttpsEdge", "web"),
          custom: true,
          id: "edghts_web",
          type: "pulumi-nodejs:dynamic/edge:HttpsEdge",
          inputs,
          outputs: { ...inputs, uri: "http://127.0.0.1:9/edges/https/edghts_web" },
          provider: `${provider}::p-1`,
        },
      ],
    },
  };
}

/** What the drift code ran of the CLI since the last call (and forgets it). */
function runs(): string[] {
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    // nothing ran yet
  }
  rmSync(log, { force: true });
  return text.split("\n").filter(Boolean);
}

const engineOf = (env: Record<string, string>): Engine => ({
  command,
  env,
  progress: () => undefined,
  selecting: new Map(),
});

const cliExport = (projectDir: string, env: Record<string, string>, showSecrets: boolean) =>
  JSON.parse(
    pulumi(
      ["stack", "export", "--stack", "dev", ...(showSecrets ? ["--show-secrets"] : [])],
      projectDir,
      env,
    ),
  ) as { deployment: unknown };

const cliLast = (projectDir: string, env: Record<string, string>) => {
  const [first] = JSON.parse(pulumi(["stack", "history", "--json", "--stack", "dev"], projectDir, env)) as {
    kind: string;
    result: string;
  }[];
  return first && { kind: first.kind, result: first.result };
};

describe.each<{ layout: string; extra: Record<string, string>; checkpoint: RegExp }>([
  { layout: "projects", extra: {}, checkpoint: /^dev\.json$/ },
  { layout: "projects, gzip", extra: { PULUMI_DIY_BACKEND_GZIP: "true" }, checkpoint: /^dev\.json\.gz$/ },
  {
    layout: "legacy",
    // Deprecated in 3.259.0: the CLI refuses it unless told to go on, and the stacks of a user who does are read too.
    extra: { PULUMI_DIY_BACKEND_LEGACY_LAYOUT: "true", PULUMI_DIY_BACKEND_IGNORE_DEPRECATION_ERROR: "1" },
    checkpoint: /^dev\.json$/,
  },
])(
  "a file backend, $layout layout: what the CLI says, without running it",
  ({ layout, extra, checkpoint }) => {
    const name = `p-${layout.replace(/\W+/g, "-")}`;
    let projectDir: string;
    let env: Record<string, string>;
    const target = () => ({ dir: projectDir, stack: "dev" });

    beforeAll(() => {
      projectDir = project(name, "Pulumi.json", "file://./state");
      mkdirSync(join(projectDir, "state"));
      env = envFor(name, extra);
      pulumi(["stack", "init", "dev"], projectDir, env);
    }, 60_000);

    test("its stacks, as `pulumi stack ls` lists them (the legacy layout: the CLI's to list)", () => {
      pulumi(["stack", "init", "b.2", "--no-select"], projectDir, env);
      pulumi(["stack", "init", "A_1", "--no-select"], projectDir, env);
      const cli = (JSON.parse(pulumi(["stack", "ls", "--json"], projectDir, env)) as { name: string }[]).map(
        (x) => x.name,
      );
      expect(cli).toEqual(["A_1", "b.2", "dev"]);
      expect(stacksOnDisk(projectDir, env)).toEqual(layout === "legacy" ? undefined : cli);
    });

    test("the stack's files are where the CLI keeps them; its lock directory is its fully qualified name", () => {
      const files = stackFilesOf(target(), env);
      expect(typeof files).toBe("object");
      if (typeof files !== "object") return;
      const state = realpathSync(join(projectDir, "state"));
      expect(files.checkpoint.startsWith(join(state, ".pulumi", "stacks"))).toBe(true);
      const [stackDir, base] = [join(files.checkpoint, ".."), "dev"];
      expect(
        readdirSync(stackDir).filter((f) => f.startsWith(`${base}.`) && !/\.(attrs|bak)$/.test(f)),
      ).toEqual([expect.stringMatching(checkpoint)]);
      const fqn = pulumi(
        ["stack", "--show-name", "--fully-qualify-stack-names", "--stack", "dev"],
        projectDir,
        env,
      ).trim();
      expect(files.locks).toBe(join(state, ".pulumi", "locks", ...fqn.split("/")));
      expect(fqn).toBe(layout === "legacy" ? "dev" : `organization/${name}/dev`);
    });

    test("the newest history entry and the state, as `stack history` and `stack export` give them", async () => {
      // Never updated: no history; the state as the CLI exports it.
      runs();
      let read = await readStack(target(), engineOf(env));
      expect(runs()).toEqual([]);
      expect(read.last).toBeUndefined();
      expect(read.last).toEqual(cliLast(projectDir, env));
      expect(read.exported.deployment).toEqual(cliExport(projectDir, env, true).deployment);

      // Two operations: the newer is the one read.
      pulumi(["refresh", "--yes"], projectDir, env);
      pulumi(["destroy", "--yes"], projectDir, env);
      pulumi(
        ["stack", "import", "--file", writeJson("import.json", deployment(projectDir, env, name))],
        projectDir,
        env,
      );
      runs();
      read = await readStack(target(), engineOf(env));
      expect(runs()).toEqual([]);
      expect(read.last).toEqual({ kind: "destroy", result: "succeeded" });
      expect(read.last).toEqual(cliLast(projectDir, env));
      expect(read.exported.deployment).toEqual(cliExport(projectDir, env, true).deployment);
      expect(stateOf(read.exported).resources.map((r) => r.id)).toEqual(["p-1", "edghts_web"]);
    }, 120_000);

    test("a state holding an encrypted secret of this provider's resource: read by the CLI, which decrypts it", async () => {
      pulumi(
        ["stack", "import", "--file", writeJson("secret.json", deployment(projectDir, env, name, "whsec_1"))],
        projectDir,
        env,
      );
      // The checkpoint holds it encrypted, as the CLI wrote it.
      expect(JSON.stringify(cliExport(projectDir, env, false).deployment)).toContain('"ciphertext"');
      expect(
        encryptedRead(
          stateOf({ version: 3, deployment: cliExport(projectDir, env, false).deployment }).resources,
        ),
      ).toBe(`urn:pulumi:dev::${name}::pulumi-nodejs:dynamic/edge:HttpsEdge::web`);
      runs();
      const read = await readStack(target(), engineOf(env));
      expect(runs()).toEqual([expect.stringMatching(/^stack export --show-secrets --stack dev\b/)]);
      expect(read.exported.deployment).toEqual(cliExport(projectDir, env, true).deployment);
      expect(JSON.stringify(read.exported)).toContain(JSON.stringify(JSON.stringify("whsec_1")));
    }, 120_000);
  },
);

function writeJson(file: string, value: unknown): string {
  const path = join(dir, file);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

test("the backend, as the CLI resolves it: PULUMI_BACKEND_URL, else the project's backend.url (relative to it), else the login", () => {
  const projectDir = project("resolve", "Pulumi.json", "file://./state");
  mkdirSync(join(projectDir, "state"));
  const whoami = (env: Record<string, string>) =>
    (JSON.parse(pulumi(["whoami", "--json"], projectDir, env)) as { url: string }).url;

  const own = envFor("resolve");
  const fromProject = projectBackend(projectDir, own);
  expect(fromProject).toEqual({
    url: whoami(own),
    namedBy: `backend.url in ${join(projectDir, "Pulumi.json")}`,
    dir: realpathSync(join(projectDir, "state")),
  });

  const elsewhere = join(dir, "resolve", "elsewhere");
  mkdirSync(elsewhere);
  const viaEnv = envFor("resolve", { PULUMI_BACKEND_URL: `file://${elsewhere}` });
  expect(projectBackend(projectDir, viaEnv)).toEqual({
    url: whoami(viaEnv),
    namedBy: "PULUMI_BACKEND_URL",
    dir: realpathSync(elsewhere),
  });

  // No backend.url: the login's.
  const plain = project("resolve-login", "Pulumi.yaml");
  const login = envFor("resolve-login");
  pulumi(["login", `file://${elsewhere}`], plain, login);
  const viaLogin = projectBackend(plain, login);
  expect(viaLogin instanceof UnknownPlace).toBe(false);
  expect(viaLogin).toMatchObject({ url: `file://${elsewhere}`, dir: realpathSync(elsewhere) });
  expect((viaLogin as { namedBy: string }).namedBy).toMatch(
    /^`pulumi login`, since neither PULUMI_BACKEND_URL nor backend.url/,
  );
  expect(stackFiles(realpathSync(elsewhere), "resolve-login", "organization/other/dev")?.checkpoint).toBe(
    join(realpathSync(elsewhere), ".pulumi", "stacks", "other", "dev"),
  );
});
