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
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { quiet } from "../engine/support/harness";
import { declareCheckoutPlugin } from "../packaged/support/plugin";
import { scaled } from "../support/machine";
import { programWorkspace, type Workspace } from "../support/workspace";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const SDK = join(engine.ROOT, "dist", "sdks", "go");
const SDK_MODULE = "github.com/pulumi-edge/pulumi-edge/sdk/go";

/**
 * The copies a test made, removed after it: jest runs afterEach after a timeout too, while a
 * timed-out body's own `finally` runs late or never, leaving the copy behind.
 */
const made: Workspace[] = [];
afterEach(() => {
  for (const ex of made.splice(0)) ex.cleanup();
});

/**
 * The example, as first-stack.sh makes it: its go.mod given a replace to the SDK's module (here
 * this checkout's generated one; a user's is the release's), and for the tests' engine, which
 * downloads nothing, this checkout's plugin named in Pulumi.yaml.
 */
async function goExample() {
  const ex = programWorkspace(join(engine.ROOT, "examples", "go"), "example-go");
  made.push(ex);
  await go(ex.dir, ["mod", "edit", `-replace=${SDK_MODULE}=${SDK}`]);
  declareCheckoutPlugin(ex.dir);
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

test(
  "the generated Go SDK is a tidy module of its own that builds and vets as is",
  async () => {
    expect(readFileSync(join(SDK, "go.mod"), "utf8")).toMatch(
      /^module github\.com\/pulumi-edge\/pulumi-edge\/sdk\/go$/m,
    );
    await go(SDK, ["mod", "tidy", "-diff"]);
    await go(SDK, ["vet", "./..."]);
  },
  scaled(600_000),
);

test(
  "examples/go is a tidy module whose go line is the SDK's, and builds on it without GOFLAGS",
  async () => {
    const committed = readFileSync(join(engine.ROOT, "examples", "go", "go.mod"), "utf8");
    expect(goLine(join(engine.ROOT, "examples", "go", "go.mod"))).toBe(goLine(join(SDK, "go.mod")));
    // No path of this repository or of a user's layout: first-stack.sh names the release's module.
    expect(committed).not.toMatch(/^replace\b/m);
    expect(committed).toMatch(new RegExp(`^\\t${SDK_MODULE.replace(/\./g, "\\.")} v\\d`, "m"));
    const ex = await goExample();
    await go(ex.dir, ["mod", "tidy", "-diff"]); // exits 1 with the diff when go.mod or go.sum is not tidy
    await go(ex.dir, ["build", "-o", join(ex.dir, "edge-go"), "."]);
    expect(existsSync(join(ex.dir, "edge-go"))).toBe(true);
    await go(ex.dir, ["vet", "."]);
  },
  scaled(600_000),
);

const goHost = [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)].some(
  (dir) => dir && existsSync(join(dir, "pulumi-language-go")),
);
(goHost ? test : test.skip)(
  goHost
    ? "examples/go deploys and previews no changes"
    : "examples/go deploy: SKIPPED, no pulumi-language-go host on this machine (it ships in the official Pulumi CLI archive; the Go module proxy refuses it)",
  async () => {
    const ex = await goExample();
    const stack = await engine.directoryStack({ workDir: ex.dir, stateDir: ex.stateDir, stackName: "dev" });
    const up = await stack.up(quiet);
    expect(up.summary.resourceChanges?.create).toBe(3);
    await stack.preview({ ...quiet, expectNoChanges: true });
    await stack.destroy(quiet);
  },
  scaled(600_000),
);
