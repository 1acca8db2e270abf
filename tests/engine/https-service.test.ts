/**
 * Both faces through the real engine against `edge-service serve` over TLS with a private CA and
 * mutual TLS (certificates made here with openssl): a stack deploys, drift-checks clean with
 * `pulumi preview --refresh --expect-no-changes` and with `pulumi-edge drift`, and destroys; the
 * client key is in no form in the state. The packaged face reads `edge:caCertificate` as a file
 * path relative to the program, the dynamic face as PEM text; both present the client
 * certificate; the dynamic face refuses a private key typed in plaintext before registering
 * anything.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { type Cli, ensureBuilt, killClis, ROOT, startCli } from "../support/edge-service";
import { type Issued, makePki, type Pki } from "../support/pki";
import type { Workspace } from "../support/workspace";
import { specWorkspace } from "../packaged/support/plugin";
import { backendText, quiet, setSpec, stateExport, stateFiles } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const PULUMI_EDGE = join(ROOT, "dist/commands/cli.js");
const FACES = ["packaged", "dynamic"] as const;
type Face = (typeof FACES)[number];

let pki: Pki;
let client: Issued;
let server: Cli;
let data: string;
let service: EdgeClient;
/** One file backend for both stacks, so that one `pulumi-edge drift` run checks both. */
let stateDir: string;
const ws = {} as Record<Face, Workspace>;
const stacks = {} as Record<Face, Stack>;
const spec = {
  edges: ["e"],
  routes: [{ name: "r", edge: "e", args: { matchType: "path_prefix", match: "/tls", compression: {} } }],
};

/** The `pulumi` CLI in a face's program directory, on the shared backend: exit code and output. */
function cli(face: Face, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      join(engine.PULUMI_BIN, "pulumi"),
      [...args, "--stack", `tls-${face}`, "--color", "never", "--non-interactive"],
      {
        cwd: ws[face].dir,
        env: { ...process.env, ...engine.engineEnv({ stateDir }) },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** The lines of the client key's base64 body: what any copy of it, escaped or not, contains. */
const keyLines = () => client.keyPem.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));

beforeAll(async () => {
  ensureBuilt();
  pki = makePki();
  client = pki.issue("pulumi-ci", { client: true });
  data = mkdtempSync(join(tmpdir(), "edge-https-service-"));
  server = await startCli(
    ["--port", "0", "--data", data, "--tls-cert", pki.server.cert, "--tls-key", pki.server.key],
    { EDGE_TLS_CLIENT_CA: pki.ca },
  );
  service = new EdgeClient(
    httpTransport({
      baseUrl: server.url,
      tls: { caCertificate: pki.ca, clientCertificate: client.cert, clientKey: client.key },
    }),
  );
  for (const face of FACES) {
    ws[face] = specWorkspace(face, `https-${face}`);
    stateDir ??= ws[face].stateDir;
    const stack = await engine.directoryStack({ workDir: ws[face].dir, stackName: `tls-${face}`, stateDir });
    await setSpec(stack, spec);
    const port = new URL(server.url).port;
    if (face === "packaged") {
      // A file beside the program, by a relative path; the service by its DNS name.
      mkdirSync(join(ws[face].dir, "certs"));
      copyFileSync(pki.ca, join(ws[face].dir, "certs", "ca.pem"));
      await stack.setConfig("edge:baseUrl", { value: `https://localhost:${port}` });
      await stack.setConfig("edge:caCertificate", { value: "certs/ca.pem" });
    } else {
      await stack.setConfig("edge:baseUrl", { value: server.url });
      await stack.setConfig("edge:caCertificate", { value: pki.caPem });
    }
    await stack.setConfig("edge:clientCertificate", { value: client.cert });
    stacks[face] = stack;
  }
}, 600_000);

afterAll(async () => {
  for (const face of FACES) await stacks[face]?.destroy(quiet).catch(() => undefined);
  server?.child.kill("SIGTERM");
  await server?.exit;
  killClis();
  for (const face of FACES) ws[face]?.cleanup();
  if (data) rmSync(data, { recursive: true, force: true });
  pki?.cleanup();
}, 600_000);

test("dynamic face: a private key typed in plaintext is refused before anything is registered", async () => {
  await stacks.dynamic.setConfig("edge:clientKey", { value: client.keyPem }); // no secret
  const preview = await cli("dynamic", ["preview"]);
  expect(preview.code).not.toBe(0);
  expect(preview.out).toContain("edge:clientKey holds a private key in plaintext");
  expect(preview.out).toContain("pulumi config set --secret edge:clientKey");
  expect(await service.listHttpsEdges()).toMatchObject({ https_edges: [] });
}, 600_000);

test.each(FACES)(
  "%s face: deploys over mutual TLS with a private CA, drift-checks clean, keeps the key out of the state",
  async (face) => {
    await stacks[face].setConfig("edge:clientKey", { value: client.keyPem, secret: true });
    const up = await stacks[face].up(quiet);
    expect(up.summary.result).toBe("succeeded");
    const routes = up.outputs.routes!.value as Record<string, { id: string; edgeId: string; uri: string }>;
    // The packaged face's route id is `<edgeId>/<routeId>` (its import id).
    const route = await service.getRoute(routes.r!.edgeId, routes.r!.id.split("/").pop()!);
    expect(route).toMatchObject({ match: "/tls", uri: expect.stringMatching(/^https:\/\//) });

    const check = await cli(face, ["preview", "--refresh", "--expect-no-changes"]);
    expect(check.out).not.toMatch(/error/i);
    expect(check.code).toBe(0);

    const texts = [await stateExport(stacks[face], stateDir), ...stateFiles(stateDir).map(backendText)];
    for (const text of texts) for (const line of keyLines()) expect(text).not.toContain(line);
  },
  900_000,
);

test("pulumi-edge drift over https with edge:caCertificate: both stacks clean", async () => {
  const cwd = join(ROOT, ".test-work");
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [
        PULUMI_EDGE,
        "drift",
        ...FACES.flatMap((face) => ["--stack", `${relative(cwd, ws[face].dir)}:tls-${face}`]),
        "--format",
        "json",
      ],
      { cwd, env: { ...process.env, ...engine.engineEnv({ stateDir }) }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
  const report = JSON.parse(run.stdout || "{}") as { summary?: unknown; stacks?: Array<{ error?: string }> };
  expect({ code: run.code, summary: report.summary, errors: report.stacks?.map((s) => s.error) }).toEqual({
    code: 0,
    summary: { stacks: 2, clean: 2, drifted: 0, error: 0 },
    errors: [undefined, undefined],
  });
}, 900_000);

test.each(FACES)(
  "%s face: destroys over TLS",
  async (face) => {
    const destroyed = await stacks[face].destroy(quiet);
    expect(destroyed.summary.result).toBe("succeeded");
  },
  900_000,
);

test("the service is empty at the end: every object was deleted over TLS", async () => {
  expect(await service.listHttpsEdges()).toMatchObject({ https_edges: [] });
});
