/**
 * Whether another `pulumi` process holds a stack's lock. `pulumi preview` neither takes nor
 * checks it (pulumi 3.259.0's file backend checks it only in the commands that take it: up,
 * refresh, destroy, import), so the drift check of a stack that a running `pulumi up` holds, or
 * that a killed one left locked, reads a state that update is in the middle of writing, and
 * whatever it is changing reads as drift. The check asks here before its preview and after it.
 *
 * Only a file backend's locks can be seen (`<backend>/.pulumi/locks/<fully qualified stack
 * name>/<id>.json`, each the holder's pid, user, host and start): other backends are not checked.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { errorMessage } from "../../sdk/contract";

const run = promisify(execFile);

/** What the CLI writes in a lock file. */
interface LockContent {
  pid?: number;
  username?: string;
  hostname?: string;
  timestamp?: string;
}

/** The directory of a file backend's URL as the CLI resolves it (`~`, a path relative to the project). */
function backendDir(url: string, workDir: string): string | undefined {
  if (!url.startsWith("file://")) return undefined;
  let path = url.slice("file://".length).split("?")[0]!;
  if (path === "~" || path.startsWith("~/")) path = join(homedir(), path.slice(1));
  return isAbsolute(path) ? path : resolve(workDir, path);
}

/**
 * A check to call before and after the stack's preview: it throws StackLockedError while another
 * process holds the stack's lock (never, when the backend's locks cannot be seen). `dir` is the
 * project directory as the user gave it.
 */
export async function lockCheck(
  stack: Stack,
  dir: string,
  pulumi: string,
  env: Record<string, string>,
): Promise<() => void> {
  const workDir = resolve(dir);
  const { url } = await stack.workspace.whoAmI();
  const root = url === undefined ? undefined : backendDir(url, workDir);
  if (root === undefined) return () => undefined;
  const { stdout } = await run(
    pulumi,
    ["stack", "--show-name", "--fully-qualify-stack-names", "--stack", stack.name, "--non-interactive"],
    { cwd: workDir, env },
  );
  const locks = join(root, ".pulumi", "locks", ...stdout.trim().split("/"));
  return () => {
    const holders = holdersOf(locks);
    if (holders) throw new StackLockedError(stack.name, dir, holders);
  };
}

/** Who holds the locks in `locks` (one line each, as the CLI says it), or undefined. */
function holdersOf(locks: string): string | undefined {
  let files: string[];
  try {
    // The CLI's storage keeps each file's metadata beside it in `<file>.attrs`: not a lock.
    files = readdirSync(locks).filter((f) => f.endsWith(".json"));
  } catch {
    return undefined; // no lock was ever taken
  }
  if (files.length === 0) return undefined;
  return files
    .map((f) => {
      const file = join(locks, f);
      try {
        const lock = JSON.parse(readFileSync(file, "utf8")) as LockContent;
        return `${file}: created by ${lock.username}@${lock.hostname} (pid ${lock.pid}) at ${lock.timestamp}`;
      } catch (e) {
        // Being written, or removed since the listing: the stack was locked all the same.
        return `${file} (${errorMessage(e)})`;
      }
    })
    .join("\n");
}

/**
 * A locked stack: who holds it, why it was not checked and what to do (the CLI's own recovery
 * from a killed update, README "the stack is currently locked").
 */
export class StackLockedError extends Error {
  constructor(stack: string, dir: string, holders: string) {
    super(
      `the stack is locked by another pulumi process, so it was not checked: an update, refresh or ` +
        `destroy holds it (or was killed holding it), and its state is not final until that ends.` +
        `\n${holders}\n` +
        `Wait for that process to end, then run the check again. If it no longer runs (a killed ` +
        `\`pulumi up\`), run \`pulumi cancel --stack ${stack} --yes\` and \`pulumi refresh --stack ${stack} ` +
        `--yes --clear-pending-creates\` in ${dir} first.`,
    );
  }
}
