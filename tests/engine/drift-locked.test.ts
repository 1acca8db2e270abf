/**
 * `pulumi-edge drift` on a locked stack, through the real engine (issue 35, finding 9): a stack
 * held by a running `pulumi up`, and one left locked as a killed `pulumi up` leaves it, is an
 * error naming the lock and what to do, not drift. `pulumi preview` ignores the lock, so the
 * check used to read the state the update was writing and report what it was doing as drift.
 * The program is examples/drift-detection, held (in the test's copy only) at its start until a
 * file exists, so the `pulumi up` holds the lock as long as the test needs.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { type RunningServer, startServer } from "../../service/http/server";
import { ensureBuilt, ROOT } from "../support/edge-service";
import { programWorkspace, type Workspace } from "../support/workspace";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const PULUMI_EDGE = join(ROOT, "dist/commands/cli.js");

interface StackJson {
  stack: string;
  verdict: string;
  error?: string;
  resources: unknown[];
}

let server: RunningServer;
let data: string;
let ws: Workspace;
let hold: string;
let env: Record<string, string>;
let up: ChildProcess | undefined;
let upExit: Promise<number | null> | undefined;

const dir = () => ws.dir.slice(join(ws.dir, "..").length + 1);
/** Where the CLI keeps the locks of the project's stack `name` on the file backend. */
const locks = (name: string) =>
  join(ws.stateDir, ".pulumi", "locks", "organization", "edge-drift-detection", name);
const lockFiles = (name: string) =>
  existsSync(locks(name)) ? readdirSync(locks(name)).filter((f) => f.endsWith(".json")) : [];

/** `pulumi-edge drift --stack DIR:NAME --format json`: its exit code and the stack's report. */
function drift(name: string): Promise<{ code: number | null; stack: StackJson; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [PULUMI_EDGE, "drift", "--stack", `${dir()}:${name}`, "--format", "json"],
      { cwd: join(ws.dir, ".."), env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        try {
          const report = JSON.parse(stdout) as { stacks: StackJson[] };
          resolve({ code: error ? (error.code as number) : 0, stack: report.stacks[0]!, stderr });
        } catch {
          reject(new Error(`pulumi-edge drift printed no JSON report:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

/** The pulumi CLI on the test's backend; asynchronous, since the service answers in this process. */
function pulumi(args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      "pulumi",
      [...args, "--non-interactive"],
      { cwd: ws.dir, env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        error ? reject(new Error(`pulumi ${args.join(" ")} failed:\n${stdout}\n${stderr}`)) : resolve(),
    ),
  );
}

async function waitFor(cond: () => boolean, what: string, timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  ensureBuilt();
  data = mkdtempSync(join(tmpdir(), "edge-drift-locked-"));
  server = await startServer({ dataDir: data, port: 0 });
  ws = programWorkspace(join(ROOT, "examples", "drift-detection"), "drift-locked");
  hold = join(ws.dir, "..", "release");
  const program = join(ws.dir, "index.ts");
  writeFileSync(
    program,
    [
      'import { existsSync } from "node:fs";',
      "// The test's hold: this update keeps the stack locked until the test lets it go on.",
      "const hold = process.env.EDGE_TEST_HOLD;",
      "while (hold && !existsSync(hold)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);",
      readFileSync(program, "utf8"),
    ].join("\n"),
  );
  env = engine.engineEnv({ stateDir: ws.stateDir });
  for (const name of ["busy", "left"]) {
    const stack = await engine.directoryStack({ workDir: ws.dir, stateDir: ws.stateDir, stackName: name });
    await stack.setConfig("edge:baseUrl", { value: server.url });
  }
}, 300_000);

afterAll(async () => {
  if (hold) writeFileSync(hold, "");
  await upExit;
  await server?.close();
  ws?.cleanup();
  if (data) rmSync(data, { recursive: true, force: true });
}, 300_000);

test("a stack held by a running `pulumi up` is an error naming the holder; once it ends, clean", async () => {
  // The stack's first update, held: its state has nothing yet, so a preview wants every create.
  up = spawn("pulumi", ["up", "--yes", "--non-interactive", "--stack", "busy"], {
    cwd: ws.dir,
    env: { ...process.env, ...env, EDGE_TEST_HOLD: hold },
    stdio: "ignore",
  });
  upExit = new Promise((resolve) => up!.on("exit", (code) => resolve(code)));
  await waitFor(() => lockFiles("busy").length === 1, "the running `pulumi up` to lock the stack");

  const locked = await drift("busy");
  expect(locked.code).toBe(2);
  expect(locked.stack).toMatchObject({ stack: "busy", verdict: "error", resources: [] });
  expect(locked.stack.error).toContain(
    "the stack is locked by another pulumi process, so it was not checked",
  );
  expect(locked.stack.error).toContain(`(pid ${up.pid})`);
  expect(locked.stack.error).toContain("Wait for that process to end, then run the check again.");
  expect(locked.stderr).toContain("busy: error: the stack is locked");

  writeFileSync(hold, "");
  expect(await upExit).toBe(0);
  const after = await drift("busy");
  expect(after.code).toBe(0);
  expect(after.stack.verdict).toBe("clean");
}, 600_000);

test("a lock as a killed `pulumi up` leaves it: an error saying `pulumi cancel`, which clears it", async () => {
  await pulumi(["up", "--yes", "--stack", "left"]);
  // What the CLI writes (pkg/backend/diy/lock.go) for a process that is gone.
  mkdirSync(locks("left"), { recursive: true });
  writeFileSync(
    join(locks("left"), "5b0c3f0e-2a55-4b7e-9d07-6e2f9c1d8a41.json"),
    JSON.stringify({
      pid: 2_999_999,
      username: userInfo().username,
      hostname: hostname(),
      timestamp: "2026-11-25T12:00:00.000000000Z",
    }),
  );
  const locked = await drift("left");
  expect(locked.code).toBe(2);
  expect(locked.stack.verdict).toBe("error");
  expect(locked.stack.error).toContain("(pid 2999999) at 2026-11-25T12:00:00.000000000Z");
  expect(locked.stack.error).toContain("run `pulumi cancel --stack left --yes`");

  // What the message says to do, when the process no longer runs.
  await pulumi(["cancel", "--yes", "--stack", "left"]);
  expect(lockFiles("left")).toEqual([]);
  const after = await drift("left");
  expect(after.code).toBe(0);
  expect(after.stack.verdict).toBe("clean");
}, 600_000);
