/**
 * The guide's "A first stack", one per language: examples/<language>/first-stack.sh, the very
 * script whose lines the guide shows (a snippet region of it), run by bash in a copy of its
 * example, as a newcomer runs it:
 *
 * - the release's files as `npm pack` writes them (the npm tarball; beside it the wheel, the Go
 *   module, this platform's plugin and service archives: scripts/postpack.mjs, run as npm runs
 *   it), in a directory of their own (EDGE_DIST);
 * - an empty PULUMI_HOME (so no login, no plugin, no credentials), plugin acquisition on, the
 *   pinned CLI and its language hosts on PATH, nothing of this checkout on it
 *   (node_modules/.bin holds a pulumi-resource-edge);
 * - for Python, Go and YAML no npm: `npm` and `npx` on PATH are tripwires that record a call and
 *   fail, and a recorded call fails the test.
 *
 * What the tests change in the script, and why: `pulumi login --local` logs in to
 * file://<this test's state directory> instead (the CLI resolves `~` from the account's entry,
 * not from HOME, so `--local` would write this machine's own ~/.pulumi). What they add to its
 * environment for this repository's own engine (README, "The Pulumi engine, offline"):
 * PULUMI_PYTHON_CMD for the old Python host, which ignores Pulumi.yaml's virtualenv; npm's
 * prefer-offline, so that a warm npm cache serves the TypeScript install.
 *
 * Go and YAML run where their language hosts are installed (the official CLI archive has them;
 * the Go module proxy this repository builds its engine from does not serve them). Where they
 * are not, the script still runs, and every step before `pulumi up` must pass: the test says
 * that the deploy itself was not tested here.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { backendText, expectNowhere, stateFiles } from "../engine/support/harness";
import { MARKER_VARIABLE, processesMarked, survivors } from "../support/leftovers";
import { scaled } from "../support/machine";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const { regions } = require("../../scripts/snippets.js") as typeof import("../../scripts/snippets.js");
const VERSION = (require("../../package.json") as { version: string }).version;
const PLATFORM = `${process.platform}-${{ x64: "amd64", arm64: "arm64" }[process.arch as string] ?? process.arch}`;
const OIDC_SECRET = "first-stack-oidc-secret-5e1f";

type Language = "typescript" | "python" | "go" | "yaml";

/** What `pulumi up` creates in each example, the stack included (and the dynamic face's anchor). */
const CREATED: Record<Language, number> = { typescript: 4, python: 5, go: 3, yaml: 5 };

/** A language host of the pinned CLI, or on PATH. */
const hostOf = (language: string) =>
  [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)].some(
    (dir) => dir && existsSync(join(dir, `pulumi-language-${language}`)),
  );
const HOSTS: Record<Language, boolean> = {
  typescript: hostOf("nodejs"),
  python: hostOf("python"),
  go: hostOf("go"),
  yaml: hostOf("yaml"),
};

let base: string;
/** EDGE_DIST: the release's files. */
let dist: string;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "edge-first-stack-"));
  dist = join(base, "edge-dist");
  mkdirSync(dist);
  const wheel = join(engine.ROOT, "dist", "python", `pulumi_edge-${VERSION}-py3-none-any.whl`);
  if (!existsSync(wheel)) throw new Error(`${wheel} is missing: run npm run sdks (npm test's pretest does)`);
  // What `npm pack` writes: the tarball (its prepack's build and SDKs are npm test's pretest),
  // then postpack's files beside it, for this platform only.
  execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", dist, "--loglevel=error"], {
    cwd: engine.ROOT,
    stdio: "ignore",
  });
  execFileSync(process.execPath, [join(engine.ROOT, "scripts", "postpack.mjs")], {
    cwd: engine.ROOT,
    stdio: "ignore",
    env: {
      ...process.env,
      npm_command: "pack",
      npm_config_dry_run: "",
      npm_config_pack_destination: dist,
      INIT_CWD: engine.ROOT,
      EDGE_ARCHIVE_PLATFORMS: PLATFORM,
    },
  });
}, scaled(300_000));

afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

test("the release directory holds what the scripts name", () => {
  expect(readdirSync(dist).sort()).toEqual(
    [
      "checksums.txt",
      `edge-service-v${VERSION}-${PLATFORM}.tar.gz`,
      `pulumi-edge-${VERSION}.tgz`,
      `pulumi-edge-go-${VERSION}`,
      `pulumi-resource-edge-v${VERSION}-${PLATFORM}.tar.gz`,
      `pulumi_edge-${VERSION}-py3-none-any.whl`,
    ].sort(),
  );
  for (const language of ["typescript", "python", "go", "yaml"]) {
    const script = readFileSync(join(engine.ROOT, "examples", language, "first-stack.sh"), "utf8");
    // Only names of the release's files, at this version.
    for (const [, file] of script.matchAll(/\$EDGE_DIST\/([^"\s]+)/g))
      expect(existsSync(join(dist, file!.replace("$platform", PLATFORM)))).toBe(true);
  }
});

test("the guide's \"A first stack\" shows each script's snippet region as it is (scripts/snippets.js)", () => {
  // snippets.test.ts checks that every snippet the docs show equals its source; this, that the
  // guide shows these four at all, under its "A first stack".
  const guide = readFileSync(join(engine.ROOT, "docs", "guide.md"), "utf8");
  const section = guide.slice(guide.indexOf("\n## A first stack\n"), guide.indexOf("\n## Which face?\n"));
  for (const language of ["typescript", "python", "go", "yaml"]) {
    const file = `examples/${language}/first-stack.sh`;
    const region = regions(file).get("first-stack");
    expect(region).toMatch(/^pulumi up --yes$/m);
    expect(section).toContain(`<!-- snippet: ${file}#first-stack -->\n\`\`\`sh\n${region}\`\`\``);
  }
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

interface Run {
  code: number | null;
  out: string;
  project: string;
  home: string;
  state: string;
  npmCalls: string[];
}

/** The run in flight, undone after each test (jest runs afterEach after a timeout too). */
let running: { child: ChildProcess; marker: string; dir: string } | undefined;
afterEach(async () => {
  if (!running) return;
  const { child, marker, dir } = running;
  running = undefined;
  if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
  for (const p of processesMarked(marker)) process.kill(p.pid, "SIGKILL");
  await survivors(marker);
  rmSync(dir, { recursive: true, force: true });
});

/** examples/<language>/first-stack.sh, run in a copy of its example; its exit code and output. */
async function firstStack(language: Language): Promise<Run> {
  const dir = join(base, language);
  const project = join(dir, "project");
  const home = join(dir, "pulumi-home");
  const state = join(dir, "state");
  const tripwires = join(dir, "tripwires");
  for (const d of [home, state, tripwires]) mkdirSync(d, { recursive: true });
  cpSync(join(engine.ROOT, "examples", language), project, { recursive: true });

  const scriptFile = join(project, "first-stack.sh");
  const script = readFileSync(scriptFile, "utf8");
  const login = /^pulumi login --local$/gm;
  expect(script.match(login)).toHaveLength(1);
  writeFileSync(scriptFile, script.replace(login, `pulumi login file://${state}`));

  const nodeOnly = language === "typescript";
  const npmLog = join(dir, "npm-calls");
  if (!nodeOnly)
    for (const tool of ["npm", "npx", "corepack"]) {
      writeFileSync(
        join(tripwires, tool),
        `#!/bin/sh\necho "${tool} $*" >> '${npmLog}'\necho "${tool}: not for a ${language} program" >&2\nexit 127\n`,
      );
      chmodSync(join(tripwires, tool), 0o755);
    }
  const path = [
    ...(nodeOnly ? [] : [tripwires]),
    engine.PULUMI_BIN,
    ...(process.env.PATH ?? "")
      .split(delimiter)
      .filter((d) => d && !existsSync(join(d, "pulumi-resource-edge"))),
  ].join(delimiter);
  // A newcomer's shell: none of npm's, Pulumi's or this provider's variables from the test run.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(npm_|PULUMI_|EDGE_|INIT_CWD$)/i.test(k)),
  );
  const marker = `first-stack-${language}-${process.pid}-${Date.now()}`;
  const env: Record<string, string | undefined> = {
    ...inherited,
    PATH: path,
    PULUMI_HOME: home,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_CONFIG_PASSPHRASE: "first-stack-passphrase",
    OIDC_CLIENT_SECRET: OIDC_SECRET,
    EDGE_DIST: dist,
    EDGE_PORT: String(await freePort()),
    GOFLAGS: "",
    GOWORK: "off",
    [MARKER_VARIABLE]: marker,
    // This repository's engine, not the script (README, "The Pulumi engine, offline").
    ...(language === "python" ? { PULUMI_PYTHON_CMD: join(project, "venv", "bin", "python") } : {}),
    ...(nodeOnly
      ? { npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false" }
      : {}),
  };

  const child = spawn("bash", [scriptFile], {
    cwd: project,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running = { child, marker, dir };
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  // The script's trap stopped the service; nothing it started outlives it.
  expect(await survivors(marker)).toEqual([]);
  const npmCalls = existsSync(npmLog) ? readFileSync(npmLog, "utf8").trim().split("\n") : [];
  return { code, out, project, home, state, npmCalls };
}

const passed = (run: Run) => {
  if (run.code !== 0) throw new Error(`first-stack.sh exited ${run.code}:\n${run.out}`);
};

/** What every language's run shows: the service served the program, the state holds no secret. */
function expectDeployedAndDestroyed(language: Language, run: Run) {
  passed(run);
  expect(run.out).toMatch(/edge-service listening on http:\/\/127\.0\.0\.1:\d+ /);
  expect(run.out).toMatch(new RegExp(`\\+ ${CREATED[language]} created`));
  expect(run.out).toMatch(new RegExp(`- ${CREATED[language]} deleted`));
  // The program went to the running service (its request log), not to an embedded one.
  const log = readFileSync(join(run.project, "edge-service.log"), "utf8");
  expect(log).toMatch(/POST \/edges\/https /);
  expect(log).toMatch(/DELETE \/edges\/https\/edghts_\w+ /);
  expect(existsSync(join(run.project, ".edge-service"))).toBe(false);
  // Destroyed: the stack's last checkpoint holds no resource.
  const checkpoint = JSON.parse(
    readFileSync(join(run.state, ".pulumi", "stacks", `edge-${language}`, "dev.json"), "utf8"),
  ) as { checkpoint: { latest?: { resources?: unknown[] } } };
  expect(checkpoint.checkpoint.latest?.resources ?? []).toEqual([]);
  expectNowhere(OIDC_SECRET, stateFiles(run.state).map(backendText));
}

/** Python, Go, YAML: the plugin came from the release's archive into the empty PULUMI_HOME; no npm. */
function expectNoNpmAndTheArchivedPlugin(run: Run) {
  expect(run.npmCalls).toEqual([]);
  expect(existsSync(join(run.home, "plugins", `resource-edge-v${VERSION}`, "pulumi-resource-edge"))).toBe(
    true,
  );
}

test(
  "typescript: npm installs the tarball, pinned; the package's edge-service serves; up, no drift, destroy",
  async () => {
    const run = await firstStack("typescript");
    expectDeployedAndDestroyed("typescript", run);
    const pkg = JSON.parse(readFileSync(join(run.project, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    // Exact versions, as the guide's pin advice says: no ^ ranges saved.
    expect(pkg.dependencies["@pulumi/pulumi"]).toBe(engine.PULUMI_VERSION);
    expect(pkg.dependencies["pulumi-edge"]).toMatch(new RegExp(`^file:.*pulumi-edge-${VERSION}\\.tgz$`));
    expect(pkg.devDependencies.typescript).toBe(require("typescript/package.json").version);
  },
  scaled(300_000),
);

test(
  "python: pip installs the wheel, the engine the archived plugin, the service runs from its archive; no npm",
  async () => {
    const run = await firstStack("python");
    expectDeployedAndDestroyed("python", run);
    expectNoNpmAndTheArchivedPlugin(run);
    const versions = execFileSync(
      join(run.project, "venv", "bin", "python"),
      ["-c", "import importlib.metadata as m; print(m.version('pulumi'), m.version('pulumi_edge'))"],
      { encoding: "utf8" },
    );
    expect(versions.trim()).toBe(`${engine.PULUMI_VERSION} ${VERSION}`);
  },
  scaled(300_000),
);

for (const language of ["go", "yaml"] as const) {
  const host = `pulumi-language-${language}`;
  (HOSTS[language] ? test : test.skip)(
    HOSTS[language]
      ? `${language}: the release's files and the CLI alone: up, no drift, destroy; no npm`
      : `${language} deploy: SKIPPED, no ${host} host on this machine (it ships in the official Pulumi CLI archive; the Go module proxy refuses it)`,
    async () => {
      const run = await firstStack(language);
      expectDeployedAndDestroyed(language, run);
      expectNoNpmAndTheArchivedPlugin(run);
    },
    scaled(600_000),
  );
  (HOSTS[language] ? test.skip : test)(
    `${language}: without ${host} here, every step before \`pulumi up\` runs (the deploy is not tested on this machine)`,
    async () => {
      const run = await firstStack(language);
      expect(run.code).not.toBe(0);
      expect(run.out).toMatch(/edge-service listening on http:\/\/127\.0\.0\.1:\d+ /);
      expect(run.out).toContain("Created stack 'dev'");
      expect(run.out).toContain(`no language plugin '${host}' found`);
      expectNoNpmAndTheArchivedPlugin(run);
      if (language === "go")
        expect(readFileSync(join(run.project, "go.mod"), "utf8")).toContain(
          `replace github.com/pulumi-edge/pulumi-edge/sdk/go => ${dist}/pulumi-edge-go-${VERSION}`,
        );
    },
    scaled(300_000),
  );
}
