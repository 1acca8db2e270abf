/**
 * The bench of the identity tests through the engine (create-identity, boundaries): project
 * checkouts of either face's program with their own backends, a recording service, a proxy that
 * loses the answers of creates, and what the provider says, as patterns.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { type RecordingServer, recordingServer } from "../engine/support/harness";
import { WORK_ROOT } from "../support/workspace";
import { PLUGIN_DIR } from "../packaged/support/plugin";
import { ensureBuilt, faultProxy, killChildren, runPulumi, stateOf } from "./support";

export type Face = "dynamic" | "packaged";
export const SPEC = {
  edges: ["web"],
  routes: [
    { name: "api", edge: "web", args: { matchType: "path_prefix", match: "/api", description: "v1" } },
  ],
  tlsEdges: ["tcp"],
  tls: [{ name: "allow", edge: "tcp", args: { ipPolicyIds: ["ipp_1"] } }],
};
export const FAST = { PULUMI_SKIP_CHECKPOINTS: "true" };
export const FIXTURES: Record<Face, string> = {
  dynamic: join(__dirname, "fixtures", "program"),
  packaged: join(__dirname, "..", "packaged", "fixtures", "packaged-spec-program"),
};

export let server: RecordingServer;
let serviceDir: string;

export type Result = { code: number | null; output: string };

export interface Checkout {
  /** The project's root: where `pulumi` runs, where Pulumi.yaml and the settings file are. */
  root: string;
  /** Its file backend. */
  stateDir: string;
  /** `pulumi <args>` in the root, with the checkout's environment and `env` over it. */
  run(
    args: string[],
    opts?: { env?: Record<string, string>; hostname?: string; stackName?: string },
  ): Promise<Result>;
  /** The ids the stack's state holds (a route's last segment). */
  ids(): Promise<string[]>;
  setSpec(spec: unknown): Promise<void>;
}

export interface CheckoutOptions {
  /** The program in `src/`, Pulumi.yaml saying `main: src/`. */
  main?: boolean;
  /** Pulumi.yaml's `backend.url` (the CLI then runs without PULUMI_BACKEND_URL). */
  backendUrl?: string;
  /** The environment of every command (over the engine's). */
  env?: Record<string, string>;
  /** The service URL the stack's config names (default: the service). */
  baseUrl?: string;
  /** The project file as `Pulumi.json` (its settings file then `Pulumi.test.json`), not `Pulumi.yaml`. */
  json?: boolean;
  /** The backend chosen by `pulumi login file://<state>` (a login file of the checkout's own), no PULUMI_BACKEND_URL. */
  login?: boolean;
  /** A settings file to start from (a committed `Pulumi.test.yaml`): `stack init` keeps its salt. */
  settingsFrom?: Checkout;
}

/** A project checkout of a face's program with a stack `test`, its config set. */
export async function checkout(face: Face, label: string, opts: CheckoutOptions = {}): Promise<Checkout> {
  mkdirSync(WORK_ROOT, { recursive: true });
  const base = mkdtempSync(join(WORK_ROOT, `identity-${label}-`));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const root = join(base, "project");
  const program = opts.main ? join(root, "src") : root;
  cpSync(FIXTURES[face], program, { recursive: true });
  let project = readFileSync(join(program, "Pulumi.yaml"), "utf8").replace(
    /^(\s*path:\s*).*$/m,
    `$1${PLUGIN_DIR}`,
  );
  if (opts.main) {
    rmSync(join(program, "Pulumi.yaml"));
    project += "main: src/\n";
  }
  if (opts.backendUrl) project += `backend:\n  url: ${opts.backendUrl}\n`;
  if (opts.json) {
    rmSync(join(root, "Pulumi.yaml"), { force: true });
    writeFileSync(join(root, "Pulumi.json"), JSON.stringify(parseYaml(project), null, 2));
  } else writeFileSync(join(root, "Pulumi.yaml"), project);
  if (opts.settingsFrom)
    cpSync(join(opts.settingsFrom.root, "Pulumi.test.yaml"), join(root, "Pulumi.test.yaml"));

  // The backend the CLI resolves: the project's (relative to the root, where pulumi runs), else ours.
  const stateDir = opts.backendUrl?.startsWith("file://./")
    ? join(root, opts.backendUrl.slice("file://./".length))
    : join(base, "state");
  mkdirSync(stateDir, { recursive: true });
  const login: Record<string, string> = opts.login
    ? { PULUMI_BACKEND_URL: "", PULUMI_CREDENTIALS_PATH: join(base, "creds") }
    : {};
  const env = { ...(opts.backendUrl ? { PULUMI_BACKEND_URL: "" } : {}), ...login, ...opts.env };
  const run = (
    args: string[],
    o: { env?: Record<string, string>; hostname?: string; stackName?: string } = {},
  ) =>
    runPulumi(args, {
      cwd: root,
      stateDir,
      env: { ...env, ...o.env },
      hostname: o.hostname,
      stackName: o.stackName,
    });
  const must = async (args: string[]) => void ok(await run(args));
  if (opts.login) ok(await run(["login", `file://${stateDir}`], { stackName: "" }));
  await must(["stack", "init", "--secrets-provider", "passphrase"]);
  await must(["config", "set", "edge:baseUrl", opts.baseUrl ?? server.url]);
  await must(["config", "set", "edge:requestDeadlineMs", "2000"]);
  await must(["config", "set", "spec", JSON.stringify(SPEC)]);
  return {
    root,
    stateDir,
    run,
    async ids() {
      const { resources } = await stateOf({ name: "test", workspace: { workDir: root } }, stateDir);
      return resources.map((r) => r.id.split("/").pop()!).sort();
    },
    setSpec: async (spec) => void (await must(["config", "set", "spec", JSON.stringify(spec)])),
  };
}

/** Every object on the service: edges, routes, TLS edges with a restriction (as `<id>/ip`). */
export async function onService(): Promise<string[]> {
  const https = (await server.client.listHttpsEdges()).https_edges;
  const tls = (await server.client.listTlsEdges()).tls_edges;
  return [
    ...https.map((e) => e.id),
    ...https.flatMap((e) => e.routes.map((r) => r.id)),
    ...tls.map((e) => e.id),
    ...tls.filter((e) => e.ip_restriction).map((e) => e.id), // the restriction's id is its edge's
  ].sort();
}

export function ok(r: Result): Result {
  if (r.code !== 0) throw new Error(`pulumi exited with ${r.code}:\n${r.output}`);
  return r;
}

export const up = ["up", "--yes", "--skip-preview"];
export const destroy = ["destroy", "--yes", "--skip-preview"];
/** What the provider says of an object an earlier create for the resource made (lifecycle/held). */
export const FOUND_AGAIN = /already existed, made by an earlier create for this resource/;
export const TAKEN = /earlier create|took over/;
export const NEW_ANCHOR = /it is a copy or a move, so it takes an anchor of its own/;

/** The state's deployment, exported; `edit` changes it; imported back. */
export async function editState(
  c: Checkout,
  edit: (deployment: any) => void,
  env: Record<string, string> = {},
) {
  const file = join(c.stateDir, "..", "export.json");
  ok(await c.run(["stack", "export", "--file", file], { env }));
  const exported = JSON.parse(readFileSync(file, "utf8"));
  edit(exported.deployment);
  writeFileSync(file, JSON.stringify(exported));
  ok(await c.run(["stack", "import", "--file", file], { env }));
}

/** A proxy in front of the service that loses the answers of creates whose path `lose` matches. */
export async function losingProxy() {
  const state = { lose: undefined as RegExp | undefined };
  const proxy = await faultProxy({
    target: server.url,
    seed: 1,
    rate: 0,
    // The create commits on the service, its answer is lost (every attempt of the failed run).
    intercept: ({ method, path }) =>
      method === "POST" && state.lose?.test(path) ? "reset-after" : undefined,
  });
  cleanups.push(() => proxy.close());
  return { url: proxy.url, state };
}

/** Runs `up` with the route's create answer lost: the run fails, the route exists on the service. */
export async function loseRouteCreate(c: Checkout, lose: { lose: RegExp | undefined }) {
  lose.lose = /\/routes$/;
  expect((await c.run(up)).code).not.toBe(0);
  lose.lose = undefined;
}
/** What each test leaves to undo (proxies, checkouts): undone after it, pass or fail. */
export const cleanups: Array<() => unknown> = [];

/** The service and clean-up of a test file of this bench: call once, at the file's top level. */
export function useIdentityBench(): void {
  beforeAll(async () => {
    ensureBuilt();
    serviceDir = mkdtempSync(join(tmpdir(), "edge-identity-"));
    server = await recordingServer(serviceDir);
  });
  afterAll(async () => {
    killChildren();
    await server?.close();
    rmSync(serviceDir, { recursive: true, force: true });
  });

  // After each test, pass or fail: its proxies closed, its checkouts removed, the service emptied.
  afterEach(async () => {
    for (const f of cleanups.splice(0)) await f();
    for (const e of (await server.client.listHttpsEdges()).https_edges)
      await server.client.deleteHttpsEdge(e.id);
    for (const e of (await server.client.listTlsEdges()).tls_edges) await server.client.deleteTlsEdge(e.id);
  });
}
