/**
 * Adopting a fleet made outside Pulumi (issue 20): edges, routes with modules and secrets, TLS
 * edges with and without an IP restriction are made over HTTP; `pulumi-edge export` writes
 * edges.yaml and import.json into examples/adopt-fleet (a copy); `pulumi import --file` adopts
 * everything; the program deploying that edges.yaml then previews with no changes, and nothing
 * is written to the service. What the import stores as inputs leaves out the contract's defaults.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { quiet, type RecordingServer, recordingServer, stateExport } from "../engine/support/harness";
import { programWorkspace, type Workspace } from "../support/workspace";
import { PLUGIN_DIR, pulumiCli } from "./support/plugin";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const CLI = join(engine.ROOT, "dist", "commands", "cli.js");

const SECRETS = { webhook: "whsec_fleet_do_not_leak", oidc: "oidc_fleet_do_not_leak" };
let server: RecordingServer;
let ws: Workspace;
let stack: Stack;
const made: Record<string, string> = {};

/** `pulumi-edge export` as a user runs it (async: the service answers from this process). */
async function pulumiEdge(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env = { ...process.env };
  for (const k of ["EDGE_API_URL", "EDGE_API_KEY", "EDGE_DATA_DIR"]) delete env[k];
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ws.dir, env, encoding: "utf8" });
}

beforeAll(async () => {
  ws = programWorkspace(join(engine.ROOT, "examples", "adopt-fleet"), "adopt-fleet");
  // The example names the plugin where npm puts it in a user's project; here that is the repository's.
  const file = join(ws.dir, "Pulumi.yaml");
  writeFileSync(file, readFileSync(file, "utf8").replace("node_modules/pulumi-edge/bin", PLUGIN_DIR));
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-fleet-")));
  const c = server.client;
  // Made out of band, as another team or another tool would, with the defaults spelled out or not.
  const shop = await c.createHttpsEdge({ description: "Shop", hostports: ["shop.example.com:443"] });
  const api = await c.createRoute(shop.id, {
    match_type: "path_prefix",
    match: "/api",
    description: "Shop API",
    backend: { backend_id: "bkd_api", enabled: true },
    ip_restriction: { ip_policy_ids: ["ipp_b", "ipp_a"] },
    circuit_breaker: { tripped_duration: 30, rolling_window: 0, num_buckets: 10 },
    request_headers: { add: { "X-Source": "edge" }, remove: ["Cookie"] },
  });
  await c.createRoute(shop.id, {
    match_type: "exact_path",
    match: "/hooks/stripe",
    backend: { backend_id: "bkd_billing" },
    webhook_verification: { provider: "Stripe", secret: SECRETS.webhook },
  });
  await c.createRoute(shop.id, {
    match_type: "path_prefix",
    match: "/admin",
    backend: { backend_id: "bkd_admin" },
    oidc: { issuer: "https://login.example.com", client_id: "admin", client_secret: SECRETS.oidc },
  });
  await c.createRoute(shop.id, { match_type: "path_prefix", match: "/", compression: {}, metadata: "" });
  const docs = await c.createHttpsEdge({ hostports: ["docs.example.com:443"] });
  await c.createRoute(docs.id, {
    match_type: "path_prefix",
    match: "/",
    saml: {
      idp_metadata: `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com"/>`,
    },
  });
  const db = await c.createTlsEdge({ description: "Postgres", hostports: ["db.example.com:5432"] });
  await c.putTlsIpRestriction(db.id, { ip_policy_ids: ["ipp_office", "ipp_ci"], enabled: true });
  const bare = await c.createTlsEdge({ metadata: '{"name":"mqtt"}' });
  Object.assign(made, { shop: shop.id, api: api.id, docs: docs.id, db: db.id, bare: bare.id });

  stack = await engine.directoryStack({ workDir: ws.dir, stackName: "dev", stateDir: ws.stateDir });
  await stack.setConfig("edge:baseUrl", { value: server.url });
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

test("export, pulumi import --file, then the program of the exported edges.yaml previews with no changes", async () => {
  const secretsDir = join(ws.dir, "..", "fleet-secrets"); // beside the project: gone with the workspace
  const { stdout } = await pulumiEdge(["export", "--base-url", server.url, "--secrets-dir", secretsDir]);
  expect(stdout).toMatch(/exported 2 HTTPS edges \(5 routes\) and 2 TLS edges \(1 IP restriction\)/);
  const yaml = readFileSync(join(ws.dir, "edges.yaml"), "utf8");
  expect(yaml).not.toMatch(/do_not_leak/);
  expect(yaml).toContain("secret: !secret shopHooksStripeWebhookSecret");
  expect(yaml).toContain("clientSecret: !secret shopAdminOidcClientSecret");
  expect(yaml).not.toMatch(/enabled: true|rollingWindow|metadata: ""/);
  expect(statSync(secretsDir).mode & 0o777).toBe(0o700);

  // The secrets, set as the export says (from the files it wrote, mode 0600).
  const keys = [...stdout.matchAll(/pulumi config set --secret (\w+) < (\S+)/g)];
  expect(keys.map((k) => k[1]).sort()).toEqual(["shopAdminOidcClientSecret", "shopHooksStripeWebhookSecret"]);
  for (const [, key, file] of keys) {
    const path = join(ws.dir, file!);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await stack.setConfig(key!, { value: readFileSync(path, "utf8"), secret: true });
  }

  server.reset();
  const importFile = join(ws.dir, "import.json");
  const out = await pulumiCli(
    ws,
    ["import", "--file", importFile, "--yes", "--protect=false", "--generate-code=false"],
    "dev",
  );
  expect(out).toMatch(/10 imported/); // 2 HTTPS edges, 5 routes, 2 TLS edges, 1 IP restriction

  // Stored inputs are as a person writes them: the service's defaults left out.
  const exported = await stateExport(stack, ws.stateDir);
  expect(exported).not.toMatch(/do_not_leak/);
  const resources = (
    JSON.parse(exported) as {
      deployment: {
        resources: Array<{ type: string; id?: string; urn: string; inputs?: Record<string, unknown> }>;
      };
    }
  ).deployment.resources;
  const byName = (name: string) => resources.find((r) => r.urn.endsWith(`::${name}`))!;
  expect(byName("shop.shop-api")).toMatchObject({ id: `${made.shop}/${made.api}` });
  expect(byName("shop.shop-api").inputs).toEqual({
    edgeId: made.shop,
    matchType: "path_prefix",
    match: "/api",
    description: "Shop API",
    backend: { backendId: "bkd_api" },
    ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] },
    circuitBreaker: { trippedDuration: 30, numBuckets: 10 },
    requestHeaders: { add: { "X-Source": "edge" }, remove: ["Cookie"] },
  });
  expect(byName("shop.root").inputs).toEqual({
    edgeId: made.shop,
    matchType: "path_prefix",
    match: "/",
    compression: {},
  });
  expect(byName("shop").inputs).toEqual({ description: "Shop", hostports: ["shop.example.com:443"] });
  expect(byName("postgres.ipRestriction").inputs).toEqual({
    edgeId: made.db,
    ipPolicyIds: ["ipp_office", "ipp_ci"],
  });
  expect(byName("mqtt").inputs).toEqual({ metadata: '{"name":"mqtt"}' });
  expect(byName("docs-example-com.root")).toMatchObject({
    id: expect.stringMatching(new RegExp(`^${made.docs}/`)),
  });

  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.preview({ ...quiet, expectNoChanges: true, refresh: true });
  const up = await stack.up(quiet);
  expect(Object.keys(up.summary.resourceChanges ?? {})).toEqual(["same"]);
  expect(server.mutations()).toEqual([]);
});

test("pulumi import of one route by <edgeId>/<routeId> stores its inputs without the defaults", async () => {
  const one = await engine.directoryStack({ workDir: ws.dir, stackName: "one", stateDir: ws.stateDir });
  await one.setConfig("edge:baseUrl", { value: server.url });
  server.reset();
  await pulumiCli(
    ws,
    [
      "import",
      "edge:index:HttpsEdgeRoute",
      "api",
      `${made.shop}/${made.api}`,
      "--yes",
      "--generate-code=false",
    ],
    "one",
  );
  const state = JSON.parse(await stateExport(one, ws.stateDir)) as {
    deployment: { resources: Array<{ type: string; inputs?: Record<string, unknown> }> };
  };
  const route = state.deployment.resources.find((r) => r.type === "edge:index:HttpsEdgeRoute")!;
  expect(route.inputs).toMatchObject({ circuitBreaker: { trippedDuration: 30, numBuckets: 10 } });
  expect(route.inputs).not.toHaveProperty("metadata");
  expect(JSON.stringify(route.inputs)).not.toMatch(/"enabled":true|rollingWindow|volumeThreshold/);
  expect(server.mutations()).toEqual([]);
});

test("export by --edge writes only those edges; bad flags are usage errors (exit 2)", async () => {
  const out = join(ws.dir, "..", "one-edge");
  const { stdout } = await pulumiEdge(["export", "--base-url", server.url, "--edge", made.db!, "--out", out]);
  expect(stdout).toMatch(/exported 0 HTTPS edges \(0 routes\) and 1 TLS edge \(1 IP restriction\)/);
  expect(readFileSync(join(out, "edges.yaml"), "utf8")).toMatch(/tlsEdges:\n {2}postgres:/);
  expect(stdout).not.toMatch(/secret/);
  await expect(pulumiEdge(["export", "--no-such-flag"])).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringMatching(
      /^pulumi-edge export: Unknown option '--no-such-flag'.*run pulumi-edge export --help/s,
    ),
  });
  await expect(pulumiEdge(["export", "--base-url", server.url, "--out", out])).rejects.toMatchObject({
    code: 1,
    stderr: expect.stringMatching(/already exist: add --force to overwrite/),
  });
});
