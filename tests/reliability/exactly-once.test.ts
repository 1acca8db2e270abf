/**
 * Exactly-once creates, whatever dies when: the fault table of issue 18, through the real engine,
 * on both faces and both stores (one SQLite server; two PostgreSQL replicas behind a round-robin
 * proxy), the service with an API key and `edge:baseUrl` set, as a CI job deploys.
 *
 * | fault                                                            | recovery, and nothing else           |
 * |------------------------------------------------------------------|--------------------------------------|
 * | an edge create commits, its answer is lost, the service is down 6 s | one more `pulumi up`               |
 * | a route create commits, its answer is lost, the service is down 6 s | one more `pulumi up`               |
 * | `pulumi up` killed (SIGKILL of its process group) mid-routes     | cancel, refresh --clear-pending-creates, up (under another host name) |
 * | the same with PULUMI_SKIP_CHECKPOINTS=true, on a stack whose state holds its anchor | the same |
 *
 * Afterwards: a preview with no changes, the service holds exactly what the state holds (nothing
 * twice, nothing unknown), destroy leaves nothing. A killed engine's provider processes (the
 * packaged plugin, the dynamic provider host running our runtime) end by themselves.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Cli, NO_DRAIN, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";
import type { Workspace } from "../support/workspace";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { packagedWorkspace } from "../packaged/support/plugin";
import {
  commandLine,
  descendants,
  engine,
  ensureBuilt,
  type FaultAction,
  type FaultProxy,
  faultProxy,
  killChildren,
  programWorkspace,
  repairEmptyAttrs,
  runPulumi,
  spawnPulumi,
  stateOf,
  waitFor,
} from "./support";

jest.setTimeout(300_000);

const KEY = "exactly-once-key";
/**
 * Twice the call's deadline: the lost create's retries all meet the outage, so the first run
 * gives up and the next one must recover (connections are refused at once meanwhile).
 */
const OUTAGE_MS = 6_000;
/** Short enough that the first run gives up during the outage (the next run must recover). */
const DEADLINE_MS = 3_000;

const SPEC = {
  edges: ["a", "b"],
  routes: ["a", "b"].flatMap((edge) =>
    [0, 1].map((i) => ({
      name: `${edge}-${i}`,
      edge,
      args: { matchType: "path_prefix", match: `/${edge}/${i}`, backend: { backendId: "bkd_1" } },
    })),
  ),
  tlsEdges: ["t"],
  tls: [{ name: "allow", edge: "t", args: { ipPolicyIds: ["ipp_1", "ipp_2"] } }],
};
const COUNTS = { https: 2, routes: 4, tls: 1, restrictions: 1 };

type Face = "dynamic" | "packaged";
type StoreKind = "sqlite" | "postgres";

/** The processes of ours a face's engine starts (what must end with a killed engine). */
const OURS: Record<Face, RegExp> = {
  packaged: /dist\/provider\/plugin\/index\.js/,
  dynamic: /cmd\/dynamic-provider/,
};

const services: Partial<Record<StoreKind, { urls: string[]; clis: Cli[]; client: EdgeClient }>> = {};
const dataDirs: string[] = [];

async function service(store: StoreKind) {
  const running = services[store];
  if (running) return running;
  ensureBuilt();
  // Stopped in afterAll only, with every run over: no drain to wait out.
  const clis =
    store === "sqlite"
      ? [await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir(), "--api-key", KEY])]
      : await (async () => {
          const url = await (await sharedCluster()).createDatabase();
          const replica = () => startCli(["--port", "0", ...NO_DRAIN, "--database", url, "--api-key", KEY]);
          return [await replica(), await replica()];
        })();
  const urls = clis.map((c) => c.url);
  const client = new EdgeClient(httpTransport({ baseUrl: urls[0]!, apiKey: KEY, retries: 0 }));
  services[store] = { urls, clis, client };
  return services[store];
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "edge-once-"));
  dataDirs.push(dir);
  return dir;
}

afterAll(async () => {
  killChildren();
  for (const s of Object.values(services)) {
    for (const c of s.clis) {
      c.child.kill("SIGTERM");
      await c.exit;
    }
  }
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

interface Setup {
  face: Face;
  ws: Workspace;
  proxy: FaultProxy;
  client: EdgeClient;
  env: Record<string, string>;
}

async function setup(
  face: Face,
  store: StoreKind,
  label: string,
  intercept: Parameters<typeof faultProxy>[0]["intercept"],
  env: Record<string, string> = {},
): Promise<Setup> {
  const svc = await service(store);
  const proxy = await faultProxy({ target: svc.urls, seed: 1, rate: 0, intercept });
  const ws =
    face === "dynamic"
      ? programWorkspace(`once-${label}`)
      : packagedWorkspace("packaged-spec-program", `once-${label}`);
  const stack = await engine.directoryStack({ workDir: ws.dir, stackName: "test", stateDir: ws.stateDir });
  await stack.setAllConfig({
    "edge:baseUrl": { value: proxy.url },
    "edge:apiKey": { value: KEY, secret: true },
    "edge:requestDeadlineMs": { value: String(DEADLINE_MS) },
    spec: { value: JSON.stringify(SPEC) },
  });
  return { face, ws, proxy, client: svc.client, env };
}

const run = (s: Setup, args: string[], hostname?: string, env = s.env) =>
  runPulumi(args, { cwd: s.ws.dir, stateDir: s.ws.stateDir, env, hostname });

const setSpec = async (s: Setup, spec: unknown) => {
  const stack = await engine.directoryStack({
    workDir: s.ws.dir,
    stackName: "test",
    stateDir: s.ws.stateDir,
  });
  await stack.setConfig("spec", { value: JSON.stringify(spec) });
};

/** What the provider says of an object an earlier create for the resource made (lifecycle/held). */
const FOUND_AGAIN = /already existed, made by an earlier create for this resource/;

const lastSegment = (id: string) => id.split("/").pop()!;

/** No changes to preview; the service holds exactly what the state holds; destroy leaves nothing. */
async function expectConverged(s: Setup) {
  const preview = await run(s, ["preview", "--expect-no-changes"]);
  expect([preview.code, preview.output]).toEqual([0, expect.stringContaining("unchanged")]);
  const stack = { name: "test", workspace: { workDir: s.ws.dir } };
  const { resources, pending } = await stateOf(stack, s.ws.stateDir);
  expect(pending).toEqual([]);
  const inState = (kind: string) =>
    resources
      .filter((r) => r.kind === kind)
      .map((r) => lastSegment(r.id))
      .sort();
  const https = (await s.client.listHttpsEdges()).https_edges;
  const tls = (await s.client.listTlsEdges()).tls_edges;
  const onService = {
    https: https.map((e) => e.id).sort(),
    routes: https.flatMap((e) => e.routes.map((r) => r.id)).sort(),
    tls: tls.map((e) => e.id).sort(),
    restrictions: tls
      .filter((e) => e.ip_restriction !== null)
      .map((e) => e.id)
      .sort(),
  };
  expect(onService).toEqual({
    https: inState("httpsEdge"),
    routes: inState("route"),
    tls: inState("tlsEdge"),
    restrictions: inState("tlsRestriction"),
  });
  expect(Object.fromEntries(Object.entries(onService).map(([k, v]) => [k, v.length]))).toEqual(COUNTS);
  const destroy = await run(s, ["destroy", "--yes", "--skip-preview"]);
  expect([destroy.code, destroy.output]).toEqual([0, expect.any(String)]);
  expect((await s.client.listHttpsEdges()).https_edges).toEqual([]);
  expect((await s.client.listTlsEdges()).tls_edges).toEqual([]);
}

async function teardown(s: Setup | undefined) {
  await s?.proxy.close();
  s?.ws.cleanup();
}

/**
 * The first create of `path` commits on the service and its answer is lost (the connection is
 * cut); the service is then unreachable for OUTAGE_MS. Anything that arrives in between is cut
 * before it is forwarded.
 */
function loseFirstAnswer(path: RegExp) {
  let state: "waiting" | "lost" | "down" | "up" = "waiting";
  const intercept = ({ method, path: p }: { method: string; path: string }): FaultAction | undefined => {
    if (state === "lost") return "reset-before";
    if (state !== "waiting" || method !== "POST" || !path.test(p)) return undefined;
    state = "lost";
    return "reset-after";
  };
  /** Starts the outage once the lost create has committed; resolves when the service is back. */
  const outage = async (proxy: FaultProxy) => {
    await waitFor(
      () => proxy.log.some((r) => r.action === "reset-after" && r.upstreamStatus === 201),
      "the lost create",
      120_000,
    );
    state = "down";
    await proxy.outage(OUTAGE_MS);
    state = "up";
  };
  return { intercept, outage };
}

const CASES: Array<[Face, StoreKind]> = [
  ["dynamic", "sqlite"],
  ["packaged", "sqlite"],
  ["dynamic", "postgres"],
  ["packaged", "postgres"],
];

describe.each(CASES)("%s face, %s", (face, store) => {
  test.each([
    ["an edge create", /^\/edges\/https$/],
    ["a route create", /^\/edges\/https\/[^/]+\/routes$/],
  ])(
    "%s commits, its answer is lost, the service is down 6 s: one more `pulumi up` recovers",
    async (what, path) => {
      const fault = loseFirstAnswer(path);
      let s: Setup | undefined;
      try {
        s = await setup(face, store, `${face}-${store}-${what.split(" ")[1]}`, fault.intercept);
        const outage = fault.outage(s.proxy);
        const first = await run(s, ["up", "--yes", "--skip-preview"]);
        expect(first.code).not.toBe(0);
        // The engine's log says what the provider was doing while it retried, then why it stopped.
        expect(first.output).toMatch(
          /retrying in [0-9.]+ s, giving up in [0-9.]+ s \(edge:requestDeadlineMs\)/,
        );
        expect(first.output).toMatch(
          /cannot reach the edge service at .* after \d+ attempts within the call's deadline of 3 s/,
        );
        await outage;
        const second = await run(s, ["up", "--yes", "--skip-preview"]);
        expect([second.code, second.output]).toEqual([0, expect.stringMatching(FOUND_AGAIN)]);
        await expectConverged(s);
      } finally {
        await teardown(s);
      }
    },
  );

  test.each<[string, Record<string, string>, string]>([
    // The stack's first update, retried on another machine as a CI retry runs in a new container:
    // the state holds the anchor (written before the first create), so nothing depends on the host.
    ["with checkpoints, the retry under another host name", {}, "ci-retry"],
    // Fast mode writes nothing before the run's end: it is safe once the state holds the anchor
    // (a first update in fast mode is refused: tests/reliability/create-identity).
    [
      "with PULUMI_SKIP_CHECKPOINTS=true, after a first update",
      { PULUMI_SKIP_CHECKPOINTS: "true" },
      "ci-retry",
    ],
  ])(
    "`pulumi up` killed mid-routes (%s): cancel, refresh --clear-pending-creates, up recover",
    async (label, env, hostname) => {
      let routeCreates = 0;
      let s: Setup | undefined;
      try {
        s = await setup(
          face,
          store,
          `${face}-${store}-kill${label.length}`,
          ({ method, path }) => {
            if (method !== "POST" || !/\/routes$/.test(path)) return undefined;
            // The second route create commits and is never answered: the kill finds it in flight.
            return ++routeCreates === 2 ? "stall-after" : undefined;
          },
          env,
        );
        if (env.PULUMI_SKIP_CHECKPOINTS) {
          // The stack's first update (with checkpoints): the TLS edge only; the routes come next.
          await setSpec(s, { ...SPEC, edges: [], routes: [] });
          const first = await run(s, ["up", "--yes", "--skip-preview"], undefined, {});
          expect([first.code, first.output]).toEqual([0, expect.any(String)]);
          await setSpec(s, SPEC);
        }
        const up = spawnPulumi(["up", "--yes", "--skip-preview"], {
          cwd: s.ws.dir,
          stateDir: s.ws.stateDir,
          env,
        });
        await waitFor(
          () => s!.proxy.log.some((r) => r.action === "stall-after" && r.upstreamStatus === 201),
          "the second route create to commit",
          180_000,
        );
        const tree = descendants(up.child.pid!);
        const ours = () => tree.filter((pid) => OURS[face].test(commandLine(pid)));
        expect(ours().length).toBeGreaterThan(0);
        process.kill(-up.child.pid!, "SIGKILL"); // the CLI's process group, as a CI timeout does
        expect((await up.exit).signal).toBe("SIGKILL");
        // Our provider processes are in groups of their own: they see the engine gone and exit.
        await waitFor(() => ours().length === 0, "the provider processes to exit by themselves", 60_000, 200);
        for (const pid of tree) {
          try {
            process.kill(pid, "SIGKILL"); // what is left is Pulumi's own (the language host)
          } catch {
            // gone
          }
        }
        repairEmptyAttrs(s.ws.stateDir);
        expect((await run(s, ["cancel", "--yes"], hostname)).code).toBe(0);
        const refresh = await run(
          s,
          ["refresh", "--yes", "--skip-preview", "--clear-pending-creates"],
          hostname,
        );
        expect([refresh.code, refresh.output]).toEqual([0, expect.any(String)]);
        const up2 = await run(s, ["up", "--yes", "--skip-preview"], hostname);
        // Found again by the anchor the state kept.
        expect([up2.code, up2.output]).toEqual([0, expect.stringMatching(FOUND_AGAIN)]);
        await expectConverged(s);
      } finally {
        await teardown(s);
      }
    },
  );
});
