/**
 * A stack of dynamic resources moves to the packaged provider in place: the main stack (the
 * program `npm run up` deploys) is deployed with the dynamic face, its program switched to
 * `pulumi-edge/packaged`, then `pulumi-edge migrate-to-packaged` forgets the dynamic resources and
 * imports the same objects. Nothing is written to the service, no route is recreated (same ids,
 * same creation times), and the program then previews with no changes. The migration runs as in
 * a fresh clone after `npm run up`: no PULUMI_BACKEND_URL, no passphrase set, so it finds the
 * stack where the root Pulumi.yaml's backend says the main job keeps it.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { parse } from "yaml";
import { quiet, type RecordingServer, recordingServer } from "../engine/support/harness";
import { programWorkspace, type Workspace } from "../support/workspace";
import { PLUGIN_DIR } from "./support/plugin";

const PACKAGE_VERSION = (require("../../package.json") as { version: string }).version;

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const MIGRATE = join(engine.ROOT, "dist/commands/cli.js");

let ws: Workspace;
let server: RecordingServer;
let stack: Stack;

/** The root Pulumi.yaml's backend: where `npm run up` keeps the main stack. */
const ROOT_PROJECT = parse(readFileSync(join(engine.ROOT, "Pulumi.yaml"), "utf8")) as {
  backend?: { url?: string };
};
const BACKEND_URL = ROOT_PROJECT.backend?.url ?? "";

/** A user's environment: the pinned `pulumi` on PATH, and no backend or passphrase chosen for it. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${engine.PULUMI_BIN}:${process.env.PATH ?? ""}`,
    PULUMI_SKIP_UPDATE_CHECK: "true",
  };
  for (const name of [
    "PULUMI_BACKEND_URL",
    "PULUMI_ACCESS_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
  ])
    delete env[name];
  return env;
}

async function migrate(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [MIGRATE, "migrate-to-packaged", "--stack", "dev", ...args],
      { cwd: ws.dir, env: userEnv(), encoding: "utf8" },
    );
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const { code, stdout = "", stderr = "" } = e as { code?: number; stdout?: string; stderr?: string };
    return { code: code ?? 1, out: stdout + stderr };
  }
}

/** Every route of every edge on the service: id and creation time (recreation would change both). */
async function serviceRoutes(): Promise<string[]> {
  const out: string[] = [];
  for (const edge of (await server.client.listHttpsEdges()).https_edges) {
    for (const r of edge.routes) out.push(`${r.match} ${r.id} ${r.created_at}`);
  }
  return out.sort();
}

/** The switch a user makes: the import line, and the plugin in Pulumi.yaml. */
function switchProgram() {
  const index = join(ws.dir, "index.ts");
  writeFileSync(
    index,
    readFileSync(index, "utf8").replace(`from "pulumi-edge";`, `from "pulumi-edge/packaged";`),
  );
  const project = join(ws.dir, "Pulumi.yaml");
  if (!readFileSync(project, "utf8").includes("plugins:"))
    writeFileSync(
      project,
      `${readFileSync(project, "utf8")}plugins:\n  providers:\n    - name: edge\n      version: ${PACKAGE_VERSION}\n      path: ${PLUGIN_DIR}\n`,
    );
}

test("the main job keeps its stacks where the root Pulumi.yaml's backend points the pulumi CLI", () => {
  expect(BACKEND_URL).toMatch(/^file:\/\/\./);
  expect(resolve(engine.ROOT, BACKEND_URL.slice("file://".length))).toBe(join(engine.ROOT, ".pulumi-state"));
  if (!process.env.EDGE_STACK_STATE_DIR)
    expect(engine.MAIN_STATE_DIR).toBe(join(engine.ROOT, ".pulumi-state"));
});

beforeAll(async () => {
  ws = programWorkspace(join(engine.ROOT, "examples", "main-stack"), "migrate");
  // The root project as `npm run up` deploys it, its program in this directory.
  writeFileSync(
    join(ws.dir, "Pulumi.yaml"),
    `name: edge-demo\nruntime:\n  name: nodejs\n  options:\n    typescript: true\nbackend:\n  url: ${BACKEND_URL}\n`,
  );
  const stateDir = resolve(ws.dir, BACKEND_URL.slice("file://".length));
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-migrate-")));
  stack = await engine.directoryStack({ workDir: ws.dir, stackName: "dev", stateDir });
  await stack.setConfig("edge:baseUrl", { value: server.url });
  await stack.up(quiet);
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

test("before the program is switched, the migration refuses and changes nothing", async () => {
  const before = await stack.exportStack();
  const { code, out } = await migrate("--yes");
  expect(code).toBe(1);
  expect(out).toMatch(
    /does not declare edge:index:HttpsEdge "web", edge:index:HttpsEdgeRoute "api", .*import them from "pulumi-edge\/packaged"/s,
  );
  expect((await stack.exportStack()).deployment.resources).toEqual(before.deployment.resources);
});

test("when pulumi-edge/packaged is not built, the failure shows the program's error and what to do", async () => {
  switchProgram();
  // A pulumi-edge whose SDKs were never generated (a checkout after `npm run up` only), found
  // first from the program's directory.
  const unbuilt = join(ws.dir, "node_modules", "pulumi-edge");
  mkdirSync(unbuilt, { recursive: true });
  writeFileSync(join(unbuilt, "package.json"), readFileSync(join(engine.ROOT, "package.json")));
  try {
    const before = await stack.exportStack();
    const { code, out } = await migrate("--yes");
    expect(code).toBe(1);
    // The program's own failure, as the engine reported it (Node's, or TS2307 when type-checked).
    expect(out).toMatch(/pulumi preview .* failed \(exit 1\)/);
    expect(out).toMatch(/Cannot find module '[^']*pulumi-edge\/(packaged|dist\/packaged\/index\.js)'/);
    expect(out).toMatch(/Next: pulumi-edge\/packaged .* run `npm run sdks`/);
    expect(out).not.toMatch(/PULUMI_ACCESS_TOKEN/);
    expect((await stack.exportStack()).deployment.resources).toEqual(before.deployment.resources);
  } finally {
    rmSync(join(ws.dir, "node_modules"), { recursive: true, force: true });
  }
});

test("switched program + migrate-to-packaged: no write to the service, no route recreated, no changes left", async () => {
  const routesBefore = await serviceRoutes();
  expect(routesBefore).toHaveLength(3);
  switchProgram();
  server.reset();

  const dry = await migrate();
  expect(dry.code).toBe(0);
  expect(dry.out).toMatch(/forget \(not delete\) 8 dynamic resources, then import:/);
  expect(dry.out).toMatch(/edge:index:HttpsEdgeRoute "api" edghts_\w+\/edghtsrt_\w+/);
  expect(dry.out).toMatch(/dry run/);

  const done = await migrate("--yes");
  expect([done.code, done.out]).toEqual([0, expect.stringMatching(/done/)]);
  expect(server.mutations()).toEqual([]);

  const state = JSON.stringify((await stack.exportStack()).deployment);
  expect(state).not.toContain("__provider");
  expect(state).not.toContain("pulumi-nodejs:dynamic");
  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.up(quiet);
  expect(server.mutations()).toEqual([]);
  expect(await serviceRoutes()).toEqual(routesBefore);
  await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
});

test("the migrated stack destroys cleanly", async () => {
  const destroy = await stack.destroy(quiet);
  expect(destroy.summary.resourceChanges?.delete).toBe(7);
  expect((await server.client.listHttpsEdges()).https_edges).toEqual([]);
});
