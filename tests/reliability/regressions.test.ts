/**
 * Regression tests, through the real engine, for bugs the reliability suite found (the unit-level
 * regressions live beside the properties that found them).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { quiet, type RecordingServer, recordingServer } from "../engine/support/harness";
import { ensureBuilt, programStack, programWorkspace, setSpec } from "./support";

let ws: ReturnType<typeof programWorkspace>;
let server: RecordingServer;
let stack: Stack;

beforeAll(async () => {
  ensureBuilt();
  ws = programWorkspace("regressions");
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-regressions-")));
  stack = await programStack(ws, server.url);
});

afterAll(async () => {
  await server?.close();
  ws?.cleanup();
});

test("ignoreChanges on a module whose numBuckets is unset: the next up passes check and changes nothing", async () => {
  // Found by the fixed-point property of provider-check.test.ts: check's canonical inputs hold
  // numBuckets 0 ("unset", as the API reads it back), and the engine puts the old inputs' value of an
  // ignored property back into the news it checks — which check refused (must be between 1 and 128).
  const route = (circuitBreaker: Record<string, unknown>) => ({
    edges: ["e"],
    routes: [
      {
        name: "r",
        edge: "e",
        args: { matchType: "path_prefix", match: "/ignored", circuitBreaker },
        ignoreChanges: ["circuitBreaker"],
      },
    ],
  });
  await setSpec(stack, route({ trippedDuration: 30 }));
  await stack.up(quiet);
  server.reset();
  await setSpec(stack, route({ trippedDuration: 60, volumeThreshold: 5 }));
  await stack.up(quiet);
  expect(server.mutations()).toEqual([]);
  await stack.preview({ ...quiet, expectNoChanges: true });
  // After a refresh (inputs now as read back: numBuckets 0) the same holds.
  await stack.refresh(quiet);
  await stack.up(quiet);
  expect(server.mutations()).toEqual([]);
  const stored = (await server.client.listHttpsEdges()).https_edges[0]!.routes[0]!;
  expect(stored.circuit_breaker).toMatchObject({ tripped_duration: 30, num_buckets: 0, volume_threshold: 0 });
  await stack.destroy(quiet);
});
