/**
 * Every example under examples/ runs through the real engine, offline, against the embedded
 * service (or, for drift detection, a running edge-service), exactly as a user would run it.
 */
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { quiet, recordingServer, stateExport } from "../engine/support/harness";
import { MARKER_VARIABLE, processesMarked, survivors } from "../support/leftovers";
import { scaled } from "../support/machine";
import { programWorkspace } from "../support/workspace";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

/**
 * What a test made that must not outlive it, undone after it whether it passed, failed or timed
 * out: jest runs afterEach after a timeout too, while a timed-out body's own `finally` may run
 * only after the whole run (or never), leaving a temp directory behind.
 */
const undo: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of undo.splice(0).reverse()) await step();
});

/** A copy of an example inside the repository (so its imports resolve as in a user's project). */
function copyExample(name: string) {
  const ex = programWorkspace(join(engine.ROOT, "examples", name), `example-${name}`);
  undo.push(() => ex.cleanup());
  return ex;
}

/** A recording server on a temp data directory of its own, closed (and the directory removed) after the test. */
async function serverForTest(label: string) {
  const server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-${label}-`)));
  undo.push(() => server.close());
  return server;
}

// Engine runs on a loaded 2-core machine take several times what they take idle: every test of
// this file gets jest's limit scaled to this machine (tests/support/machine.ts).
jest.setTimeout(scaled(300_000));

async function exampleStack(ex: { dir: string; stateDir: string }): Promise<Stack> {
  return engine.directoryStack({ workDir: ex.dir, stateDir: ex.stateDir, stackName: "dev" });
}

test("https-route-basic: edge and route with backend, compression, headers, circuit breaker", async () => {
  const ex = copyExample("https-route-basic");
  const stack = await exampleStack(ex);
  const up = await stack.up(quiet);
  expect(up.summary.resourceChanges?.create).toBe(4); // the stack, an edge, a route, the stack's anchor (provider/identity)
  expect(up.outputs.circuitBreaker!.value).toEqual({
    enabled: true,
    trippedDuration: 30,
    rollingWindow: 60,
    numBuckets: 10,
    volumeThreshold: 20,
    errorThresholdPercentage: 0.5,
  });
  expect(existsSync(join(ex.dir, ".edge-service", "edge.db"))).toBe(true);
  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.destroy(quiet);
});

test("https-route-auth: OAuth (GitHub teams/orgs), OIDC and SAML; secrets from config; SAML outputs", async () => {
  const ex = copyExample("https-route-auth");
  const githubSecret = "gh-example-secret-0c5e";
  const oidcSecret = "oidc-example-secret-7d21";
  const stack = await exampleStack(ex);
  await stack.setConfig("githubClientSecret", { value: githubSecret, secret: true });
  await stack.setConfig("oidcClientSecret", { value: oidcSecret, secret: true });
  const up = await stack.up(quiet);
  const metadataUrl = up.outputs.samlMetadataUrl!.value as string;
  expect(metadataUrl).toMatch(/^http:\/\/edge-service\.embedded\/saml\/edghtsrt_[A-Za-z0-9]{27}\/metadata$/);
  expect(up.outputs.samlAcsUrl!.value).toBe(metadataUrl.replace(/metadata$/, "acs"));
  const cert = new X509Certificate(up.outputs.samlCertificate!.value as string);
  expect(cert.verify(cert.publicKey)).toBe(true);
  const exported = await stateExport(stack, ex.stateDir);
  expect(exported).not.toContain(githubSecret);
  expect(exported).not.toContain(oidcSecret);
  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.destroy(quiet);
});

test("tls-ip-restriction: a TLS edge and its IP restriction module", async () => {
  const ex = copyExample("tls-ip-restriction");
  const stack = await exampleStack(ex);
  const up = await stack.up(quiet);
  expect(up.outputs.allowedPolicies!.value).toEqual(["ipp_office", "ipp_ci_runners"]);
  expect(up.outputs.enabled!.value).toBe(true);
  await stack.setConfig("ipPolicyIds", { value: JSON.stringify(["ipp_office"]) });
  const update = await stack.up(quiet);
  expect(update.summary.resourceChanges?.update).toBe(1);
  expect(update.outputs.allowedPolicies!.value).toEqual(["ipp_office"]);
  await stack.destroy(quiet);
});

test("packaged-typescript: the generated SDK and the plugin from the npm package, embedded service", async () => {
  const ex = copyExample("packaged-typescript");
  // The example names the plugin where npm puts it in a user's project; here that is the repository's.
  const file = join(ex.dir, "Pulumi.yaml");
  writeFileSync(
    file,
    readFileSync(file, "utf8").replace("node_modules/pulumi-edge/bin", join(engine.ROOT, "bin")),
  );
  const stack = await exampleStack(ex);
  const up = await stack.up(quiet);
  expect(up.summary.resourceChanges?.create).toBe(3);
  expect(up.outputs.routeId!.value).toMatch(/^edghts_\w+\/edghtsrt_\w+$/);
  expect(up.outputs.routeId!.value).toBe(
    `${String(up.outputs.routeId!.value).split("/")[0]}/${up.outputs.serviceRouteId!.value}`,
  );
  expect(up.outputs.circuitBreaker!.value).toMatchObject({ numBuckets: 10, errorThresholdPercentage: 0.5 });
  expect(existsSync(join(ex.dir, ".edge-service", "edge.db"))).toBe(true); // embedded by default
  await stack.preview({ ...quiet, expectNoChanges: true });
  const exported = await stateExport(stack, ex.stateDir);
  expect(exported).not.toContain("demo-secret");
  expect(exported).not.toContain("__provider");
  await stack.destroy(quiet);
});

test("declarative: edges.yaml validated with file, line, entry and field; an edit applies exactly that change", async () => {
  const ex = copyExample("declarative");
  const server = await serverForTest("declarative");
  const yamlFile = join(ex.dir, "edges.yaml");
  const original = readFileSync(yamlFile, "utf8");
  const stack = await exampleStack(ex);
  await stack.setConfig("edge:baseUrl", { value: server.url });
  await stack.setConfig("stripeWebhookSecret", { value: "whsec_declarative_example", secret: true });

  writeFileSync(
    yamlFile,
    original.replace("numBuckets: 10", "numBuckets: 1000").replace("provider: stripe", "provider: strype"),
  );
  const invalid = stack.preview(quiet);
  await expect(invalid).rejects.toThrow(
    /edges\.yaml:\d+:\d+: httpsEdges\.web\.routes\.api: circuitBreaker\.numBuckets: must be between 1 and 128/,
  );
  await expect(stack.preview(quiet)).rejects.toThrow(
    /edges\.yaml:\d+:\d+: httpsEdges\.web\.routes\.stripe-hooks: webhookVerification\.provider: is not a supported webhook provider/,
  );
  expect(server.mutations()).toEqual([]);

  writeFileSync(yamlFile, original);
  const up = await stack.up(quiet);
  expect(up.summary.resourceChanges?.create).toBe(8); // 2 edges, 3 routes, 1 restriction, the stack, its anchor
  const routes = up.outputs.routes!.value as Record<string, string>;
  expect(Object.keys(routes).sort()).toEqual(["web.api", "web.site", "web.stripe-hooks"]);

  writeFileSync(yamlFile, original.replace("numBuckets: 10", "numBuckets: 20"));
  server.reset();
  const edit = await stack.up(quiet);
  expect(edit.summary.resourceChanges?.update).toBe(1);
  expect(server.mutations()).toEqual([
    {
      method: "PATCH",
      path: expect.stringMatching(new RegExp(`/routes/${routes["web.api"]}$`)),
      body: { circuit_breaker: { num_buckets: 20, error_threshold_percentage: 0.25 } },
    },
  ]);
  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.destroy(quiet);
});

test("drift-detection: drift-check.sh detects an out-of-band change and restores it, leaving nothing behind", async () => {
  const ex = copyExample("drift-detection");
  // Everything the script starts carries this marker; its own temp dir shows what it left there.
  const marker = `drift-${process.pid}-${Date.now()}`;
  const tmp = mkdtempSync(join(tmpdir(), "pe-drift-"));
  undo.push(() => {
    for (const p of processesMarked(marker)) process.kill(p.pid, "SIGKILL");
    rmSync(tmp, { recursive: true, force: true });
  });
  const { stdout, stderr } = await promisify(execFile)("bash", [join(ex.dir, "drift-check.sh")], {
    env: {
      ...process.env,
      ...engine.engineEnv({ stateDir: ex.stateDir }),
      [MARKER_VARIABLE]: marker,
      TMPDIR: tmp,
    },
    maxBuffer: 32 * 1024 * 1024,
  });
  const out = stdout + stderr;
  expect(out).toContain("== drift check (what CI runs): must fail and name the drift");
  expect(out).toMatch(/backendId\s*:\s*"bkd_checkout" => "bkd_hotfix"|bkd_hotfix/);
  // The read key CI holds is refused any change, through the engine, with the service's reason.
  const refused = out.slice(out.indexOf("== the read key cannot change anything"), out.indexOf("== restore"));
  expect(refused).toContain("ERR_EDGE_403");
  expect(refused).toContain('the API key "ci-drift" has scope read');
  expect(out).toContain("== no drift left");
  // No process the script started outlives it (the edge-service it serves from, above all).
  expect(await survivors(marker)).toEqual([]);
  expect(readdirSync(tmp).filter((e) => e.startsWith("edge-"))).toEqual([]);
});

// The command provider plugin cannot be built offline here (see README, "The Pulumi engine,
// offline"); the example runs when the plugin is in the plugin cache.
const commandPlugin = (() => {
  const dir = join(process.env.PULUMI_HOME || join(homedir(), ".pulumi"), "plugins");
  const version = require("@pulumi/command/package.json").version;
  return existsSync(dir) && readdirSync(dir).includes(`resource-command-v${version}`);
})();
(commandPlugin ? test : test.skip)(
  "command: local.Command reads the deployed route back from the service",
  async () => {
    const ex = copyExample("command");
    const stack = await exampleStack(ex);
    const up = await stack.up(quiet);
    expect(up.outputs.backendSeenByService!.value).toBe("bkd_command_demo");
    await stack.destroy(quiet);
  },
);
