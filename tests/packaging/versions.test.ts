/**
 * One version everywhere: package.json's. Both CLIs' `--version`, the plugin's GetPluginInfo
 * answer (asked over gRPC, as the engine asks) and its schema as the engine reads it from the
 * plugin (`pulumi package get-schema`), the committed schema, and what `npm run sdks` stamped
 * into the generated SDKs (Node.js package, Python wheel, Go module). And the release record:
 * releases.json and CHANGELOG.md agree with each other and with git history.
 * Cost: a few seconds (two CLI runs, one plugin start, one `pulumi package get-schema`).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertCommit, compareVersions, releases } from "../upgrade/release";

const { versionMentions } = require("../../scripts/release.js") as typeof import("../../scripts/release.js");

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const ROOT = engine.ROOT;
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const json = (file: string) => JSON.parse(read(file)) as Record<string, unknown>;

test.each(["edge-service", "pulumi-edge"])("%s --version", (bin) => {
  const r = spawnSync(join(ROOT, "node_modules", ".bin", bin), ["--version"], { encoding: "utf8" });
  if (r.error) throw r.error;
  expect({ code: r.status, stdout: r.stdout }).toEqual({ code: 0, stdout: `${VERSION}\n` });
});

test("the plugin answers GetPluginInfo with the package's version", async () => {
  // The plugin's own gRPC stack (@pulumi/pulumi's), as the engine talks to it.
  const fromPulumi = createRequire(require.resolve("@pulumi/pulumi"));
  const grpc = fromPulumi("@grpc/grpc-js") as typeof import("@grpc/grpc-js");
  const { ResourceProviderClient } = fromPulumi("@pulumi/pulumi/proto/provider_grpc_pb") as {
    ResourceProviderClient: new (
      address: string,
      credentials: unknown,
      options: object,
    ) => {
      getPluginInfo(req: unknown, cb: (err: Error | null, res?: { getVersion(): string }) => void): void;
      close(): void;
    };
  };
  const { Empty } = fromPulumi("google-protobuf/google/protobuf/empty_pb") as { Empty: new () => unknown };

  const child = spawn(join(ROOT, "bin", "pulumi-resource-edge"), [], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    let out = "";
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    const port = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the plugin printed no port: ${err}`)), 120_000);
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        out += d;
        const m = /^(\d+)\n/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the plugin exited (${code}): ${err}`));
      });
    });
    // A pool of its own, closed with the client: no channel outlives the test.
    const client = new ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
    });
    try {
      const version = await new Promise<string>((resolve, reject) =>
        client.getPluginInfo(new Empty(), (e, res) => (e ? reject(e) : resolve(res!.getVersion()))),
      );
      expect(version).toBe(VERSION);
    } finally {
      client.close();
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }
  }
});

test("the engine reads the package's version in the plugin's schema, and in the committed one", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "pe-versions-"));
  let schema: string;
  try {
    schema = execFileSync(
      join(engine.PULUMI_BIN, "pulumi"),
      ["package", "get-schema", join(ROOT, "bin", "pulumi-resource-edge")],
      {
        cwd: ROOT,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, ...engine.engineEnv({ stateDir }) },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
  expect((JSON.parse(schema) as { version: string }).version).toBe(VERSION);
  expect(json("provider/plugin/schema.json").version).toBe(VERSION);
});

test("the generated SDKs carry the package's version", () => {
  // Node.js: the compiled SDK's package.json (its resources register with that version).
  expect(json("dist/packaged/package.json").version).toBe(VERSION);
  // Python: the wheel's name and metadata, and the plugin stamp in the package.
  const wheels = readdirSync(join(ROOT, "dist/python"));
  expect(wheels).toEqual([`pulumi_edge-${VERSION}-py3-none-any.whl`]);
  const metadata = execFileSync(
    "python3",
    [
      "-c",
      "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); " +
        "print([z.read(n).decode() for n in z.namelist() if n.endswith('.dist-info/METADATA')][0])",
      join(ROOT, "dist/python", wheels[0]!),
    ],
    { encoding: "utf8" },
  );
  expect(metadata).toMatch(new RegExp(`^Version: ${VERSION.replace(/\./g, "\\.")}$`, "m"));
  expect(json("dist/sdks/python/pulumi_edge/pulumi-plugin.json")).toEqual({
    resource: true,
    name: "edge",
    version: VERSION,
  });
  // Go: a module's version is its tag; what is stamped is the plugin it asks the engine for.
  expect(json("dist/sdks/go/edge/pulumi-plugin.json").version).toBe(VERSION);
  const versions = [
    ...read("dist/sdks/go/edge/internal/pulumiUtilities.go").matchAll(/semver\.MustParse\("([^"]+)"\)/g),
  ];
  expect(versions.length).toBeGreaterThan(0);
  expect(new Set(versions.map((m) => m[1]))).toEqual(new Set([VERSION]));
});

test("releases.json and CHANGELOG.md record the releases, each at a commit of that version", () => {
  const recorded = releases();
  expect(recorded.length).toBeGreaterThan(0);
  const changelog = read("CHANGELOG.md");
  for (const r of recorded) {
    expect(Object.keys(r).sort()).toEqual(["commit", "date", "version"]);
    expect(r.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(r.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // Not newer than the tree; each release's heading with its date.
    expect(compareVersions(r.version, VERSION)).toBeLessThanOrEqual(0);
    expect(changelog).toContain(`\n## [${r.version}] - ${r.date}\n`);
    // The commit is in this clone (full history), and there package.json says that version.
    assertCommit(r);
    const then = execFileSync("git", ["show", `${r.commit}:package.json`], { cwd: ROOT, encoding: "utf8" });
    expect((JSON.parse(then) as { version: string }).version).toBe(r.version);
  }
  // Newest first, no version twice.
  const versions = recorded.map((r) => r.version);
  expect([...versions].sort((a, b) => compareVersions(b, a))).toEqual(versions);
  expect(new Set(versions).size).toBe(versions.length);
  // The tree's version is a released one with work pending (Unreleased), or its own heading.
  expect(changelog).toMatch(new RegExp(`\\n## \\[(Unreleased|${VERSION.replace(/\./g, "\\.")})\\]`));
});

test("every example, fixture and doc that names the package's version names this one", () => {
  // The places are listed once, in scripts/release.js, which rewrites them at a release.
  const mentions = versionMentions();
  expect(new Set(mentions.map((m) => m.file)).size).toBeGreaterThanOrEqual(12);
  expect(mentions.filter((m) => m.version !== VERSION)).toEqual([]);
});
