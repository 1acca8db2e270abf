/**
 * The fleet benchmark runs (issue 54): `node bench/fleet-drift.mjs --smoke`, its smallest size (2
 * stacks of 2 routes, every drift path once), completes and prints its figures. Nothing is timed
 * here: the figures are BENCHMARKS.md's, measured by hand; this only keeps the script from
 * breaking unseen, as a change of the provider's rules once did (a fast first update refused,
 * hostports made natural keys).
 */
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ensureBuilt, ROOT } from "../support/edge-service";
import { scaled } from "../support/machine";

beforeAll(() => ensureBuilt(), 300_000);

test(
  "bench/fleet-drift.mjs --smoke deploys two stacks and times each drift path, every stack clean, and leaves nothing",
  async () => {
    const tmp = join(ROOT, "bench", "tmp");
    mkdirSync(tmp, { recursive: true });
    const before = new Set(readdirSync(tmp, { withFileTypes: true }).map((e) => e.name));
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) =>
        execFile(
          process.execPath,
          [join(ROOT, "bench", "fleet-drift.mjs"), "--smoke"],
          { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: scaled(900_000) },
          (error, out, err) =>
            resolve({ code: error ? Number(error.code ?? 1) : 0, stdout: out, stderr: err }),
        ),
    );
    if (code !== 0) throw new Error(`fleet-drift.mjs --smoke exited ${code}:\n${stderr.slice(-4000)}`);
    const lines = stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const [deploy, ...drifts] = lines;
    expect(deploy).toMatchObject({ phase: "deploy", stacks: 2, routes: 2, wall: expect.any(Number) });
    expect(drifts.map((d) => d.path)).toEqual(["fast", "refresh", "engine"]);
    for (const d of drifts) {
      expect(d).toMatchObject({
        phase: "drift",
        exitCode: 0,
        summary: { stacks: 2, clean: 2, drifted: 0, error: 0 },
        wall: expect.any(Number),
        cpu: expect.objectContaining({ total: expect.any(Number) }),
        loadBefore: expect.any(Array),
      });
      // Each path judged every stack itself: the fast path handed none to the engine.
      expect((d.judged as Record<string, number>)[d.path as string]).toBe(2);
    }
    // Its temporary directory is gone.
    expect(readdirSync(tmp).filter((n) => !before.has(n))).toEqual([]);
  },
  scaled(900_000),
);
