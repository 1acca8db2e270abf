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
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { accountHome, filePath } from "../../provider/identity/place";
import { errorMessage } from "../../sdk/contract";
import { pulumiCli, stackFilesOf, type Target } from "./stacks";

/** What the CLI writes in a lock file. */
interface LockContent {
  pid?: number;
  username?: string;
  hostname?: string;
  timestamp?: string;
}

/**
 * A check to call before and after the stack's preview: it throws StackLockedError while another
 * process holds the stack's lock (never, when the backend's locks cannot be seen). `target.dir` is
 * the project directory as the user gave it.
 */
export async function lockCheck(
  target: Target,
  pulumi: string,
  env: Record<string, string>,
): Promise<() => void> {
  const locks = await locksDir(target, pulumi, env);
  if (locks === undefined) return () => undefined;
  return () => {
    const holders = holdersOf(locks);
    if (holders) throw new StackLockedError(target.stack, target.dir, holders);
  };
}

/**
 * Per environment (the backend is chosen by it too: PULUMI_BACKEND_URL, PULUMI_HOME, ...) and
 * project directory, where the CLI had to be asked: its file backend's root and its stacks' fully
 * qualified name prefix.
 */
const places = new WeakMap<object, Map<string, { root: string; prefix: string } | null>>();

/**
 * Where the stack's locks are (`<backend>/.pulumi/locks/<fully qualified stack name>`), or
 * undefined for a backend whose locks cannot be seen. Found as the CLI finds them (./backend),
 * with no CLI run; only where that cannot tell (a login file the credential store encrypts, a
 * layout it does not know) asked of the CLI (`whoami`, `stack --show-name
 * --fully-qualify-stack-names`), once per project directory, not per stack: every stack of a
 * project shares its backend and its name's prefix. Kept once found: the asking fails for a stack
 * that does not exist, and that must not fail the others.
 */
async function locksDir(
  target: Target,
  pulumi: string,
  env: Record<string, string>,
): Promise<string | undefined> {
  const files = stackFilesOf(target, { ...process.env, ...env });
  if (files === "elsewhere") return undefined;
  if (files !== undefined) return files.locks;
  const workDir = resolve(target.dir);
  const cli = async (...args: string[]) => (await pulumiCli(pulumi, args, workDir, env)).trim();
  const ask = async () => {
    const { url } = JSON.parse(await cli("whoami", "--json")) as { url?: string };
    const path = url === undefined ? undefined : /^file:\/\/([^?]*)/.exec(url)?.[1];
    if (path === undefined) return null;
    const root = filePath(path, workDir, accountHome());
    const name = await cli("stack", "--show-name", "--fully-qualify-stack-names", "--stack", target.stack);
    // `organization/<project>/<stack>`: its prefix is every stack's of the project.
    const prefix = name.slice(0, name.length - target.stack.length);
    return name.endsWith(target.stack) && (prefix === "" || prefix.endsWith("/")) ? { root, prefix } : null;
  };
  // A name given fully qualified (org/project/stack) is asked each time.
  const cached = !target.stack.includes("/");
  const known = places.get(env) ?? new Map<string, { root: string; prefix: string } | null>();
  places.set(env, known);
  let found = cached ? known.get(workDir) : undefined;
  if (found === undefined) {
    found = await ask();
    if (cached) known.set(workDir, found);
  }
  return found
    ? join(found.root, ".pulumi", "locks", ...`${found.prefix}${target.stack}`.split("/"))
    : undefined;
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
