/**
 * The first named key turns authentication on, and `edge-service keys create` says so where the
 * operator looks, with what a stack needs: a service started without a key, serving a stack
 * that sends none, refuses that stack (401) within a second of the first `keys create`; the
 * second key changes nothing of the kind and says nothing of it. Compiled CLI, real server.
 */
import { execFile } from "node:child_process";
import { CLI, ensureBuilt, killClis, ROOT, startCli, type Cli } from "../support/edge-service";
import { makeTempDir, removeDir } from "./helpers";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const keysCli = (args: string[], dataDir: string): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, "keys", ...args, "--data", dataDir],
      { cwd: ROOT, env: { ...process.env, EDGE_API_KEY: "", EDGE_DATABASE_URL: "", EDGE_SECRETS_KEY: "" } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });

/** What a stack without a key gets: the status of a read of the edges. */
const withoutKey = async (cli: Cli) => (await fetch(`${cli.url}/edges/https`)).status;

let dataDir: string;
let cli: Cli;

beforeAll(async () => {
  ensureBuilt();
  dataDir = makeTempDir("keys-first");
  cli = await startCli(["--port", "0", "--data", dataDir]);
});

afterAll(() => {
  killClis();
  removeDir(dataDir);
});

test("the first key: its output says authentication is now on and what every stack needs; then a request without a key is a 401", async () => {
  expect(await withoutKey(cli)).toBe(200);

  const first = await keysCli(["create", "deployer", "--scope", "write"], dataDir);
  expect(first.code).toBe(0);
  expect(first.stdout.trim()).toMatch(/^edge_[A-Za-z0-9_-]{43}$/); // stdout is the key alone
  const notice = first.stderr.replace(/\s+/g, " ");
  expect(notice).toContain(`"deployer" is the first key of ${dataDir}`);
  expect(notice).toContain("authentication is now on");
  expect(notice).toContain("401 ERR_EDGE_401: missing API key");
  expect(notice).toContain("pulumi config set --secret edge:apiKey <key>");
  expect(notice).toContain("EDGE_API_KEY");

  // "Within a second": the keys a server checks against are at most 500 ms old.
  await new Promise((r) => setTimeout(r, 1000));
  const refused = await fetch(`${cli.url}/edges/https`);
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as { msg: string }).msg).toContain("missing API key");
  const allowed = await fetch(`${cli.url}/edges/https`, {
    headers: { authorization: `Bearer ${first.stdout.trim()}` },
  });
  expect(allowed.status).toBe(200);
  expect((await fetch(`${cli.url}/readyz`)).status).toBe(200);
});

test("a later key says nothing of it: authentication was already on", async () => {
  const second = await keysCli(["create", "ops-console", "--scope", "write"], dataDir);
  expect(second.code).toBe(0);
  expect(second.stderr).toContain('made key "ops-console" (scope write)');
  expect(second.stderr).not.toContain("first key");
});
