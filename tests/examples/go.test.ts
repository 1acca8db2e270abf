/**
 * examples/go: the generated Go SDK (dist/sdks/go, the module github.com/pulumi-edge/pulumi-edge/sdk/go)
 * compiles with the pinned Go SDK of Pulumi, and the example program on it builds (`go build`, as
 * `pulumi up` does first) as the official toolchain builds it: no GOFLAGS (so -mod=readonly: a
 * go.mod that needs updates fails), no go.work; the example's go.mod is tidy and its go line is
 * the SDK's. Running it needs the Go language
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
const SDK = join(engine.ROOT, "dist", "sdks", "go");
const REPLACE = "=> ./node_modules/pulumi-edge/dist/sdks/go";

/** The example, its go.mod pointing at this checkout's generated SDK (a user's points into node_modules). */
function goExample() {
  const ex = programWorkspace(join(engine.ROOT, "examples", "go"), "example-go");
  const mod = join(ex.dir, "go.mod");
  const text = readFileSync(mod, "utf8");
  expect(text).toContain(REPLACE);
  writeFileSync(mod, text.replace(REPLACE, `=> ${SDK}`));
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
      // A user's go: no -mod=mod that would quietly rewrite go.mod, no workspace of this repository.
      env: { ...process.env, GOFLAGS: "", GOWORK: "off" },
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`go ${args.join(" ")} failed in ${dir}:\n${stdout}\n${stderr}`);
  }
}

const goLine = (file: string) => /^go (\S+)$/m.exec(readFileSync(file, "utf8"))?.[1];

test("the generated Go SDK is a tidy module of its own that builds and vets as is", async () => {
  expect(readFileSync(join(SDK, "go.mod"), "utf8")).toMatch(
    /^module github\.com\/pulumi-edge\/pulumi-edge\/sdk\/go$/m,
  );
  await go(SDK, ["mod", "tidy", "-diff"]);
  await go(SDK, ["vet", "./..."]);
}, 600_000);

test("examples/go is a tidy module whose go line is the SDK's, and builds on it without GOFLAGS", async () => {
  expect(goLine(join(engine.ROOT, "examples", "go", "go.mod"))).toBe(goLine(join(SDK, "go.mod")));
  const ex = goExample();
  try {
    await go(ex.dir, ["mod", "tidy", "-diff"]); // exits 1 with the diff when go.mod or go.sum is not tidy
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
