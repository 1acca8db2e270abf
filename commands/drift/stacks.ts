/**
 * The stacks `pulumi-edge drift` checks, as the `pulumi` CLI the user has sees them: which stack
 * of which project directory, and its workspace through the Automation API.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import {
  type ConfigMap,
  type Deployment,
  LocalWorkspace,
  type PulumiCommand,
  type Stack,
} from "@pulumi/pulumi/automation";
import { configKeysRead } from "../../provider/config";
import { isProps } from "../../provider/model/check";
import { UnknownPlace } from "../../provider/identity/place";
import { readProject, readStackSettings } from "../../provider/pulumi-files";
import {
  checkpointDeployment,
  lastOperation,
  listStacks,
  projectBackend,
  type StackFiles,
  stackFiles,
} from "./backend";
import { encryptedRead, stateOf } from "./state";

/** One stack of one project directory. */
export interface Target {
  /** The project directory as the user gave it (shown in the report). */
  dir: string;
  stack: string;
}

export interface Engine {
  command: PulumiCommand;
  env: Record<string, string>;
  /** A progress line (stderr). */
  progress: (line: string) => void;
  /**
   * `stack select` writes the project's workspace file: one at a time per directory. The last
   * select begun in each directory, for the next to wait on; an empty map for a new engine.
   */
  selecting: Map<string, Promise<unknown>>;
}

export async function selectStack(target: Target, engine: Engine): Promise<Stack> {
  const workDir = resolve(target.dir);
  const before = engine.selecting.get(workDir) ?? Promise.resolve();
  const mine = before.then(
    () =>
      LocalWorkspace.selectStack(
        { stackName: target.stack, workDir },
        { pulumiCommand: engine.command, envVars: engine.env },
      ),
    () =>
      LocalWorkspace.selectStack(
        { stackName: target.stack, workDir },
        { pulumiCommand: engine.command, envVars: engine.env },
      ),
  );
  engine.selecting.set(
    workDir,
    mine.catch(() => undefined),
  );
  return mine;
}

/** What the fast path reads of a stack: its state, its config (secrets shown), its last operation. */
export interface StackRead {
  exported: Deployment;
  config: ConfigMap;
  /** The newest entry of the stack's history; undefined for a stack never updated. */
  last?: { kind: string; result: string };
}

/**
 * Reads `target` without selecting it. On a file backend whose files it knows as the CLI does
 * (./backend) its checkpoint and history are read from there, and no CLI runs for them, unless the
 * state holds an encrypted secret that the check reads (state.ts `encryptedRead`): only the CLI
 * decrypts. Elsewhere each command names the stack (`--stack`), so the three run side by side, and
 * stacks of one project do not take turns at `stack select` (which writes the project's workspace
 * file). The history is then the CLI's own `stack history --json`, which the Automation API offers
 * only on a selected Stack.
 */
export async function readStack(target: Target, engine: Engine): Promise<StackRead> {
  const workDir = resolve(target.dir);
  const env = { ...process.env, ...engine.env };
  let ws: Promise<LocalWorkspace> | undefined;
  const workspace = () =>
    (ws ??= LocalWorkspace.create({ workDir, pulumiCommand: engine.command, envVars: engine.env }));
  const found = stackFilesOf(target, env);
  const files = typeof found === "object" ? found : undefined;
  const exported = async (): Promise<Deployment> => {
    const latest = files && checkpointDeployment(files);
    if (
      latest !== undefined &&
      encryptedRead(stateOf({ version: 3, deployment: latest }).resources) === undefined
    )
      return { version: 3, deployment: latest };
    return (await workspace()).exportStack(target.stack);
  };
  const history = async () => {
    const last = files ? lastOperation(files) : "cli";
    if (last !== "cli") return last;
    const stdout = await pulumiCli(
      engine.command.command,
      ["stack", "history", "--json", "--page-size", "1", "--page", "1", "--stack", target.stack],
      workDir,
      env,
    );
    const entries: unknown = JSON.parse(stdout);
    const first: unknown = Array.isArray(entries) ? entries[0] : undefined;
    if (typeof first !== "object" || first === null) return undefined;
    return { kind: String(Reflect.get(first, "kind")), result: String(Reflect.get(first, "result")) };
  };
  const [state, config, last] = await Promise.all([
    exported(),
    configFromFiles(workDir, target.stack, engine.env) ??
      workspace().then((w) => w.getAllConfig(target.stack)),
    history(),
  ]);
  return { exported: state, config, last };
}

/**
 * The stacks of the project in `dir` on its backend, when that is a file backend whose listing
 * this reads as the CLI does (./backend `listStacks`); else undefined: `pulumi stack ls` says.
 */
export function stacksOnDisk(dir: string, env: NodeJS.ProcessEnv): string[] | undefined {
  const workDir = resolve(dir);
  const backend = projectBackend(workDir, env);
  if (backend instanceof UnknownPlace || backend.dir === undefined) return undefined;
  const project = readProject(workDir);
  const name = typeof project === "object" ? project.name : undefined;
  return typeof name === "string" ? listStacks(backend.dir, name, env) : undefined;
}

/**
 * The files of `target` on its project's backend, when that is a file backend this reads as the
 * CLI does (./backend); "elsewhere" on a backend of another kind (the CLI reads the stack; its
 * locks cannot be seen); undefined where this cannot tell (the CLI reads it, and says where).
 */
export function stackFilesOf(target: Target, env: NodeJS.ProcessEnv): StackFiles | "elsewhere" | undefined {
  const workDir = resolve(target.dir);
  const backend = projectBackend(workDir, env);
  if (backend instanceof UnknownPlace) return undefined;
  if (backend.dir === undefined) return "elsewhere";
  const project = readProject(workDir);
  const name = typeof project === "object" ? project.name : undefined;
  return typeof name === "string" ? stackFiles(backend.dir, name, target.stack) : undefined;
}

/** The stack's config, secrets shown: from its settings file where that alone decides (configFromFiles), else the CLI's. */
export async function stackConfig(target: Target, engine: Engine): Promise<ConfigMap> {
  const workDir = resolve(target.dir);
  const fromFiles = configFromFiles(workDir, target.stack, engine.env);
  if (fromFiles) return fromFiles;
  const ws = await LocalWorkspace.create({ workDir, pulumiCommand: engine.command, envVars: engine.env });
  return ws.getAllConfig(target.stack);
}

/**
 * A run of the `pulumi` CLI (`--non-interactive`) in `workDir`: its stdout; if it fails, an error
 * saying what the CLI said (its stderr), as the Automation API's errors do.
 */
export async function pulumiCli(
  pulumi: string,
  args: string[],
  workDir: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  try {
    const run = promisify(execFile);
    const { stdout } = await run(pulumi, [...args, "--non-interactive"], {
      cwd: workDir,
      env,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (e) {
    const stderr = isProps(e) && typeof e.stderr === "string" ? e.stderr.trim() : "";
    throw stderr ? new Error(stderr) : e;
  }
}

/**
 * The stack's config as `pulumi config --show-secrets --json` gives the keys the provider's
 * settings read (configKeysRead), from the stack's settings file alone, saving a CLI run (each
 * costs a quarter second of CPU, most of a fast check's). Undefined when the file alone may not
 * decide them: one of them is a secret (only the CLI opens it), the project's config or an
 * environment (Pulumi ESC) may set them, or a file is unreadable (the CLI says why).
 */
export function configFromFiles(
  workDir: string,
  stack: string,
  env: NodeJS.ProcessEnv,
): ConfigMap | undefined {
  const project = readProject(workDir);
  if (typeof project === "string" || "config" in project) return undefined;
  const settings = readStackSettings(workDir, stack);
  if (settings === "missing") return {}; // no settings file: no stack config
  if (settings === "unreadable" || "environment" in settings) return undefined;
  const values = settings.config ?? {};
  if (!isProps(values)) return undefined;
  const config: ConfigMap = {};
  for (const key of configKeysRead(env)) {
    const value = values[key];
    if (value === undefined || value === null) continue;
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      config[key] = { value: String(value), secret: false };
    } else return undefined; // `secure:` (a secret) or an object: the CLI's to say
  }
  return config;
}
