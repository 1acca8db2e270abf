/**
 * The day the store is restored, through the real engine, on both stores: SQLite with the dynamic
 * face, PostgreSQL with the packaged one. A stack (an HTTPS edge with five routes, a TLS edge and
 * its IP restriction) is deployed on day 1 and the store backed up while it serves; day 2 adds
 * two routes, points two elsewhere, removes one and the IP restriction, and revokes a key; then
 * the store is restored from the backup with the documented recipe (examples/backup-restore,
 * docs/operating.md) and the service started again. Then, as documented:
 * - a refresh, and `pulumi-edge drift` on its paths and in its formats, report exactly the restore's drift
 *   and name no key for it, saying why ("restored or pruned?");
 * - `--unmanaged` lists what day 2 removed (back on the service, in no state) with the import
 *   commands, and nothing a stack holds;
 * - the key revoked on day 2 is in force again until revoked again;
 * - the documented convergence (`--remediate`, i.e. `pulumi up --refresh`) and the deletion of
 *   what no stack holds leave every check clean, `pulumi preview --refresh` with no change;
 * - the audit trail: the backup's events, then the `up`'s, numbered on from the backup's newest.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import type { AuditEvent } from "../../sdk/contract";
import { httpTransport } from "../../sdk/transport";
import type { FleetReport, StackReport, Unmanaged } from "../../commands/drift/report";
import { specWorkspace } from "../packaged/support/plugin";
import { CLI, type Cli, ensureBuilt, killClis, NO_DRAIN, ROOT, startCli } from "../support/edge-service";
import { freePort, sharedCluster } from "../support/postgres";
import type { Workspace } from "../support/workspace";
import { quiet, setSpec } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const PULUMI_EDGE = join(ROOT, "dist/commands/cli.js");
const RECIPES = join(ROOT, "examples", "backup-restore");
const ADMIN = "admin-key-of-the-restore-test-0123456789abcdef";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const route = (n: number, backendId = "bkd_1") => ({
  name: `r${n}`,
  edge: "web",
  args: { matchType: "path_prefix", match: `/r${n}`, backend: { backendId } },
});
const DAY1 = {
  edges: ["web"],
  tlsEdges: ["db"],
  routes: [0, 1, 2, 3, 4].map((n) => route(n)),
  tls: [{ name: "db-ipr", edge: "db", args: { ipPolicyIds: ["ipp_office"] } }],
};
// Two routes added, two pointed elsewhere, one removed, and the IP restriction removed.
const DAY2 = {
  edges: ["web"],
  tlsEdges: ["db"],
  routes: [route(0, "bkd_2"), route(1, "bkd_2"), route(2), route(3), route(5), route(6)],
};

/** Why the provider names no author for the restore's drift. */
const REASON =
  /the service's history does not reach the stack's last change \(request (op_\w+)\): restored or pruned\?/;
const UNATTRIBUTED = new RegExp(`author unknown: ${REASON.source}`);

const STORES = [
  { store: "SQLite", face: "dynamic" as const },
  { store: "PostgreSQL", face: "packaged" as const },
];

beforeAll(() => ensureBuilt(), 300_000);
afterAll(() => killClis());

describe.each(STORES)("restored on $store ($face face)", ({ store, face }) => {
  let ws: Workspace;
  let work: string;
  let stack: Stack;
  let server: Cli;
  /** SQLite: the data directory; PostgreSQL: the database URL. */
  let location: string;
  let port: string;
  const keys = { read: "", write: "" };
  /** Each route's and the TLS edge's ids after day 1 (a route: its edge's id and its own). */
  const ids: Record<string, { edge: string; route?: string }> = {};
  let backupNewest: number;
  let day2Newest: number;

  const sqlite = store === "SQLite";
  const storeArgs = () => (sqlite ? ["--data", location] : ["--database", location]);
  const serve = async () => {
    server = await startCli(["--port", port, ...NO_DRAIN, ...storeArgs()], { EDGE_API_KEY: ADMIN });
  };
  const stop = async () => {
    server.child.kill("SIGTERM");
    await server.exit;
  };
  const edgeService = (args: string[]) =>
    execFileSync(process.execPath, [CLI, ...args, ...storeArgs()], {
      encoding: "utf8",
      env: { ...process.env, EDGE_API_KEY: "" },
    }).trim();
  const stacksDir = () => dirname(ws.dir);
  const env = (extra: Record<string, string>) => ({
    ...process.env,
    ...engine.engineEnv({ stateDir: ws.stateDir, extra }),
  });
  const run = (cmd: string, args: string[], extra: Record<string, string>): Promise<Run> =>
    new Promise((resolve) =>
      execFile(
        cmd,
        args,
        { cwd: stacksDir(), env: env(extra), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
  /** A recipe of examples/backup-restore as documented. */
  const recipe = (script: string, args: string[], extra: Record<string, string> = {}) =>
    run("bash", [join(RECIPES, script), ...args], extra);
  /** `pulumi-edge drift ARGS` on this stack, with `key`. */
  const drift = (args: string[], key: string) =>
    run(process.execPath, [PULUMI_EDGE, "drift", "--stack", `${basenameOf(ws.dir)}:prod`, ...args], {
      EDGE_API_KEY: key,
    });
  const basenameOf = (dir: string) => dir.slice(dirname(dir).length + 1);
  const trail = async (): Promise<AuditEvent[]> => {
    const client = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: ADMIN, retries: 0 }));
    const out: AuditEvent[] = [];
    for (let beforeId: string | undefined; ;) {
      const page = await client.listAuditEvents({ limit: 100, beforeId });
      out.push(...page.audit_events);
      if (page.next_page_uri === null || page.audit_events.length === 0) return out;
      beforeId = page.audit_events.at(-1)!.id;
    }
  };
  const seq = (e: AuditEvent) => Number(e.id.replace(/^aud_/, ""));

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "edge-restore-"));
    port = String(await freePort());
    location = sqlite ? join(work, "data") : await (await sharedCluster()).createDatabase();
    await serve();
    keys.read = edgeService(["keys", "create", "ci-drift", "--scope", "read"]);
    keys.write = edgeService(["keys", "create", "deployer", "--scope", "write"]);
    edgeService(["keys", "create", "old-ops", "--scope", "write"]);
    ws = specWorkspace(face, `restore-${store.toLowerCase()}`);
    stack = await engine.directoryStack({
      workDir: ws.dir,
      stackName: "prod",
      stateDir: ws.stateDir,
      env: { EDGE_API_KEY: "" },
    });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("edge:apiKey", { value: keys.write, secret: true });
  }, 300_000);

  afterAll(async () => {
    if (server?.child.exitCode === null) await stop();
    ws?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("day 1 backed up while serving; day 2 changed; the store restored as documented", async () => {
    await setSpec(stack, DAY1);
    const up = await stack.up(quiet);
    const routes = up.outputs.routes!.value as Record<
      string,
      { id: string; routeId?: string; edgeId: string }
    >;
    for (const [name, r] of Object.entries(routes)) ids[name] = { edge: r.edgeId, route: r.routeId ?? r.id };
    ids.db = { edge: (up.outputs.tlsEdgeIds!.value as Record<string, string>).db! };

    const backup = join(work, sqlite ? "edge-backup.db" : "edge.dump");
    const backedUp = await recipe(sqlite ? "sqlite.sh" : "postgres.sh", ["backup", location, backup]);
    expect(backedUp).toMatchObject({ code: 0 });
    backupNewest = seq((await trail())[0]!);

    await setSpec(stack, DAY2);
    const day2 = await stack.up(quiet);
    expect(day2.summary.resourceChanges).toMatchObject({ create: 2, update: 2, delete: 2 });
    edgeService(["keys", "revoke", "old-ops"]);
    day2Newest = seq((await trail())[0]!);

    await stop();
    const restored = await recipe(sqlite ? "sqlite.sh" : "postgres.sh", ["restore", location, backup]);
    expect(restored).toMatchObject({ code: 0 });
    await serve();
    expect(seq((await trail())[0]!)).toBe(backupNewest);
  }, 900_000);

  test("a refresh through the engine finds exactly the restore's drift and names no key for it", async () => {
    // Without --diff: the engine prints a resource's warnings only then.
    const preview = await stack.preview({ ...quiet, refresh: true });
    expect(preview.changeSummary).toMatchObject({ create: 2, update: 2 });
    const out = preview.stdout;
    for (const name of ["r0", "r1"])
      expect(out).toMatch(
        new RegExp(`route ${name}: backend\\.backendId changed out of band, ${UNATTRIBUTED.source}`),
      );
    for (const name of ["r5", "r6"])
      expect(out).toMatch(new RegExp(`route ${name}: deleted out of band, ${UNATTRIBUTED.source}`));
    expect(out).not.toMatch(/out of band[^\n]* by key/);
  }, 600_000);

  test("the documented check: the stack drifted with no author, and what day 2 removed, unmanaged", async () => {
    const check = await recipe("after-restore.sh", ["check", stacksDir()], { EDGE_READ_KEY: keys.read });
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/:prod\s+drifted\s+fast\s+4 resources/);
    expect(check.stdout).toMatch(
      new RegExp(`backend\\.backendId: "bkd_2" => "bkd_1", ${UNATTRIBUTED.source}`),
    );
    expect(check.stdout).toMatch(new RegExp(`whole resource: deleted, ${UNATTRIBUTED.source}`));
    expect(check.stdout).not.toContain("by key");
    const r4 = `${ids.r4!.edge}/${ids.r4!.route}`;
    expect(check.stdout).toContain(`pulumi import edge:index:HttpsEdgeRoute web.r4 ${r4}`);
    expect(check.stdout).toContain(
      `pulumi import edge:index:TlsEdgeIpRestriction db.ipRestriction ${ids.db!.edge}`,
    );
    expect(check.stdout.trimEnd().split("\n").pop()).toBe(
      "1 stack: 1 drifted, 0 clean, 0 error; 2 unmanaged objects",
    );
  }, 600_000);

  test("every path says the same in JSON: the drift, no author, the two objects no stack holds", async () => {
    const r4 = `${ids.r4!.edge}/${ids.r4!.route}`;
    // The fast path reads the states it judged; the others read them for the list: that one on one
    // store (a preview each; the engine path's reading of warnings: tests/provider/authorship).
    for (const path of sqlite ? ["fast", "refresh"] : ["fast"]) {
      const run = await drift(["--path", path, "--unmanaged", "--format", "json"], keys.read);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as FleetReport & { summary: Record<string, number> };
      expect(report.summary).toEqual({ stacks: 1, clean: 0, drifted: 1, error: 0, unmanaged: 2 });
      const [s] = report.stacks as StackReport[];
      expect(s!.path).toBe(path);
      const byName = Object.fromEntries(s!.resources.map((r) => [r.name, r]));
      expect(Object.keys(byName).sort()).toEqual(["r0", "r1", "r5", "r6"]);
      for (const name of ["r0", "r1"]) {
        expect(byName[name]).toMatchObject({ op: "update", authors: [] });
        expect(byName[name]!.fields).toEqual([{ path: "backend.backendId", from: '"bkd_2"', to: '"bkd_1"' }]);
        expect(byName[name]!.unattributed).toEqual([
          {
            field: "backend.backendId",
            since: expect.stringMatching(/^op_/),
            reason: expect.stringMatching(REASON),
          },
        ]);
      }
      for (const name of ["r5", "r6"]) {
        expect(byName[name]).toMatchObject({ op: "create", fields: [], authors: [] });
        expect(byName[name]!.unattributed).toEqual([
          {
            field: "",
            change: "deleted",
            since: expect.stringMatching(/^op_/),
            reason: expect.stringMatching(REASON),
          },
        ]);
      }
      const unmanaged = report.unmanaged as Unmanaged;
      expect(unmanaged.caveats).toEqual([]);
      expect(unmanaged.services).toHaveLength(1);
      expect(unmanaged.services[0]!.objects.map((o) => [o.type, o.id, o.name])).toEqual([
        ["HttpsEdgeRoute", r4, "web.r4"],
        ["TlsEdgeIpRestriction", ids.db!.edge, "db.ipRestriction"],
      ]);
      expect(unmanaged.services[0]!.objects[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    if (sqlite) {
      const junit = join(work, "drift.xml");
      const md = await drift(
        ["--path", "fast", "--unmanaged", "--format", "markdown", "--junit", junit],
        keys.read,
      );
      expect(md.stdout).toContain("### Unmanaged objects");
      expect(md.stdout).toContain(`| \`HttpsEdgeRoute\` | \`${r4}\` |`);
      expect(md.stdout).toMatch(
        /\| `backend\.backendId` \| "bkd_2" => "bkd_1" \| author unknown: the service's history/,
      );
      const xml = readFileSync(junit, "utf8");
      expect(xml).toContain('<failure type="unmanaged" message="2 objects no checked stack holds">');
      expect(xml).toContain(`pulumi import edge:index:TlsEdgeIpRestriction db.ipRestriction ${ids.db!.edge}`);
    }
  }, 900_000);

  test("a key revoked since the backup is in force again, until revoked again", async () => {
    const listed = JSON.parse(edgeService(["keys", "list", "--json"])) as Array<{
      name: string;
      revoked_at: string | null;
    }>;
    expect(listed.find((k) => k.name === "old-ops")?.revoked_at).toBeNull();
    edgeService(["keys", "revoke", "old-ops"]);
    const again = JSON.parse(edgeService(["keys", "list", "--json"])) as Array<{
      name: string;
      revoked_at: string | null;
    }>;
    expect(again.find((k) => k.name === "old-ops")?.revoked_at).toEqual(expect.any(String));
  });

  test("the documented convergence, then the objects no stack holds deleted: every check clean", async () => {
    const converge = await recipe("after-restore.sh", ["converge", stacksDir()], {
      EDGE_READ_KEY: keys.read,
      EDGE_WRITE_KEY: keys.write,
    });
    expect(converge.code).toBe(1); // drift was found (and put right)
    expect(converge.stdout).toMatch(/:prod\s+drifted\s+fast\s+4 resources\s+restored/);

    // Still listed once the stacks are back: what no stack holds is the operator's to import or delete.
    expect(converge.stdout.trimEnd().split("\n").pop()).toBe(
      "1 stack: 1 drifted, 0 clean, 0 error; 2 unmanaged objects",
    );
    for (const path of [
      `/edges/https/${ids.r4!.edge}/routes/${ids.r4!.route}`,
      `/edges/tls/${ids.db!.edge}/ip_restriction`,
    ])
      execFileSync(process.execPath, [CLI, "request", "DELETE", path, "--url", server.url], {
        encoding: "utf8",
        env: { ...process.env, EDGE_API_KEY: keys.write },
      });

    const clean = await recipe("after-restore.sh", ["check", stacksDir()], { EDGE_READ_KEY: keys.read });
    expect(clean.code).toBe(0);
    expect(clean.stdout.trimEnd().split("\n").pop()).toBe(
      "1 stack: 0 drifted, 1 clean, 0 error; 0 unmanaged objects",
    );
    await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
  }, 900_000);

  test("the audit trail: the backup's events, then the up's and the deletes, numbered on from the backup's", async () => {
    const events = await trail();
    const since = events.filter((e) => seq(e) > backupNewest);
    // Numbered on from the backup's newest: the ids of day 2's lost events are given again.
    expect(Math.min(...since.map(seq))).toBe(backupNewest + 1);
    expect(day2Newest).toBeGreaterThan(backupNewest + 1);
    const what = since.map((e) => `${e.operation} ${e.key ?? "(none)"}`).sort();
    expect(what).toEqual(
      [
        "create_route deployer",
        "create_route deployer",
        "delete_route deployer",
        "delete_tls_ip_restriction deployer",
        "revoke_api_key (none)",
        "update_route deployer",
        "update_route deployer",
      ].sort(),
    );
  }, 300_000);
});
