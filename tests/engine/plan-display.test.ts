/**
 * The plan is visible on success, as the CLI shows it: `pulumi preview --diff` names the changed
 * leaf (the packaged face answers a detailed diff; its replace names the reason), and `pulumi up`
 * logs each executed step with its reason, on both faces.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { pulumiCli, specWorkspace } from "../packaged/support/plugin";
import type { Workspace } from "../support/workspace";
import { quiet, type RecordingServer, recordingServer, setSpec } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const route = {
  matchType: "path_prefix",
  match: "/a",
  backend: { backendId: "bkd_1" },
  circuitBreaker: { numBuckets: 10, trippedDuration: 5 },
};
const spec = (args: Record<string, unknown>, edge = "e") => ({
  edges: ["e", "e2"],
  routes: [{ name: "r", edge, args }],
});

describe.each(["dynamic", "packaged"] as const)("%s face", (face) => {
  let ws: Workspace;
  let server: RecordingServer;
  let stack: Stack;

  beforeAll(async () => {
    ws = specWorkspace(face, `plan-${face}`);
    server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-plan-${face}-`)));
    stack = await engine.directoryStack({ workDir: ws.dir, stackName: "plan", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await setSpec(stack, spec(route));
    await stack.up(quiet);
  });

  afterAll(async () => {
    await stack?.destroy(quiet).catch(() => undefined);
    await server?.close();
    ws?.cleanup();
  });

  test("preview --diff names the changed leaf, old and new value", async () => {
    await setSpec(stack, spec({ ...route, circuitBreaker: { numBuckets: 12, trippedDuration: 5 } }));
    const out = await pulumiCli(ws, ["preview", "--diff"], "plan");
    expect(out).toMatch(/~ circuitBreaker/);
    expect(out).toMatch(/~ numBuckets\s*:\s*10 => 12/);
    // An unchanged sibling is not shown as changed.
    expect(out).not.toMatch(/~ trippedDuration/);
    // The packaged face answers a detailed diff: the CLI shows the changed leaves only (without
    // one it prints every input, as for the dynamic face, whose SDK has no room for one).
    if (face === "packaged") expect(out).not.toMatch(/trippedDuration|backendId/);
  });

  test("up logs each executed step with its reason", async () => {
    const out = await pulumiCli(ws, ["up", "--yes", "--skip-preview"], "plan");
    expect(out).toMatch(/route \S+: step 1 of 1: PATCH circuit_breaker: .+/);
    expect(out).toMatch(/1 updated/);
  });

  test("a replace names the property that forces it", async () => {
    await setSpec(stack, spec({ ...route, circuitBreaker: { numBuckets: 12, trippedDuration: 5 } }, "e2"));
    const out = await pulumiCli(ws, ["preview", "--diff"], "plan");
    expect(out).toMatch(/\+-.*HttpsEdgeRoute|HttpsEdgeRoute.*replace/);
    expect(out).toMatch(/~ edgeId\s*: "edghts_\w+" => "edghts_\w+"/);
    if (face === "packaged") expect(out).not.toMatch(/circuitBreaker/);
    // Put the program back so destroy has nothing pending.
    await setSpec(stack, spec({ ...route, circuitBreaker: { numBuckets: 12, trippedDuration: 5 } }));
  });
});
