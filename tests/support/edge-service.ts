/**
 * Shared by the service and reliability tests: an up-to-date dist (the CLI runs from it), and
 * the standalone `edge-service serve` started as a child process.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { watch } from "./command";

export const ROOT = path.join(__dirname, "../..");
export const CLI = path.join(ROOT, "dist/service/cli/edge-service.js");

/**
 * Compiles the package into dist when a source of sdk/, provider/ or index.ts is newer than its
 * output: the CLI runs from dist, and the engine loads the provider as `pulumi-edge/runtime`.
 *
 * Safe beside other runs and workers: one build at a time (a lock file other builds wait on),
 * staleness judged again under the lock, and the output compiled into a directory of its own,
 * then moved into dist file by file (each a rename: a process running from dist reads a file
 * whole, old or new, never half written).
 */
export function ensureBuilt(): void {
  if (staleSources().length === 0) return;
  withBuildLock(() => {
    if (staleSources().length === 0) return; // another build did it while this one waited
    const out = fs.mkdtempSync(path.join(ROOT, ".test-work", `build-${process.pid}-`));
    try {
      try {
        execFileSync(
          process.execPath,
          [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", out],
          { cwd: ROOT, stdio: "pipe", timeout: 240_000 },
        );
      } catch {
        // tsc emits even when another part of the project has type errors; judged below.
      }
      moveInto(out, path.join(ROOT, "dist"));
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
  const still = staleSources();
  if (still.length > 0) throw new Error(`could not build into dist (stale: ${still.join(", ")})`);
}

/** Sources the build compiles whose compiled file in dist is missing or older. */
function staleSources(): string[] {
  const out: string[] = [];
  const check = (p: string) => {
    const js = path.join(ROOT, "dist", path.relative(ROOT, p)).replace(/\.ts$/, ".js");
    if (!fs.existsSync(js) || fs.statSync(js).mtimeMs < fs.statSync(p).mtimeMs) out.push(p);
  };
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) check(p);
    }
  };
  // What the build compiles (tsconfig.build.json's include): a change to the service or the
  // commands must rebuild too, since tests start dist/service/cli and dist/commands.
  const { include } = JSON.parse(fs.readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8")) as {
    include: string[];
  };
  for (const entry of include) {
    const p = path.join(ROOT, entry);
    if (fs.statSync(p).isDirectory()) walk(p);
    else check(p);
  }
  return out;
}

/** Every file of `from` renamed to its place under `to` (directories made as needed). */
function moveInto(from: string, to: string): void {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      fs.mkdirSync(target, { recursive: true });
      moveInto(source, target);
    } else {
      // A bin (edge-service.js, cli.js) keeps the mode npm gave it (executable).
      if (fs.existsSync(target)) fs.chmodSync(source, fs.statSync(target).mode);
      fs.renameSync(source, target);
    }
  }
}

/**
 * Runs `fn` holding the build lock (`.test-work/build.lock`, made with O_EXCL); waits for another
 * holder, and takes over a lock whose process is gone.
 */
function withBuildLock(fn: () => void): void {
  const lock = path.join(ROOT, ".test-work", "build.lock");
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const holder = Number(fs.readFileSync(lock, "utf8"));
      if (!alive(holder)) fs.rmSync(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`the build lock ${lock} is held by process ${holder}`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

const alive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export interface Cli {
  child: ChildProcess;
  /** Base URL to reach it on (loopback even when it listens on 0.0.0.0). */
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const clis = new Set<ChildProcess>();

/** SIGKILLs every server started here that still runs. */
export function killClis(): void {
  for (const child of clis) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  clis.clear();
}

/**
 * `serve`'s flags for no drain, for a server a test stops only when nothing is in flight to it and
 * nothing more will be sent (its writers stopped, or kept off it). The default drain keeps a
 * client's idle keep-alive sockets open, and fetch keeps them for the server's whole 5 s drain: a
 * stop that waits for them costs that much for nothing. Tests of the drain keep the default.
 */
export const NO_DRAIN: readonly string[] = ["--drain", "0"];

/** Spawns `edge-service serve ARGS` (EDGE_API_KEY cleared unless `env` sets it). */
export function spawnCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, "serve", ...args], {
    cwd: ROOT,
    env: { ...process.env, EDGE_API_KEY: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return watch(child, clis);
}

/** Starts `edge-service serve` and waits (bounded) for its first line, "edge-service listening on http(s)://...". */
export async function startCli(args: string[], env: Record<string, string> = {}): Promise<Cli> {
  const p = spawnCli(args, env);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`edge-service did not start: ${p.stderr()}`)), 60_000);
    const onData = () => {
      if (!p.stdout().includes("\n")) return;
      clearTimeout(timer);
      const first = p.stdout().split("\n")[0]!;
      const m = /^edge-service listening on (https?:\/\/\S+)/.exec(first);
      if (m) resolve(m[1]!.replace("//0.0.0.0:", "//127.0.0.1:"));
      else reject(new Error(`unexpected first line: ${first}`));
    };
    p.child.stdout!.on("data", onData);
    void p.exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`edge-service exited (${code ?? signal}): ${p.stderr()}`));
    });
  });
  return { ...p, url };
}

/** The lines of `cli`'s log (stderr) that contain `text`, as logged so far. */
export const linesWith = (cli: Pick<Cli, "stderr">, text: string): string[] =>
  cli
    .stderr()
    .split("\n")
    .filter((l) => l.includes(text));

/**
 * The lines of `cli`'s log that contain `text`, once there is one (waiting up to 10 s): `serve`
 * writes its log a turn of the event loop after the answer that made a line (see batchedSink),
 * so a line may reach the test just after the answer.
 */
export async function loggedLines(cli: Pick<Cli, "stderr">, text: string): Promise<string[]> {
  const end = Date.now() + 10_000;
  while (linesWith(cli, text).length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return linesWith(cli, text);
}
