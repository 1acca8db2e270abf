/**
 * Both faces through the real engine against `edge-service serve` over TLS with a private CA and
 * mutual TLS (certificates made here with openssl): a stack deploys, drift-checks clean with
 * `pulumi preview --refresh --expect-no-changes` and with `pulumi-edge drift`, and destroys; the
 * client key is in no form in the state. The packaged face reads `edge:caCertificate` as a file
 * path relative to the program, the dynamic face as PEM text; both present the client
 * certificate. A private key in any setting that takes PEM text or a path (provider/config.ts
 * declares which), typed without `--secret`, is refused on both faces naming the setting and
 * `--secret`; a combined PEM set as a secret deploys. A CA that `up` refuses fails a refresh and
 * `pulumi-edge drift` with the same words, wherever the engine hands a provider the current config.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { ConfigValue, Stack } from "@pulumi/pulumi/automation";
import { PEM_SETTINGS, SETTINGS } from "../../provider/config";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { type Cli, ensureBuilt, killClis, NO_DRAIN, ROOT, startCli } from "../support/edge-service";
import { type Issued, makePki, type Pki } from "../support/pki";
import type { Workspace } from "../support/workspace";
import { specWorkspace } from "../packaged/support/plugin";
import { backendText, quiet, stateExport, stateFiles } from "./support/harness";

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
    ["--port", "0", ...NO_DRAIN, "--data", data, "--tls-cert", pki.server.cert, "--tls-key", pki.server.key],
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
    const port = new URL(server.url).port;
    if (face === "packaged") {
      // A file beside the program, by a relative path; the service by its DNS name.
      mkdirSync(join(ws[face].dir, "certs"));
      copyFileSync(pki.ca, join(ws[face].dir, "certs", "ca.pem"));
    }
    const stack = await engine.directoryStack({
      workDir: ws[face].dir,
      stackName: `tls-${face}`,
      stateDir,
      config: {
        spec: { value: JSON.stringify(spec) },
        "edge:baseUrl": { value: face === "packaged" ? `https://localhost:${port}` : server.url },
        "edge:caCertificate": { value: face === "packaged" ? "certs/ca.pem" : pki.caPem },
        "edge:clientCertificate": { value: client.cert },
      },
    });
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

/**
 * A value of setting `name` that holds the client's private key and that a deploy could otherwise
 * use: a combined file (a certificate with its key), the common layout; the CA's with a key after it.
 */
const withKey = (name: (typeof PEM_SETTINGS)[number]) =>
  name === "caCertificate" ? `${pki.caPem}${client.keyPem}` : `${client.certPem}${client.keyPem}`;

test.each(FACES)(
  "%s face: every setting that takes PEM text or a path, holding a private key typed without --secret, is refused naming it and --secret",
  async (face) => {
    const stack = stacks[face];
    // The others as a deploy would take them, so that the one under test is what is refused.
    await stack.setConfig("edge:clientKey", { value: client.keyPem, secret: true });
    const before = await stack.getAllConfig();
    for (const name of PEM_SETTINGS) {
      const { key } = SETTINGS[name];
      await stack.setConfig(key, { value: withKey(name) }); // no secret
      const preview = await cli(face, ["preview"]);
      expect([name, preview.code === 0]).toEqual([name, false]);
      expect(preview.out).toContain(`${key} holds a private key in plaintext`);
      expect(preview.out).toContain(`pulumi config set --secret ${key}`);
      const was = before[key];
      if (was) await stack.setConfig(key, was);
      else await stack.removeConfig(key);
    }
    // Nothing was registered with the service.
    expect(await service.listHttpsEdges()).toMatchObject({ https_edges: [] });
  },
  900_000,
);

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
  expect(await drift()).toEqual({
    code: 0,
    summary: { stacks: 2, clean: 2, drifted: 0, error: 0 },
    errors: [undefined, undefined],
  });
}, 900_000);

test.each(FACES)(
  "%s face: a combined PEM (certificate and key) as edge:clientCertificate and edge:clientKey, set with --secret, deploys; no key in the state",
  async (face) => {
    for (const name of ["clientCertificate", "clientKey"] as const)
      await stacks[face].setConfig(SETTINGS[name].key, { value: withKey(name), secret: true });
    const up = await stacks[face].up(quiet);
    expect(up.summary.result).toBe("succeeded");
    expect(up.summary.resourceChanges).not.toHaveProperty("replace");
    const texts = [await stateExport(stacks[face], stateDir), ...stateFiles(stateDir).map(backendText)];
    for (const text of texts) for (const line of keyLines()) expect(text).not.toContain(line);
  },
  900_000,
);

/** `pulumi-edge drift` of both stacks (JSON report): exit code, summary and each stack's error. */
async function drift(
  args: string[] = [],
): Promise<{ code: number; summary: unknown; errors: (string | undefined)[] }> {
  const cwd = join(ROOT, ".test-work");
  const run = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(
      process.execPath,
      [
        PULUMI_EDGE,
        "drift",
        ...FACES.flatMap((face) => ["--stack", `${relative(cwd, ws[face].dir)}:tls-${face}`]),
        "--format",
        "json",
        ...args,
      ],
      { cwd, env: { ...process.env, ...engine.engineEnv({ stateDir }) }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    );
  });
  const report = JSON.parse(run.stdout || "{}") as { summary?: unknown; stacks?: Array<{ error?: string }> };
  return { code: run.code, summary: report.summary, errors: report.stacks?.map((s) => s.error) ?? [] };
}

describe("settings that a deploy would refuse fail a refresh and a drift check the same way", () => {
  /** A CA bundle with a garbage block after the CA: `up` refuses it, naming the block. */
  const brokenCa = () => `${pki.caPem}-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n`;
  const REFUSED = "edge:caCertificate (EDGE_CA_CERTIFICATE): certificate 2 of 2 cannot be parsed";
  const saved = {} as Record<Face, ConfigValue | undefined>;

  beforeAll(async () => {
    for (const face of FACES) {
      saved[face] = (await stacks[face].getAllConfig())["edge:caCertificate"];
      await stacks[face].setConfig("edge:caCertificate", { value: brokenCa() });
    }
  });
  afterAll(async () => {
    for (const face of FACES)
      if (saved[face]) await stacks[face].setConfig("edge:caCertificate", saved[face]);
  });

  test.each(FACES)(
    "%s face: up refuses it; preview --refresh, and refresh where the current config reaches the provider, fail with the same words",
    async (face) => {
      const up = await cli(face, ["up", "--yes"]);
      expect(up.code).not.toBe(0);
      expect(up.out).toContain(REFUSED);
      const preview = await cli(face, ["preview", "--refresh", "--expect-no-changes"]);
      expect(preview.code).not.toBe(0);
      expect(preview.out).toContain(REFUSED);
      const withProgram = await cli(face, ["refresh", "--run-program", "--yes"]);
      expect(withProgram.code).not.toBe(0);
      expect(withProgram.out).toContain(REFUSED);
      const refresh = await cli(face, ["refresh", "--yes"]);
      if (face === "packaged") {
        // The plugin is handed the stack's current config (PULUMI_CONFIG) and checks it.
        expect(refresh.code).not.toBe(0);
        expect(refresh.out).toContain(REFUSED);
      } else {
        // What holds on the dynamic face (docs/guide.md): `pulumi refresh` without the program
        // configures the provider with the settings saved at the last update, and the current
        // config reaches no process of ours; it refreshes on those, and the next up refuses.
        expect(refresh.code).toBe(0);
      }
    },
    900_000,
  );

  test("pulumi-edge drift, by the fast path and by refresh: each stack an error naming the setting", async () => {
    for (const args of [[], ["--path", "refresh"]]) {
      const { code, errors } = await drift(args);
      expect({ args, code }).toEqual({ args, code: 2 });
      for (const error of errors) expect(error).toContain(REFUSED);
    }
  }, 900_000);

  test("pulumi-edge drift: a private key in a setting not set as a secret is an error naming it and --secret", async () => {
    for (const face of FACES) {
      await stacks[face].setConfig("edge:caCertificate", saved[face]!);
      await stacks[face].setConfig("edge:clientCertificate", { value: withKey("clientCertificate") });
    }
    const { code, errors } = await drift();
    expect(code).toBe(2);
    for (const error of errors) {
      expect(error).toContain("edge:clientCertificate holds a private key in plaintext");
      expect(error).toContain("pulumi config set --secret edge:clientCertificate");
    }
    for (const face of FACES)
      await stacks[face].setConfig("edge:clientCertificate", {
        value: withKey("clientCertificate"),
        secret: true,
      });
    expect(await drift()).toMatchObject({ code: 0, errors: [undefined, undefined] });
  }, 900_000);
});

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
