/**
 * The stacks `pulumi-edge drift` checks, as the `pulumi` CLI the user has sees them: which stack
 * of which project directory, and its workspace through the Automation API.
 */
import { resolve } from "node:path";
import { LocalWorkspace, type PulumiCommand, type Stack } from "@pulumi/pulumi/automation";

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
