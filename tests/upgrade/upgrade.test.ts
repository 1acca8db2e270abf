/**
 * An upgrade from the previous release, for real: what it wrote keeps working with this tree.
 *
 * The previous release (releases.json: the newest older than package.json's version, or while
 * package.json still says a released version, that one; see ./release.ts) is built from git history and, with it:
 * - a dynamic-face stack (tests/engine/fixtures/spec-program) is deployed against an old
 *   `edge-service serve` on a SQLite data directory with a secrets key (sealed secrets), and
 * - a packaged-face stack (tests/packaged/fixtures/packaged-spec-program, its plugin the old
 *   `bin/pulumi-resource-edge`) against an old `edge-service serve` on a PostgreSQL database,
 * each an HTTPS edge with two routes carrying modules (one a webhook secret, a config secret), a
 * TLS edge and its IP restriction. Then everything is upgraded in place: the programs' packages
 * switch to this tree (the programs resolve `pulumi-edge` and `@pulumi/pulumi` through a
 * `node_modules` symlink beside them, pointed at the old build's node_modules, then at this
 * checkout's), the packaged program's plugin path and version too, and this tree's
 * `edge-service` serves the same data directory and database on the same ports (its migrations
 * run). Then: `pulumi preview --refresh` changes nothing on either face (but the dynamic face's
 * one new StackAnchor, which the next `up` makes); every edge and route the service answers parses
 * with the current contract and still says what the old release said; a route the old release made
 * but lost the answer of is found again by this tree's first update (nothing twice); an update
 * works; `destroy` leaves nothing on either service.
 *
 * Cost (measured on the shared 2-core machine at load average ~30, so an upper bound): with the
 * release cached (~/.cache/pulumi-edge/releases/<commit>), 475 s in jest, 1 min 47 s of CPU
 * (4 ups, 2 previews with refresh, 2 destroys, 4 service processes, one PostgreSQL cluster).
 * Cold (CI's fresh machine), building the old release first: `npm ci --prefer-offline` from the
 * warm npm cache, `tsc`, `npm run sdks`, 8 min 47 s at that load but 68 s of CPU. A clone
 * without the release's commit (shallow) fails, saying to fetch the full history.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import type { z } from "zod";
import {
  httpsEdgeListSchema,
  httpsEdgeSchema,
  tlsEdgeListSchema,
  tlsEdgeSchema,
  tlsIpRestrictionSchema,
} from "../../sdk/contract/edges";
import { routeListSchema, routeSchema } from "../../sdk/contract/routes";
import { LIFECYCLE_ROUTE } from "../engine/support/harness";
import { pulumiCli } from "../packaged/support/plugin";
import { freePort, type PgCluster, startCluster } from "../support/postgres";
import type { Workspace } from "../support/workspace";
import { builtRelease, currentVersion, edgeServiceCli, previousRelease, ROOT, type Release } from "./release";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const WEBHOOK_SECRET = "whsec-upgrade-7d1e3a90";
/** A secrets key (base64 of 32 bytes) for the SQLite service: its secrets are sealed at rest. */
const SECRETS_KEY = Buffer.alloc(32, 7).toString("base64");

/** The stacks' spec (see the fixtures): `staticDescription` is what the update changes. */
/** `take`: the api route taken on purpose (packaged: `import` of that id; dynamic: `adopt: true`). */
const spec = (staticDescription: string, take?: { face: string; id: string }) => ({
  edges: ["web"],
  tlsEdges: ["tcp"],
  routes: [
    {
      name: "api",
      edge: "web",
      args: take?.face === "dynamic" ? { ...LIFECYCLE_ROUTE, adopt: true } : LIFECYCLE_ROUTE,
      ...(take?.face === "packaged" ? { import: take.id } : {}),
    },
    {
      name: "static",
      edge: "web",
      args: {
        matchType: "path_prefix",
        match: "/static",
        description: staticDescription,
        backend: { backendId: "bkd_2" },
        compression: {},
        responseHeaders: { add: { "Cache-Control": "max-age=60" } },
      },
    },
  ],
  tls: [{ name: "allow", edge: "tcp", args: { ipPolicyIds: ["ipp_1"] } }],
});

/** One `edge-service serve` process (of a given release) on a fixed port. */
interface Service {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const services = new Set<ChildProcess>();

async function serve(tree: string, port: number, store: string[]): Promise<Service> {
  const cli = edgeServiceCli(tree);
  const child = spawn(
    process.execPath,
    [cli, "serve", "--host", "127.0.0.1", "--port", String(port), ...store],
    {
      cwd: tree,
      env: { ...process.env, EDGE_API_KEY: "", EDGE_DATABASE_URL: "", EDGE_SECRETS_KEY: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  services.add(child);
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      services.delete(child);
      resolve({ code, signal });
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`edge-service (${cli}) did not start: ${err}`)), 120_000);
    child.stdout!.on("data", () => {
      if (!out.includes("\n")) return;
      clearTimeout(timer);
      const first = out.split("\n")[0]!;
      if (/^edge-service listening on http:\/\//.test(first)) resolve(`http://127.0.0.1:${port}`);
      else reject(new Error(`unexpected first line of ${cli}: ${first}\n${err}`));
    });
    void exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`edge-service (${cli}) exited (${code ?? signal}): ${err}`));
    });
  });
  return { child, url, stderr: () => err, exit };
}

/** SIGTERM, and the exit it must make (bounded: SIGKILL and a failure after 120 s). */
async function stop(s: Service): Promise<void> {
  s.child.kill("SIGTERM");
  const timer = setTimeout(() => s.child.kill("SIGKILL"), 120_000);
  const { code, signal } = await s.exit;
  clearTimeout(timer);
  expect({ code, signal, stderr: code === 0 ? "" : s.stderr() }).toEqual({
    code: 0,
    signal: null,
    stderr: "",
  });
}

async function getJson<S extends z.ZodType>(url: string, schema: S): Promise<z.output<S>> {
  const res = await fetch(url);
  const body: unknown = await res.json();
  expect({ url, status: res.status }).toEqual({ url, status: 200 });
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(
      `${url} does not parse with the current contract: ${parsed.error.message}\n${JSON.stringify(body)}`,
    );
  }
  return parsed.data;
}

/**
 * Everything the service holds, each answer parsed with the current contract's response schema:
 * the edges (list and one by one), their routes (list and one by one), the TLS restrictions.
 */
async function holdings(url: string) {
  const https = await getJson(`${url}/edges/https`, httpsEdgeListSchema);
  const tls = await getJson(`${url}/edges/tls`, tlsEdgeListSchema);
  expect([https.next_page_uri, tls.next_page_uri]).toEqual([null, null]);
  const out: Record<string, unknown> = {};
  for (const e of https.https_edges) {
    out[e.id] = await getJson(`${url}/edges/https/${e.id}`, httpsEdgeSchema);
    const routes = await getJson(`${url}/edges/https/${e.id}/routes`, routeListSchema);
    expect(routes.next_page_uri).toBeNull();
    for (const r of routes.routes) {
      out[r.id] = await getJson(`${url}/edges/https/${e.id}/routes/${r.id}`, routeSchema);
    }
  }
  for (const e of tls.tls_edges) {
    out[e.id] = await getJson(`${url}/edges/tls/${e.id}`, tlsEdgeSchema);
    if (e.ip_restriction) {
      out[`${e.id}/ip_restriction`] = await getJson(
        `${url}/edges/tls/${e.id}/ip_restriction`,
        tlsIpRestrictionSchema,
      );
    }
  }
  return out;
}

type Face = "dynamic" | "packaged";
interface Deployment {
  face: Face;
  ws: Workspace;
  stack: Stack;
  port: number;
  store: string[];
  service?: Service;
  /** What the old release's service answered, after the old release deployed. */
  before?: Record<string, unknown>;
}

let release: Release;
let oldTree: string;
let base: string;
let cluster: PgCluster | undefined;
const deployments: Deployment[] = [];

/** Points the programs at a tree: their node_modules, and the packaged program's plugin. */
function useTree(tree: string, version: string): void {
  const link = path.join(base, "node_modules");
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.join(tree, "node_modules"), link, "dir");
  const yaml = path.join(base, "packaged-spec-program", "Pulumi.yaml");
  fs.writeFileSync(
    yaml,
    fs
      .readFileSync(yaml, "utf8")
      .replace(/^(\s*version:\s*).*$/m, `$1${version}`)
      .replace(/^(\s*path:\s*).*$/m, `$1${path.join(tree, "bin")}`),
  );
}

beforeAll(async () => {
  release = previousRelease();
  // Building a cold release takes minutes (npm ci, tsc, sdks): reported on stderr as it goes.
  oldTree = builtRelease(release, (m) => process.stderr.write(`[upgrade] building ${m}\n`));
  base = fs.mkdtempSync(path.join(os.tmpdir(), "edge-upgrade-"));
  for (const [fixture, dir] of [
    ["tests/engine/fixtures/spec-program", "spec-program"],
    ["tests/packaged/fixtures/packaged-spec-program", "packaged-spec-program"],
  ] as const) {
    fs.cpSync(path.join(ROOT, fixture), path.join(base, dir), {
      recursive: true,
      filter: (src) => !/[/\\](\.edge-service|node_modules)$|Pulumi\.[^/\\]+\.yaml$/.test(src),
    });
  }
  useTree(oldTree, release.version);

  cluster = await startCluster({ fsync: false });
  const database = await cluster.createDatabase();
  const keyFile = path.join(base, "secrets.key");
  fs.writeFileSync(keyFile, `${SECRETS_KEY}\n`, { mode: 0o600 });
  const stores: Record<Face, string[]> = {
    dynamic: ["--data", path.join(base, "sqlite-data"), "--secrets-key-file", keyFile],
    packaged: ["--database", database],
  };
  for (const face of ["dynamic", "packaged"] as const) {
    const dir = path.join(base, face === "dynamic" ? "spec-program" : "packaged-spec-program");
    const ws: Workspace = { dir, stateDir: path.join(base, `state-${face}`), cleanup: () => {} };
    const port = await freePort();
    const stack = await engine.directoryStack({ workDir: dir, stackName: "upgrade", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: `http://127.0.0.1:${port}` });
    await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
    deployments.push({ face, ws, stack, port, store: stores[face] });
  }
}, 1_800_000);

afterAll(async () => {
  for (const child of services) child.kill("SIGKILL");
  cluster?.destroy();
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

const quiet = { color: "never" as const };

test("the previous release deploys both faces, on both stores", async () => {
  expect(release.version).toMatch(/^\d+\.\d+\.\d+$/);
  for (const d of deployments) {
    d.service = await serve(oldTree, d.port, d.store);
    await d.stack.setConfig("spec", { value: JSON.stringify(spec("static files")) });
    const up = await d.stack.up(quiet);
    expect([d.face, up.summary.result]).toEqual([d.face, "succeeded"]);
    d.before = await holdings(d.service.url);
    // Two edges, two routes, one TLS restriction; the webhook secret as typed.
    expect(Object.keys(d.before)).toHaveLength(5);
    const routes = Object.values(d.before).filter((o) => (o as { match?: string }).match !== undefined);
    expect(
      routes.map((r) => (r as z.output<typeof routeSchema>).webhook_verification?.secret).sort(),
    ).toEqual([WEBHOOK_SECRET, undefined]);
    await stop(d.service);
  }
}, 1_200_000);

/** The steps a `pulumi preview --refresh --json` would take that change something: `<op> <type>`. */
async function changesPreviewed(d: Deployment): Promise<string[]> {
  const out = await pulumiCli(d.ws, ["preview", "--refresh", "--non-interactive", "--json"], "upgrade");
  const { steps = [] } = JSON.parse(out) as { steps?: Array<{ op: string; urn: string }> };
  return steps
    .filter((s) => !["same", "refresh"].includes(s.op))
    .map((s) => `${s.op} ${s.urn.split("::")[2]}`);
}

test("this tree serves the old data, and previews no change on either face", async () => {
  useTree(ROOT, currentVersion());
  for (const d of deployments) {
    d.service = await serve(ROOT, d.port, d.store);
    // The state written by the old release, refreshed by this tree's provider: nothing to do but,
    // on the dynamic face, the one StackAnchor that records the stack's anchor (provider/identity;
    // no object on the service), made by the first `up`.
    expect([d.face, await changesPreviewed(d)]).toEqual([
      d.face,
      d.face === "dynamic" ? ["create pulumi-nodejs:dynamic/edge:StackAnchor"] : [],
    ]);
    // Everything the service answers parses with the current contract and says what it said.
    const after = await holdings(d.service.url);
    expect(Object.keys(after).sort()).toEqual(Object.keys(d.before!).sort());
    expect([d.face, after]).toMatchObject([d.face, d.before!]);
  }
}, 1_200_000);

test("after the upgrade a create the old release lost fails clearly and is taken on purpose; an update works; destroy leaves nothing", async () => {
  for (const d of deployments) {
    const url = d.service!.url;
    // A route the old release made whose answer was lost: on the service, not in the state. This
    // tree does not guess at the old release's identity: the route's match names it, with the
    // command that takes it, and nothing is made twice.
    const { deployment } = await d.stack.exportStack();
    const api = (deployment.resources as Array<{ urn: string; id: string }>).find((r) =>
      /Route::api$/.test(r.urn),
    )!;
    await pulumiCli(d.ws, ["state", "delete", api.urn, "--yes", "--non-interactive"], "upgrade");
    await d.stack.setConfig("spec", { value: JSON.stringify(spec("static files, upgraded")) });
    let log = "";
    await expect(d.stack.up({ ...quiet, onOutput: (o) => (log += o) })).rejects.toThrow();
    const lostId = api.id.split("/").pop()!;
    expect(log).toMatch(
      new RegExp(`already has a route with matchType "\\w+" and match "[^"]+" \\(${lostId}\\)`),
    );
    expect(log).toContain(`pulumi import edge:index:HttpsEdgeRoute api `);
    expect(Object.keys(await holdings(url)).sort()).toEqual(Object.keys(d.before!).sort()); // nothing twice
    // Taken on purpose, as the message says.
    const importId = d.face === "packaged" ? api.id : lostId;
    await d.stack.setConfig("spec", {
      value: JSON.stringify(spec("static files, upgraded", { face: d.face, id: importId })),
    });
    await d.stack.up(quiet);
    expect(Object.keys(await holdings(url)).sort()).toEqual(Object.keys(d.before!).sort()); // nothing twice
    await pulumiCli(d.ws, ["preview", "--expect-no-changes", "--non-interactive"], "upgrade");
    // The dynamic face's route id is the route's; the packaged face's is "<edge id>/<route id>".
    const out = (await d.stack.outputs()).routes!.value as Record<
      string,
      { id: string; routeId?: string; edgeId: string }
    >;
    const { edgeId, id, routeId = id } = out.static!;
    const stat = await getJson(`${url}/edges/https/${edgeId}/routes/${routeId}`, routeSchema);
    expect(stat.description).toBe("static files, upgraded");

    await d.stack.destroy(quiet);
    const https = await getJson(`${url}/edges/https`, httpsEdgeListSchema);
    const tls = await getJson(`${url}/edges/tls`, tlsEdgeListSchema);
    expect([d.face, https.https_edges, tls.tls_edges]).toEqual([d.face, [], []]);
    await stop(d.service!);
  }
}, 1_200_000);
