/**
 * examples/go: the generated Go SDK compiles with the pinned Go SDK of Pulumi, and the example
 * program on it builds (`go build`, as `pulumi up` does first). Running it needs the Go language
 * host, which ships in the official CLI archive and which the Go module proxy refuses: with the
 * host installed the example is deployed too; without it that test is skipped, saying so.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { quiet } from "../engine/support/harness";
import { programWorkspace } from "../support/workspace";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const SDKS = join(engine.ROOT, "dist", "sdks");

/** The example, its go.mod pointing at this checkout's generated SDK (a user's points into node_modules). */
function goExample() {
  const ex = programWorkspace(join(engine.ROOT, "examples", "go"), "example-go");
  const mod = join(ex.dir, "go.mod");
  writeFileSync(mod, readFileSync(mod, "utf8").replace("./node_modules/pulumi-edge/dist/sdks", SDKS));
  const yaml = join(ex.dir, "Pulumi.yaml");
  writeFileSync(
    yaml,
    readFileSync(yaml, "utf8").replace("node_modules/pulumi-edge/bin", join(engine.ROOT, "bin")),
  );
  return ex;
}

async function go(dir: string, args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await promisify(execFile)("go", args, {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, GOFLAGS: "-mod=mod" },
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`go ${args.join(" ")} failed in ${dir}:\n${stdout}\n${stderr}`);
  }
}

test("examples/go builds on the generated Go SDK (dist/sdks, module github.com/pulumi-edge/pulumi-edge/sdk)", async () => {
  expect(existsSync(join(SDKS, "go.mod"))).toBe(true);
  const ex = goExample();
  try {
    await go(ex.dir, ["build", "-o", join(ex.dir, "edge-go"), "."]);
    expect(existsSync(join(ex.dir, "edge-go"))).toBe(true);
    await go(ex.dir, ["vet", "."]);
  } finally {
    ex.cleanup();
  }
}, 600_000);

const goHost = [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)].some(
  (dir) => dir && existsSync(join(dir, "pulumi-language-go")),
);
(goHost ? test : test.skip)(
  goHost
    ? "examples/go deploys and previews no changes"
    : "examples/go deploy: SKIPPED, no pulumi-language-go host on this machine (it ships in the official Pulumi CLI archive; the Go module proxy refuses it)",
  async () => {
    const ex = goExample();
    try {
      const stack = await engine.directoryStack({ workDir: ex.dir, stateDir: ex.stateDir, stackName: "dev" });
      const up = await stack.up(quiet);
      expect(up.summary.resourceChanges?.create).toBe(3);
      await stack.preview({ ...quiet, expectNoChanges: true });
      await stack.destroy(quiet);
    } finally {
      ex.cleanup();
    }
  },
  600_000,
);
