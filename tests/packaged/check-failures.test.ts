/**
 * A check failure on either face, as the engine prints it: it names the property and the bad
 * value. The engine (3.259) looks a failure's property up as a top-level input, so a nested path
 * printed `property circuitBreaker.numBuckets value {<nil>}`; a secret is never repeated (the
 * dynamic face never sees the program's marks: the credential fields are hidden all the same).
 * Nothing reaches the service. One rule in the brain (provider/model/failures.ts) for both faces.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import {
  LIFECYCLE_ROUTE,
  quiet,
  type RecordingServer,
  recordingServer,
  setSpec,
} from "../engine/support/harness";
import type { Workspace } from "../support/workspace";
import { specWorkspace } from "./support/plugin";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const WEBHOOK_SECRET = "whsec-0c3e-check-failure-never-shown";
const UNMARKED_SECRET = "whsec-91ab-unmarked-never-shown";

describe.each(["packaged", "dynamic"] as const)("%s face", (face) => {
  let ws: Workspace;
  let server: RecordingServer;
  let stack: Stack;

  beforeAll(async () => {
    ws = specWorkspace(face, `check-failures-${face}`);
    server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-check-failures-${face}-`)));
    stack = await engine.directoryStack({ workDir: ws.dir, stackName: "checks", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await stack.setConfig("webhookSecret", { value: WEBHOOK_SECRET, secret: true });
  });

  afterAll(async () => {
    await server?.close();
    ws?.cleanup();
  });

  /** The engine's output of a preview of one route that check refuses. */
  async function refused(route: Record<string, unknown>): Promise<string> {
    await setSpec(stack, { edges: ["a"], routes: [{ name: "api", edge: "a", args: route }] });
    const out: string[] = [];
    server.reset();
    await expect(stack.preview({ ...quiet, onOutput: (s) => out.push(s) })).rejects.toThrow();
    expect(server.mutations()).toEqual([]);
    return out.join("");
  }

  test("circuitBreaker.numBuckets: 500 names the property and the value, not {<nil>}", async () => {
    const out = await refused({
      ...LIFECYCLE_ROUTE,
      circuitBreaker: { ...LIFECYCLE_ROUTE.circuitBreaker, numBuckets: 500 },
    });
    expect(out).toMatch(
      /HttpsEdgeRoute resource 'api': property circuitBreaker value \{.*\} has a problem: numBuckets is 500: must be between 1 and 128/,
    );
    expect(out).not.toContain("<nil>");
  });

  test("a bad value inside a secret is named, never shown", async () => {
    const out = await refused({
      ...LIFECYCLE_ROUTE,
      webhookVerification: { provider: "sns", secret: "secret:webhookSecret" },
    });
    // The packaged face sees the program's mark and keeps the property; the dynamic face never
    // does, so it names no property (the engine would print the property's value).
    expect(out).toMatch(
      face === "packaged"
        ? /property webhookVerification value \{.*\} has a problem: secret is \[secret\]: /
        : /HttpsEdgeRoute resource 'api' has a problem: webhookVerification\.secret is \[secret\]: /,
    );
    expect(out).not.toContain(WEBHOOK_SECRET);
    expect(out).not.toContain("<nil>");
  });

  test("a credential the program did not mark is never shown either", async () => {
    process.env.EDGE_TEST_UNMARKED_SECRET = UNMARKED_SECRET; // the program inherits the environment
    const out = await refused({
      ...LIFECYCLE_ROUTE,
      webhookVerification: { provider: "sns", secret: "env:EDGE_TEST_UNMARKED_SECRET" },
    });
    expect(out).toMatch(
      /HttpsEdgeRoute resource 'api' has a problem: webhookVerification\.secret is \[secret\]: must not be set/,
    );
    expect(out).not.toContain(UNMARKED_SECRET);
    expect(out).not.toContain("<nil>");
  });
});
