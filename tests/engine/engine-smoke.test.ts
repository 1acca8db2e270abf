/** The real Pulumi engine, provisioned offline, runs here as on a user's laptop. */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { quiet, WORK_ROOT, workspace } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const pkg = require("../../package.json");

test("one pinned Pulumi version: package.json, the CLI, the npm wrapper and @pulumi/pulumi agree", () => {
  expect(pkg.devDependencies.pulumi).toBe(engine.PULUMI_VERSION);
  expect(require("@pulumi/pulumi/package.json").version).toBe(engine.PULUMI_VERSION);
  const cli = execFileSync(join(engine.PULUMI_BIN, "pulumi"), ["version"], { encoding: "utf8" }).trim();
  expect(cli).toBe(`v${engine.PULUMI_VERSION}`);
  const wrapper = execFileSync(join(engine.ROOT, "node_modules", ".bin", "pulumi"), ["version"], {
    encoding: "utf8",
    env: { ...process.env, PULUMI_SKIP_UPDATE_CHECK: "true" },
  }).trim();
  expect(wrapper).toBe(`v${engine.PULUMI_VERSION}`);
  for (const bin of ["pulumi-language-nodejs", "pulumi-resource-pulumi-nodejs"]) {
    expect(existsSync(join(engine.PULUMI_BIN, bin))).toBe(true);
  }
});

test("inline program with a dynamic resource: up, preview without changes, refresh, destroy", async () => {
  const provider: pulumi.dynamic.ResourceProvider = {
    async create(inputs) {
      return { id: "counter-1", outs: { value: inputs.value } };
    },
    async diff(_id, olds, news) {
      return { changes: olds.value !== news.value };
    },
    async read(id, props) {
      return { id, props };
    },
  };
  class Counter extends pulumi.dynamic.Resource {}
  const program = async () => {
    const r = new Counter(provider, "counter", { value: 42 }, {});
    return { id: r.id };
  };
  const stateDir = mkdtempSync(join(WORK_ROOT, "inline-state-"));
  const stack = await engine.inlineStack({
    projectName: "inline-smoke",
    program,
    workDir: mkdtempSync(join(WORK_ROOT, "inline-")),
    stateDir,
  });
  const up = await stack.up(quiet);
  expect(up.outputs.id!.value).toBe("counter-1");
  await stack.preview({ ...quiet, expectNoChanges: true });
  const refresh = await stack.refresh(quiet);
  expect(refresh.summary.result).toBe("succeeded");
  const destroy = await stack.destroy(quiet);
  expect(destroy.summary.resourceChanges?.delete).toBe(2);
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(stack.workspace.workDir, { recursive: true, force: true });
});

test("directory program with its own Pulumi.yaml runs through the language host", async () => {
  const ws = workspace("smoke-dir", "smoke");
  try {
    const stack = await engine.directoryStack({ workDir: ws.dir, stateDir: ws.stateDir });
    await stack.setConfig("name", { value: "edge" });
    const up = await stack.up(quiet);
    expect(up.outputs.text!.value).toBe("hello, edge");
    await stack.preview({ ...quiet, expectNoChanges: true });
    await stack.setConfig("name", { value: "pulumi" });
    const update = await stack.up(quiet);
    expect(update.summary.resourceChanges?.update).toBe(1);
    expect(update.outputs.text!.value).toBe("hello, pulumi");
    await stack.destroy(quiet);
  } finally {
    ws.cleanup();
  }
});

// The command provider is a Go plugin; the provisioning script builds it into the plugin cache
// when the module proxy serves its source (see README, "Engine"). Without the plugin there is
// nothing to run, and the test says so instead of failing on a missing download.
const commandPlugin = (() => {
  const dir = join(process.env.PULUMI_HOME || join(homedir(), ".pulumi"), "plugins");
  const version = require("@pulumi/command/package.json").version;
  return existsSync(dir) && readdirSync(dir).includes(`resource-command-v${version}`);
})();
(commandPlugin ? test : test.skip)("@pulumi/command local.Command runs offline", async () => {
  const { local } = require("@pulumi/command") as typeof import("@pulumi/command");
  const stack = await engine.inlineStack({
    projectName: "command-smoke",
    program: async () => ({ out: new local.Command("echo", { create: "echo edge" }).stdout }),
    workDir: mkdtempSync(join(WORK_ROOT, "command-")),
    stateDir: mkdtempSync(join(WORK_ROOT, "command-state-")),
  });
  const up = await stack.up(quiet);
  expect(up.outputs.out!.value).toBe("edge");
  await stack.destroy(quiet);
});
