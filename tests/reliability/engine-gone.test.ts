/**
 * No silent hang, no leftover process, through the real engine:
 * - a service that accepts connections and never answers: `pulumi up` ends at the call's deadline
 *   (`edge:requestDeadlineMs`), and says in the CLI what it is doing while it retries;
 * - `pulumi preview | head`: the CLI dies of the closed pipe; the packaged plugin it started
 *   ends by itself (it asks the engine's health service, as Pulumi's Go plugins do).
 * (A killed CLI process group, both faces: exactly-once.test.ts.)
 */
import { mkdtempSync, readdirSync, readlinkSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RecordingServer, recordingServer } from "../engine/support/harness";
import { packagedWorkspace } from "../packaged/support/plugin";
import type { Workspace } from "../support/workspace";
import {
  commandLine,
  descendants,
  engine,
  ensureBuilt,
  faultProxy,
  killChildren,
  programWorkspace,
  runPulumi,
  waitFor,
} from "./support";

jest.setTimeout(300_000);

const SPEC = {
  edges: ["web"],
  routes: [{ name: "api", edge: "web", args: { matchType: "path_prefix", match: "/api" } }],
};

let server: RecordingServer;
beforeAll(async () => {
  ensureBuilt();
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-gone-")));
});
afterAll(async () => {
  killChildren();
  await server?.close();
});

async function workspace(
  face: "dynamic" | "packaged",
  label: string,
  baseUrl: string,
  config = {},
  spec: unknown = SPEC,
) {
  const ws =
    face === "dynamic"
      ? programWorkspace(`gone-${label}`)
      : packagedWorkspace("packaged-spec-program", `gone-${label}`);
  const stack = await engine.directoryStack({ workDir: ws.dir, stackName: "test", stateDir: ws.stateDir });
  await stack.setAllConfig({
    "edge:baseUrl": { value: baseUrl },
    spec: { value: JSON.stringify(spec) },
    ...config,
  });
  return ws;
}

test.each(["dynamic", "packaged"] as const)(
  "%s face: a service that never answers ends `pulumi up` at the deadline, each retry shown",
  async (face) => {
    const proxy = await faultProxy({ target: server.url, seed: 1, rate: 0, intercept: () => "stall-before" });
    let ws: Workspace | undefined;
    try {
      ws = await workspace(face, `hang-${face}`, proxy.url, {
        "edge:requestTimeoutMs": { value: "1500" },
        "edge:requestDeadlineMs": { value: "4000" },
      });
      const up = await runPulumi(["up", "--yes", "--skip-preview"], { cwd: ws.dir, stateDir: ws.stateDir });
      expect(up.code).not.toBe(0);
      expect(up.output).toMatch(
        /POST \/edges\/https: no answer within 1\.5 s \(attempt 1\); retrying in [0-9.]+ s, giving up in [0-9.]+ s \(edge:requestDeadlineMs\)/,
      );
      expect(up.output).toMatch(
        /cannot reach the edge service at http:\/\/127\.0\.0\.1:\d+ \(TimeoutError\) after \d+ attempts within the call's deadline of 4 s/,
      );
      // Nothing reached the service: every attempt was held by the proxy.
      expect(proxy.log.filter((r) => r.upstreamStatus !== undefined)).toEqual([]);
    } finally {
      await proxy.close();
      ws?.cleanup();
    }
  },
);

/** Live processes working in `dir`. */
function processesIn(dir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dir) out.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}
const pluginsIn = (dir: string) =>
  processesIn(dir).filter((pid) => /dist\/provider\/plugin\/index\.js/.test(commandLine(pid)));

test("`pulumi preview | head`: the CLI dies of the closed pipe, and the packaged plugin ends by itself", async () => {
  // Enough resources that the preview still writes when `head` has gone.
  const routes = Array.from({ length: 40 }, (_, i) => ({
    name: `r${i}`,
    edge: "web",
    args: { matchType: "path_prefix", match: `/r/${i}` },
  }));
  const ws = await workspace("packaged", "head", server.url, {}, { ...SPEC, routes });
  let cleanup = () => {};
  try {
    const pulumi = join(engine.PULUMI_BIN, "pulumi");
    let seen: number[] = [];
    let stderr = "";
    const pipeline = spawn(
      "bash",
      [
        "-c",
        `"${pulumi}" preview --stack test --non-interactive --color never | head -n 12; echo "pulumi exit \${PIPESTATUS[0]}" >&2`,
      ],
      {
        cwd: ws.dir,
        env: { ...process.env, ...engine.engineEnv({ stateDir: ws.stateDir }) },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    pipeline.stdout.resume();
    pipeline.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    // The plugin runs once the engine checks the first resource. Everything the pipeline starts
    // is noted meanwhile: Pulumi's own language host outlives a dead CLI, and is ended here.
    const started = new Set<number>();
    const plugins = new Set<number>();
    await waitFor(
      () => {
        for (const pid of descendants(pipeline.pid!)) started.add(pid);
        for (const pid of pluginsIn(ws.dir)) plugins.add(pid);
        return pipeline.exitCode !== null;
      },
      "the pipeline to end",
      120_000,
      20,
    );
    seen = [...plugins];
    cleanup = () => {
      for (const pid of started) {
        if (seen.includes(pid)) continue;
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
    };
    expect(seen.length).toBeGreaterThan(0);
    expect(stderr).toContain("pulumi exit 141"); // 128 + SIGPIPE: the engine did not end its plugins
    await waitFor(
      () => seen.every((pid) => commandLine(pid) === ""),
      "the plugin to exit by itself",
      60_000,
      200,
    );
  } finally {
    cleanup();
    ws.cleanup();
  }
});
