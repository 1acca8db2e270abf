/**
 * The backup recipes of docs/operating.md, run as written (examples/backup-restore/*.sh) against
 * `edge-service serve` from dist: on SQLite the online backup (while writes go on), the stopped
 * copy, a restore from each, and a restore under a running service refused by its readiness; on
 * PostgreSQL a dump while serving, restored into an empty database beside the live one. A
 * restored service answers exactly what the service answered when the backup was taken. The
 * same-database restore and the convergence of stacks afterwards: tests/engine/restore.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "pg";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import {
  type Cli,
  ensureBuilt,
  killClis,
  loggedLines,
  NO_DRAIN,
  ROOT,
  startCli,
} from "../support/edge-service";
import { freePort, sharedCluster } from "../support/postgres";

const ADMIN = "admin-key-of-the-backup-restore-test-0123456789";
const RECIPES = join(ROOT, "examples", "backup-restore");

/** `bash examples/backup-restore/<script> ARGS`: its exit code and output. */
function recipe(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("bash", [join(RECIPES, script), ...args], { encoding: "utf8" }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const clientOf = (url: string) => new EdgeClient(httpTransport({ baseUrl: url, apiKey: ADMIN, retries: 0 }));

interface Snapshot {
  edges: Array<{ id: string; description: string; routes: Array<{ id: string }> }>;
  /** Newest first. */
  trail: Array<{ id: string; operation: string; object_id: string }>;
}

/** What the service answers of its data: every HTTPS edge with its routes, the whole trail; addresses aside. */
async function snapshot(url: string): Promise<Snapshot> {
  const client = clientOf(url);
  const edges: Snapshot["edges"] = [];
  for await (const e of client.allHttpsEdges())
    edges.push({ id: e.id, description: e.description, routes: e.routes.map((r) => ({ id: r.id })) });
  const trail: Snapshot["trail"] = [];
  for (let beforeId: string | undefined; ;) {
    const page = await client.listAuditEvents({ limit: 100, beforeId });
    trail.push(...page.audit_events.map(({ id, operation, object_id }) => ({ id, operation, object_id })));
    if (page.next_page_uri === null || page.audit_events.length === 0) break;
    beforeId = page.audit_events.at(-1)!.id;
  }
  return { edges: edges.sort((x, y) => x.id.localeCompare(y.id)), trail };
}

const seq = (id: string) => Number(id.replace(/^aud_/, ""));

async function edge(url: string, description: string): Promise<string> {
  const client = clientOf(url);
  const made = await client.createHttpsEdge({ description });
  await client.createRoute(made.id, {
    match_type: "path_prefix",
    match: "/",
    backend: { backend_id: "bkd_1" },
  });
  return made.id;
}

/** Stops a server started with NO_DRAIN: each is stopped between the test's own requests. */
async function stop(server: Cli): Promise<void> {
  server.child.kill("SIGTERM");
  await server.exit;
}

let work: string;
beforeAll(() => {
  ensureBuilt();
  work = mkdtempSync(join(tmpdir(), "edge-backup-"));
}, 300_000);
afterAll(() => {
  killClis();
  rmSync(work, { recursive: true, force: true });
});

test("SQLite: online backup while writing, stopped copy, a restore from each; never under a running service", async () => {
  const data = join(work, "data");
  const port = String(await freePort());
  const serve = () => startCli(["--port", port, ...NO_DRAIN, "--data", data], { EDGE_API_KEY: ADMIN });
  let server = await serve();
  await edge(server.url, "before the backup");
  const before = await snapshot(server.url);

  // The online backup, while a client keeps writing: every write answered, none refused.
  const online = join(work, "online.db");
  let writing = true;
  let written = 0;
  const writer = (async () => {
    const client = clientOf(server.url);
    while (writing) {
      await client.createHttpsEdge({ description: `during ${written}` });
      written++;
    }
  })();
  const backup = await recipe("sqlite.sh", ["backup", data, online]);
  writing = false;
  await writer;
  expect(backup).toMatchObject({ code: 0, stdout: "ok\n" });
  expect(written).toBeGreaterThan(0);
  expect(statSync(online).mode & 0o777).toBe(0o600);
  expect((await recipe("sqlite.sh", ["backup", data, online])).code).not.toBe(0); // never over a backup
  const afterBackup = await snapshot(server.url);

  // The stopped copy.
  await edge(server.url, "after the online backup");
  await stop(server);
  const copy = join(work, "copy");
  expect((await recipe("sqlite.sh", ["backup-stopped", data, copy])).code).toBe(0);
  server = await serve();
  const atCopy = await snapshot(server.url);
  await edge(server.url, "after the copy");

  // A restore under the running service: it goes on with the file it opened, and says so.
  expect((await recipe("sqlite.sh", ["restore", data, online])).code).toBe(0);
  let ready = await fetch(`${server.url}/readyz`);
  for (let i = 0; i < 100 && ready.status !== 503; i++) {
    await new Promise((r) => setTimeout(r, 100));
    ready = await fetch(`${server.url}/readyz`);
  }
  expect(ready.status).toBe(503);
  expect(
    await loggedLines(server, "was replaced since the service opened it: restart the service"),
  ).not.toEqual([]);
  await stop(server);

  // As documented: the service stopped, then the restore (the current directory moved aside).
  const aside = () => readdirSync(work).filter((f) => f.startsWith("data.before-restore-"));
  for (const a of aside()) rmSync(join(work, a), { recursive: true, force: true });
  expect((await recipe("sqlite.sh", ["restore", data, online])).code).toBe(0);
  expect(aside()).toHaveLength(1);
  expect(statSync(data).mode & 0o777).toBe(0o700);
  expect(statSync(join(data, "edge.db")).mode & 0o777).toBe(0o600);
  server = await serve();
  const restored = await snapshot(server.url);
  // One moment's snapshot: the live trail up to its newest event, no hole, and exactly the edges
  // those events made; everything from before the backup began.
  const newest = seq(restored.trail[0]!.id);
  expect(restored.trail).toEqual(afterBackup.trail.filter((e) => seq(e.id) <= newest));
  const made = new Set(
    restored.trail.filter((e) => e.operation === "create_https_edge").map((e) => e.object_id),
  );
  expect(restored.edges).toEqual(afterBackup.edges.filter((e) => made.has(e.id)));
  expect(restored.edges).toEqual(expect.arrayContaining(before.edges));
  await stop(server);

  // From the stopped copy: what it held when stopped.
  expect((await recipe("sqlite.sh", ["restore-copy", data, copy])).code).toBe(0);
  server = await serve();
  expect(await snapshot(server.url)).toEqual(atCopy);
  await stop(server);
}, 300_000);

test("PostgreSQL: a dump while serving, restored into an empty database beside the live one", async () => {
  const cluster = await sharedCluster();
  const url = await cluster.createDatabase();
  const server = await startCli(["--port", "0", ...NO_DRAIN, "--database", url], { EDGE_API_KEY: ADMIN });
  await edge(server.url, "before the backup");
  const dump = join(work, "edge.dump");
  expect((await recipe("postgres.sh", ["backup", url, dump])).code).toBe(0);
  expect(statSync(dump).mode & 0o777).toBe(0o600);
  const atBackup = await snapshot(server.url);
  await edge(server.url, "after the backup");

  // CREATE DATABASE, as the role the replicas connect as; then the recipe, the live one serving on.
  const admin = new Client({ connectionString: url });
  await admin.connect();
  await admin.query("CREATE DATABASE edge_restored");
  await admin.end();
  const restoredUrl = url.replace(/\/[^/]+$/, "/edge_restored");
  expect((await recipe("postgres.sh", ["restore-new", restoredUrl, dump])).code).toBe(0);
  const restored = await startCli(["--port", "0", ...NO_DRAIN, "--database", restoredUrl], {
    EDGE_API_KEY: ADMIN,
  });
  expect(await snapshot(restored.url)).toEqual(atBackup);
  expect(await snapshot(server.url)).not.toEqual(atBackup); // the live one kept its later write
  await stop(restored);
  await stop(server);
}, 300_000);
