/**
 * `pulumi-edge drift --projects-dir` sees every project the CLI would run, each on the backend
 * the CLI resolves for it (issue 51, case 6; issue 53): a directory of projects whose project file
 * is `Pulumi.json` (the first the CLI tries), one of the dynamic face and one of the packaged
 * face, each with its state in its own directory named by its `backend.url`, while the login
 * names another backend and PULUMI_BACKEND_URL is unset. Both are checked by the fast path, and
 * `--unmanaged` counts what they hold. A project that cannot be checked is an error naming it,
 * and the list of unmanaged objects then says it is not complete (exit 2): the restore steps of
 * docs/operating.md delete what it lists. The command runs from dist, as `npx pulumi-edge drift`.
 */
import { execFile, execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StackReport, Unmanaged } from "../../commands/drift/report";
import { EdgeClient } from "../../sdk/client";
import { createKey } from "../../service/api-keys";
import { type RunningServer, startServer } from "../../service/http/server";
import { httpTransport } from "../../sdk/transport";
import { PLUGIN_DIR } from "../packaged/support/plugin";
import { ensureBuilt, ROOT } from "../support/edge-service";
import { WORK_ROOT } from "../support/workspace";
import { quiet, setSpec } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const PULUMI_EDGE = join(ROOT, "dist/commands/cli.js");
const VERSION = (require("../../package.json") as { version: string }).version;
const BOOTSTRAP = "bootstrap-key.fleet-projects-0123456789abcdefghij";

interface JsonReport {
  exitCode: number;
  summary: { stacks: number; clean: number; drifted: number; error: number; unmanaged?: number };
  stacks: StackReport[];
  unmanaged: Unmanaged;
}

let server: RunningServer;
let dataDir: string;
let fleet: string;
let elsewhere: string;
let home: string;
let ops: EdgeClient;

/** A copy of a test program as a project of `fleet`, its project file Pulumi.json with `extra` in it. */
function jsonProject(fixture: string, name: string, extra: object): string {
  const dir = join(fleet, name);
  cpSync(fixture, dir, {
    recursive: true,
    filter: (src) => !/[/\\](\.edge-service|node_modules|Pulumi\.yaml)$|Pulumi\.[^/\\]+\.yaml$/.test(src),
  });
  const project = {
    name,
    runtime: { name: "nodejs", options: { typescript: true } },
    // Its own backend, relative to the project (the CLI resolves it from the project's directory).
    backend: { url: "file://./state" },
    ...extra,
  };
  writeFileSync(join(dir, "Pulumi.json"), JSON.stringify(project, null, 2));
  mkdirSync(join(dir, "state"));
  return dir;
}

/** `pulumi-edge drift --projects-dir <fleet> --unmanaged --format json`, as a user's shell runs it. */
function drift(): Promise<{ code: number; report: JsonReport; stderr: string }> {
  // No PULUMI_BACKEND_URL, no EDGE_API_KEY: each stack's own backend and own key.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => !/^(PULUMI_|EDGE_)/.test(e[0]) && !!e[1],
    ),
  );
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [PULUMI_EDGE, "drift", "--projects-dir", fleet, "--unmanaged", "--format", "json"],
      {
        cwd: WORK_ROOT,
        env: {
          ...inherited,
          PATH: `${engine.PULUMI_BIN}:${process.env.PATH ?? ""}`,
          PULUMI_HOME: home,
          PULUMI_CONFIG_PASSPHRASE: "",
          PULUMI_SKIP_UPDATE_CHECK: "true",
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        try {
          resolve({
            code: error ? (error.code as number) : 0,
            report: JSON.parse(stdout) as JsonReport,
            stderr,
          });
        } catch {
          reject(new Error(`drift printed no report (exit ${error?.code}):\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

beforeAll(async () => {
  ensureBuilt();
  mkdirSync(WORK_ROOT, { recursive: true });
  dataDir = mkdtempSync(join(WORK_ROOT, "fleet-projects-data-"));
  server = await startServer({ dataDir, port: 0, apiKey: BOOTSTRAP });
  ops = new EdgeClient(
    httpTransport({ baseUrl: server.url, apiKey: await createKey(server.store, "ops", "write"), retries: 0 }),
  );
  fleet = mkdtempSync(join(WORK_ROOT, "fleet-projects-"));
  // The login names a backend that holds none of the fleet's stacks.
  elsewhere = mkdtempSync(join(WORK_ROOT, "fleet-projects-login-"));
  home = join(elsewhere, "pulumi-home");
  mkdirSync(home);
  execFileSync(join(engine.PULUMI_BIN, "pulumi"), ["login", `file://${elsewhere}`, "--non-interactive"], {
    env: { ...process.env, PULUMI_HOME: home, PULUMI_BACKEND_URL: "" },
  });

  const route = (match: string, extra: object = {}) => ({
    matchType: "path_prefix",
    match,
    backend: { backendId: "bkd_1" },
    ...extra,
  });
  const faces = [
    {
      name: "dynamic",
      fixture: join(ROOT, "tests/engine/fixtures/spec-program"),
      extra: {},
      routes: [route("/d")],
    },
    {
      name: "packaged",
      fixture: join(ROOT, "tests/packaged/fixtures/packaged-spec-program"),
      extra: { plugins: { providers: [{ name: "edge", version: VERSION, path: PLUGIN_DIR }] } },
      // A secret in the state: this stack's state is read through the CLI, which decrypts it.
      routes: [route("/p", { webhookVerification: { provider: "github", secret: "secret:hook" } })],
    },
  ];
  for (const face of faces) {
    const dir = jsonProject(face.fixture, face.name, face.extra);
    const stack = await engine.directoryStack({
      workDir: dir,
      stackName: "prod",
      stateDir: join(dir, "state"),
    });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("edge:apiKey", { value: BOOTSTRAP, secret: true });
    await stack.setConfig("hook", { value: "whsec_fleet_1", secret: true });
    await setSpec(stack, {
      edges: ["web"],
      routes: face.routes.map((args, i) => ({ name: `r${i}`, edge: "web", args })),
    });
    await stack.up(quiet);
  }
}, 900_000);

afterAll(async () => {
  await server?.close();
  for (const d of [fleet, elsewhere, dataDir]) if (d) rmSync(d, { recursive: true, force: true });
});

const byStack = (report: JsonReport) =>
  Object.fromEntries(report.stacks.map((s) => [`${s.dir}:${s.stack}`, s]));

test("both Pulumi.json projects, each on its own backend: checked by the fast path, clean, their objects held", async () => {
  const { code, report, stderr } = await drift();
  expect(stderr).toContain("2 stacks to check");
  const stacks = byStack(report);
  expect(Object.keys(stacks).sort()).toEqual([
    `${join(fleet, "dynamic")}:prod`,
    `${join(fleet, "packaged")}:prod`,
  ]);
  for (const s of Object.values(stacks))
    expect([s.verdict, s.path, s.error]).toEqual(["clean", "fast", undefined]);
  expect(report.unmanaged).toEqual({
    stacks: 2,
    complete: true,
    services: [{ service: server.url, objects: [] }],
    caveats: [],
  });
  expect(code).toBe(0);
}, 600_000);

test("an edge made by hand: listed, the list complete, exit 1", async () => {
  const made = await ops.createHttpsEdge({ description: "by hand", hostports: ["hand.example.com:443"] });
  try {
    const { code, report } = await drift();
    expect(report.unmanaged.complete).toBe(true);
    expect(report.unmanaged.services[0]!.objects.map((o) => [o.type, o.id])).toEqual([
      ["HttpsEdge", made.id],
    ]);
    expect(code).toBe(1);
  } finally {
    await ops.deleteHttpsEdge(made.id);
  }
}, 600_000);

test("projects it cannot check: each an error naming it and what to do, the list not complete, exit 2", async () => {
  // A project file the CLI cannot read.
  mkdirSync(join(fleet, "broken"));
  writeFileSync(join(fleet, "broken", "Pulumi.json"), "{ not json");
  // A project whose stacks are in its own .state, which nothing names: the login's backend has none.
  const lost = join(fleet, "lost");
  mkdirSync(join(lost, ".state"), { recursive: true });
  writeFileSync(join(lost, "Pulumi.yaml"), "name: lost\nruntime: nodejs\n");
  execFileSync(join(engine.PULUMI_BIN, "pulumi"), ["stack", "init", "dev", "--non-interactive"], {
    cwd: lost,
    env: { ...process.env, ...engine.engineEnv({ stateDir: join(lost, ".state") }), PULUMI_HOME: home },
    stdio: "pipe",
  });
  const made = await ops.createHttpsEdge({ description: "by hand", hostports: ["hand2.example.com:443"] });
  try {
    const { code, report } = await drift();
    const stacks = byStack(report);
    const broken = stacks[`${join(fleet, "broken")}:*`]!;
    expect(broken.verdict).toBe("error");
    expect(broken.error).toMatch(/Pulumi\.json/);
    const lostReport = stacks[`${lost}:*`]!;
    expect(lostReport.verdict).toBe("error");
    expect(lostReport.error).toBe(
      `the project has no stacks on its backend, file://${elsewhere} (named by \`pulumi login\`, since neither ` +
        `PULUMI_BACKEND_URL nor backend.url in ${join(lost, "Pulumi.yaml")} names one): \`pulumi stack ls\` in ${lost} ` +
        `lists none. Its directory holds a file backend with stacks of this project, file://${join(lost, ".state")}: ` +
        `if those are its stacks, set backend.url in ${join(lost, "Pulumi.yaml")} to file://${join(lost, ".state")}, ` +
        "then check again. Where its stacks are on another backend, set backend.url in " +
        `${join(lost, "Pulumi.yaml")} to that backend (or PULUMI_BACKEND_URL, for every project); where it has none ` +
        "yet, create one (`pulumi stack init`) or leave the project out.",
    );
    // The others still checked; the object listed, but the list says it is not complete.
    expect(stacks[`${join(fleet, "dynamic")}:prod`]!.verdict).toBe("clean");
    expect(stacks[`${join(fleet, "packaged")}:prod`]!.verdict).toBe("clean");
    expect(report.unmanaged.complete).toBe(false);
    expect(report.unmanaged.caveats).toEqual([
      expect.stringMatching(new RegExp(`^${join(fleet, "broken")}: its stacks could not be listed`)),
      expect.stringMatching(
        new RegExp(`^${lost}: its stacks could not be listed \\(the project has no stacks`),
      ),
    ]);
    expect(report.unmanaged.services[0]!.objects.map((o) => o.id)).toEqual([made.id]);
    expect(code).toBe(2);

    // Named in its project file, the lost project's stack is found, and checked.
    writeFileSync(
      join(lost, "Pulumi.yaml"),
      `name: lost\nruntime: nodejs\nbackend:\n  url: file://${join(lost, ".state")}\n`,
    );
    rmSync(join(fleet, "broken"), { recursive: true });
    const again = await drift();
    expect(byStack(again.report)[`${lost}:dev`]).toMatchObject({ verdict: "clean", path: "fast" });
    expect(again.report.unmanaged.complete).toBe(true);
    expect(again.code).toBe(1); // the object made by hand
  } finally {
    await ops.deleteHttpsEdge(made.id);
  }
}, 600_000);
