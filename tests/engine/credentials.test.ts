/**
 * Provider credentials through the real engine, both faces, against a service whose accepted
 * keys the test rotates:
 * - the key is in no form in `pulumi stack export` or any backend file, whatever was typed
 *   (packaged: a plaintext `edge:apiKey` is encrypted all the same; dynamic: a plaintext one is
 *   refused before anything is registered, since the engine would save it as typed);
 * - a wrong key fails the drift check (`preview --refresh`) loudly;
 * - a rotated key works on the next refresh without an `up`;
 * - `EDGE_API_KEY` in the environment wins over the key in the configuration.
 * The dynamic face gets the configuration saved at the last update on refresh unless
 * `--run-program` (the engine's rule in 3.259.0), which these tests pin down too.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { specWorkspace } from "../packaged/support/plugin";
import type { Workspace } from "../support/workspace";
import {
  backendText,
  expectNowhere,
  quiet,
  type RecordingServer,
  recordingServer,
  setSpec,
  stateExport,
  stateFiles,
} from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const KEY_1 = "edge-key-one-5f2a9c";
const KEY_2 = "edge-key-two-81d0e4";
const WRONG = "edge-key-wrong-33b7";
const spec = {
  edges: ["e"],
  routes: [{ name: "r", edge: "e", args: { matchType: "path_prefix", match: "/a", compression: {} } }],
};

/** The `pulumi` CLI in the program's directory: exit code and all it printed. */
async function cli(ws: Workspace, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      join(engine.PULUMI_BIN, "pulumi"),
      [...args, "--stack", "creds", "--color", "never", "--non-interactive"],
      {
        cwd: ws.dir,
        env: { ...process.env, ...engine.engineEnv({ stateDir: ws.stateDir }), ...env },
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const { code = 1, stdout = "", stderr = "" } = e as { code?: number; stdout?: string; stderr?: string };
    return { code, out: stdout + stderr };
  }
}

describe.each(["packaged", "dynamic"] as const)("%s face", (face) => {
  let ws: Workspace;
  let server: RecordingServer;
  let stack: Stack;
  const accepted = new Set([KEY_1]);

  beforeAll(async () => {
    ws = specWorkspace(face, `creds-${face}`);
    server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-creds-${face}-`)), {
      acceptKeys: accepted,
    });
    stack = await engine.directoryStack({ workDir: ws.dir, stackName: "creds", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await setSpec(stack, spec);
  });

  afterAll(async () => {
    accepted.add(KEY_2);
    await stack?.setConfig("edge:apiKey", { value: KEY_2, secret: true });
    await stack?.destroy(quiet).catch(() => undefined);
    await server?.close();
    ws?.cleanup();
  });

  test("a key typed in plaintext never reaches the state", async () => {
    await stack.setConfig("edge:apiKey", { value: KEY_1 }); // no --secret
    const up = await cli(ws, ["up", "--yes", "--skip-preview"]);
    if (face === "packaged") {
      expect(up.code).toBe(0);
    } else {
      // The engine would save the whole stack config as the dynamic provider's inputs.
      expect(up.code).not.toBe(0);
      expect(up.out).toContain("edge:apiKey is set in plaintext");
      expect(up.out).toContain("pulumi config set --secret edge:apiKey");
      expect(server.mutations()).toEqual([]);
      await stack.setConfig("edge:apiKey", { value: KEY_1, secret: true });
      expect((await cli(ws, ["up", "--yes", "--skip-preview"])).code).toBe(0);
    }
    expect(server.mutations().length).toBeGreaterThan(0);
    const files = stateFiles(ws.stateDir).map(backendText);
    expectNowhere(KEY_1, [await stateExport(stack, ws.stateDir), ...files]);
  });

  test("a wrong key fails the drift check loudly", async () => {
    if (face === "packaged") {
      await stack.setConfig("edge:apiKey", { value: WRONG, secret: true });
      const check = await cli(ws, ["preview", "--refresh", "--expect-no-changes"]);
      expect(check.code).not.toBe(0);
      expect(check.out).toMatch(/401|ERR_EDGE_401|API key is not valid/);
    } else {
      // Without --run-program the engine hands the dynamic provider the config saved at the
      // last update (KEY_1, still accepted): the wrong key must come in by the program's run...
      await stack.setConfig("edge:apiKey", { value: WRONG, secret: true });
      const run = await cli(ws, ["preview", "--refresh", "--run-program", "--expect-no-changes"]);
      expect(run.code).not.toBe(0);
      expect(run.out).toMatch(/401|ERR_EDGE_401|API key is not valid/);
      await stack.setConfig("edge:apiKey", { value: KEY_1, secret: true });
    }
    // ... or from the environment, which wins over any config, saved or current.
    const env = await cli(ws, ["preview", "--refresh", "--expect-no-changes"], { EDGE_API_KEY: WRONG });
    expect(env.code).not.toBe(0);
    expect(env.out).toMatch(/401|ERR_EDGE_401|API key is not valid/);
  });

  test("a rotated key works on the next refresh, without an up", async () => {
    accepted.clear();
    accepted.add(KEY_2); // KEY_1 revoked
    await stack.setConfig("edge:apiKey", { value: KEY_2, secret: true });
    const args = ["preview", "--refresh", "--expect-no-changes"];
    const check = await cli(ws, face === "packaged" ? args : [...args, "--run-program"]);
    expect(check.out).not.toMatch(/401/);
    expect(check.code).toBe(0);
    const viaEnv = await cli(ws, ["refresh", "--yes", "--expect-no-changes"], { EDGE_API_KEY: KEY_2 });
    expect(viaEnv.code).toBe(0);
    const files = stateFiles(ws.stateDir).map((f) => readFileSync(f, "utf8"));
    expectNowhere(KEY_2, [await stateExport(stack, ws.stateDir), ...files]);
  });
});
