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
}

// `stack select` writes the project's workspace file: one at a time per directory.
const selecting = new Map<string, Promise<unknown>>();

export async function selectStack(target: Target, engine: Engine): Promise<Stack> {
  const workDir = resolve(target.dir);
  const before = selecting.get(workDir) ?? Promise.resolve();
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
  selecting.set(
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
 * Reads `target` without selecting it: each command names the stack (`--stack`), so the three
 * run side by side, and stacks of one project do not take turns at `stack select` (which writes
 * the project's workspace file). The history is the CLI's own `stack history --json`, which the
 * Automation API offers only on a selected Stack.
 */
export async function readStack(target: Target, engine: Engine): Promise<StackRead> {
  const workDir = resolve(target.dir);
  const ws = await LocalWorkspace.create({ workDir, pulumiCommand: engine.command, envVars: engine.env });
  const history = async () => {
    const { stdout } = await promisify(execFile)(
      engine.command.command,
      [
        "stack",
        "history",
        "--json",
        "--page-size",
        "1",
        "--page",
        "1",
        "--stack",
        target.stack,
        "--non-interactive",
      ],
      { cwd: workDir, env: { ...process.env, ...engine.env }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    const entries: unknown = JSON.parse(stdout);
    const first: unknown = Array.isArray(entries) ? entries[0] : undefined;
    if (typeof first !== "object" || first === null) return undefined;
    return { kind: String(Reflect.get(first, "kind")), result: String(Reflect.get(first, "result")) };
  };
  const [exported, config, last] = await Promise.all([
    ws.exportStack(target.stack),
    ws.getAllConfig(target.stack),
    history(),
  ]);
  return { exported, config, last };
}
