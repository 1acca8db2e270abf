/**
 * The one way tests get a Pulumi program to run: a copy of it under `.test-work` inside the
 * repository (so `pulumi-edge` and `@pulumi/pulumi` resolve from the root node_modules, as in a
 * user's project), with a state directory of its own beside it.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { basename, join } from "node:path";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

export const WORK_ROOT = join(engine.ROOT, ".test-work");

export interface Workspace {
  /** The copied program. */
  dir: string;
  /** Its file backend. */
  stateDir: string;
  cleanup(): void;
}

/** Copies the program directory `source`, leaving out what a run creates there (data, packages, stack files). */
export function programWorkspace(source: string, label: string): Workspace {
  mkdirSync(WORK_ROOT, { recursive: true });
  const base = mkdtempSync(join(WORK_ROOT, `${label}-`));
  const dir = join(base, basename(source));
  cpSync(source, dir, {
    recursive: true,
    filter: (src) => !/[/\\](\.edge-service|node_modules)$|Pulumi\.[^/\\]+\.yaml$/.test(src),
  });
  return {
    dir,
    stateDir: join(base, "state"),
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}
