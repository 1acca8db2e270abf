// npm run sdks: the SDKs of the packaged `edge` provider, generated from its committed schema
// (provider/plugin/schema.json, itself generated from the contract: `npm run schema`).
//
// - Node.js, Python, Go: scripts/sdkgen, a small driver over Pulumi's own code generators of the
//   pinned release (pkg/v3/codegen). `pulumi package gen-sdk` reaches those generators through
//   the language hosts, and the hosts this machine can build (sdk/v3@v3.68.0) predate that call.
// - .NET: its generator lives with the .NET language host (pulumi-dotnet), which the module proxy
//   refuses; generated with `pulumi package gen-sdk --language dotnet` where that host is installed.
//
// Output in dist/sdks/<language>: build outputs, shipped in the npm package (see README "Which face?").
// The Node.js SDK is also compiled into dist/packaged: `import * as edge from "pulumi-edge/packaged"`;
// the Python SDK is also built into a wheel, dist/python/pulumi_edge-<version>-py3-none-any.whl
// (`pip install` it from the file); dist/sdks/go is the Go module github.com/pulumi-edge/pulumi-edge/sdk/go
// (tidy: go.mod and go.sum). `npm pack` puts the wheel and the Go module beside the tarball (scripts/postpack.mjs).
// Regenerates only when the schema, the generator or the download URL changed (stamp in dist/sdks/.stamp).
//
// EDGE_PLUGIN_DOWNLOAD_URL: the schema's pluginDownloadURL for these SDKs: where the engine
// downloads the plugin archive a program needs (scripts/plugin-archive.mjs), e.g. a platform
// team's artifact server. Default: none, as in the committed schema: the engine then takes the
// plugin from Pulumi.yaml's plugins: paths or its plugin cache (pulumi plugin install --file).
// It is part of the default provider's name in a stack's state: keep it stable across releases.
// `--out DIR [--languages python,go,nodejs]` generates into DIR/sdks/<language> (the wheel into
// DIR/python, the compiled Node.js SDK into DIR/packaged) instead of dist, leaving dist alone and
// each language not named as it is in DIR: a release for another URL, or a test's.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const require = createRequire(import.meta.url);
const engine = require("./engine.js");
const { ensureVenv } = require("./venv.js");
const { sdkgenBinary } = require("./sdkgen-binary.js");
const ROOT = engine.ROOT;
const SCHEMA = path.join(ROOT, "provider/plugin/schema.json");
const { values: args } = parseArgs({ options: { out: { type: "string" }, languages: { type: "string" } } });
const OUT = args.out ? path.resolve(args.out, "sdks") : path.join(ROOT, "dist/sdks");
const WHEEL_DIR = args.out ? path.resolve(args.out, "python") : path.join(ROOT, "dist/python");
const PACKAGED_DIR = args.out ? path.resolve(args.out, "packaged") : path.join(ROOT, "dist/packaged");
const LANGUAGES = args.languages?.split(",").filter(Boolean) ?? ["nodejs", "python", "go"];
const DOWNLOAD_URL = process.env.EDGE_PLUGIN_DOWNLOAD_URL || undefined;
const log = (m) => console.log(`[sdks] ${m}`);
const PULUMI_VERSION = require("../package.json").dependencies["@pulumi/pulumi"];

const hash = (...files) => {
  const h = createHash("sha256");
  for (const f of files) h.update(fs.readFileSync(f));
  return h.digest("hex").slice(0, 16);
};

/** The schema the SDKs are generated from: the committed one, with EDGE_PLUGIN_DOWNLOAD_URL if set. */
function schemaFile(work) {
  if (!DOWNLOAD_URL) return SCHEMA;
  if (!/^(https?|github|gitlab):\/\//.test(DOWNLOAD_URL))
    throw new Error(
      `EDGE_PLUGIN_DOWNLOAD_URL=${DOWNLOAD_URL}: give an http(s):// URL (the directory holding the archives)`,
    );
  const schema = JSON.parse(fs.readFileSync(SCHEMA, "utf8"));
  schema.pluginDownloadURL = DOWNLOAD_URL;
  const file = path.join(work, "schema.json");
  fs.writeFileSync(file, JSON.stringify(schema, null, 2));
  return file;
}

function generate() {
  const gen = sdkgenBinary(log);
  const stampFile = path.join(OUT, ".stamp");
  // This script is part of the stamp: a change to how the SDKs are laid out regenerates them.
  const stamp = `${hash(SCHEMA, fileURLToPath(import.meta.url))} ${path.basename(path.dirname(gen))} ${DOWNLOAD_URL ?? ""}`;
  if (
    !args.out &&
    fs.existsSync(stampFile) &&
    fs.readFileSync(stampFile, "utf8") === stamp &&
    fs.existsSync(path.join(ROOT, "dist/packaged/index.js"))
  ) {
    log("SDKs up to date");
    return;
  }
  if (args.out)
    for (const language of LANGUAGES) fs.rmSync(path.join(OUT, language), { recursive: true, force: true });
  else fs.rmSync(OUT, { recursive: true, force: true });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-edge-schema-"));
  try {
    const schema = schemaFile(work);
    for (const language of LANGUAGES) {
      execFileSync(gen, ["-schema", schema, "-language", language, "-out", path.join(OUT, language)], {
        stdio: "inherit",
      });
      log(`${language}: ${path.join(OUT, language)}${DOWNLOAD_URL ? ` (plugin from ${DOWNLOAD_URL})` : ""}`);
    }
    if (LANGUAGES.includes("go")) goModule();
    if (LANGUAGES.includes("python")) pythonWheel();
    if (LANGUAGES.includes("nodejs")) compileNode();
    if (args.out) return; // a release elsewhere: dist's .NET build stays as it is
    dotnet(schema);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  fs.writeFileSync(stampFile, stamp);
}

/** Runs go in `cwd` with the environment a user's go has: no GOFLAGS overrides, no workspace. */
function go(cwd, args) {
  try {
    return execFileSync("go", args, {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, GOFLAGS: "", GOWORK: "off" },
    });
  } catch (e) {
    throw new Error(
      `go ${args.join(" ")} failed in ${cwd} (it needs the Go module proxy or a warm module cache):\n${e.stderr}`,
    );
  }
}

/**
 * The Go SDK as a module of its own: dist/sdks/go is github.com/pulumi-edge/pulumi-edge/sdk/go
 * (the schema's go.modulePath), whose package edge is the schema's importBasePath. Its go line is
 * the Pulumi Go SDK's (a module cannot declare less than what it requires), and `go mod tidy`
 * writes the rest of go.mod and go.sum, so that it builds as is, with no GOFLAGS=-mod=mod.
 * A Go program names it with `replace github.com/pulumi-edge/pulumi-edge/sdk/go => <this directory>`.
 */
function goModule() {
  const dir = path.join(OUT, "go");
  const pulumiSdk = JSON.parse(
    go(dir, ["mod", "download", "-json", `github.com/pulumi/pulumi/sdk/v3@v${PULUMI_VERSION}`]),
  );
  const goLine = /^go\s+(\S+)\s*$/m.exec(fs.readFileSync(pulumiSdk.GoMod, "utf8"))?.[1];
  if (!goLine) throw new Error(`no go line in ${pulumiSdk.GoMod}`);
  fs.writeFileSync(
    path.join(dir, "go.mod"),
    [
      "module github.com/pulumi-edge/pulumi-edge/sdk/go",
      "",
      `go ${goLine}`,
      "",
      `require github.com/pulumi/pulumi/sdk/v3 v${PULUMI_VERSION}`,
      "",
    ].join("\n"),
  );
  go(dir, ["mod", "tidy"]);
  log(`go: module github.com/pulumi-edge/pulumi-edge/sdk/go (go ${goLine}) in ${dir}`);
}

/** What builds the wheel: the SDK's build backend (pyproject.toml: setuptools), pinned. */
const WHEEL_TOOLS = "setuptools==84.2.1\n";

/**
 * The Python SDK as a wheel in dist/python, built from a copy of dist/sdks/python (the build
 * leaves build/ and egg-info behind, which must not ship) by the cached venv's setuptools.
 * SOURCE_DATE_EPOCH makes the wheel the same bytes for the same SDK.
 */
function pythonWheel() {
  const src = path.join(OUT, "python");
  const outDir = WHEEL_DIR;
  // The project's README is the package description; the generator writes it into the package only.
  fs.copyFileSync(path.join(src, "pulumi_edge", "README.md"), path.join(src, "README.md"));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-edge-wheel-"));
  try {
    fs.cpSync(src, path.join(work, "python"), { recursive: true });
    fs.rmSync(outDir, { recursive: true, force: true });
    const python = ensureVenv(WHEEL_TOOLS);
    execFileSync(
      python,
      [
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-build-isolation",
        "--wheel-dir",
        outDir,
        path.join(work, "python"),
      ],
      { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, SOURCE_DATE_EPOCH: "315532800" } },
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const wheels = fs.readdirSync(outDir);
  log(`python: wheel ${outDir}/${wheels.join(", ")}`);
}

function dotnet(schema) {
  // gen-sdk needs a backend to start; a throwaway one, removed after.
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-edge-sdks-state-"));
  try {
    execFileSync(
      path.join(engine.PULUMI_BIN, "pulumi"),
      ["package", "gen-sdk", schema, "--language", "dotnet", "-o", OUT],
      {
        stdio: "pipe",
        env: {
          ...process.env,
          ...engine.engineEnv({ stateDir }),
        },
      },
    );
    log("dotnet: dist/sdks/dotnet");
  } catch (e) {
    fs.rmSync(path.join(OUT, "dotnet"), { recursive: true, force: true });
    const why = String(e.stderr || e.message)
      .trim()
      .split("\n")
      .pop();
    log(
      `dotnet: not generated here (${why}); it needs a pulumi-language-dotnet host, which the Go module proxy does not serve`,
    );
  } finally {
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

/**
 * The Node.js SDK, compiled with this project's TypeScript into dist/packaged (`pulumi-edge/packaged`),
 * with its package.json (its resources register with that version).
 *
 * Both package.json files lose the generator's `pulumi` block (`resource: true`, the plugin's name,
 * version and download URL). The Node.js language host reports every package.json under a program's
 * node_modules that says `resource: true` as a plugin the program needs, whatever the program
 * imports (it walks the directories; Pulumi 3.259's host as the older one): with the block, a
 * program of dynamic resources only would make the engine fetch pulumi-resource-edge on every fresh
 * machine. A program on `pulumi-edge/packaged` needs no such declaration: each of its resources
 * registers with the plugin's version and download URL (the SDK's resource options), from which the
 * engine finds the plugin, or downloads it, when the first one is registered.
 */
function compileNode() {
  const dir = path.join(OUT, "nodejs");
  checkInputsInConstructors(dir);
  fs.rmSync(PACKAGED_DIR, { recursive: true, force: true });
  // Outside this checkout (--out), the sources find @pulumi/pulumi and @types/node through a link
  // to its node_modules, for the compile only.
  const modules = args.out ? path.join(dir, "node_modules") : undefined;
  if (modules) fs.symlinkSync(path.join(ROOT, "node_modules"), modules, "dir");
  try {
    execFileSync(
      process.execPath,
      [
        require.resolve("typescript/bin/tsc"),
        "-p",
        path.join(dir, "tsconfig.json"),
        "--outDir",
        PACKAGED_DIR,
      ],
      { stdio: "inherit" },
    );
  } finally {
    if (modules) fs.rmSync(modules);
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  delete manifest.pulumi;
  for (const file of [path.join(dir, "package.json"), path.join(PACKAGED_DIR, "package.json")])
    fs.writeFileSync(file, `${JSON.stringify(manifest, null, 4)}\n`);
  log(`nodejs: compiled into ${path.relative(ROOT, PACKAGED_DIR) || PACKAGED_DIR} (pulumi-edge/packaged)`);
}

/**
 * Every constructor of the Node.js SDK (each resource's and the provider's) hands its inputs to
 * `checkedInputs` (provider/resources/program-checks.ts, `pulumi-edge/program-checks`) before the
 * SDK serializes them: the contract's text rule, where the program still has the text (the SDK's
 * protobuf encoding drops half of a surrogate pair alone without a word, so the plugin never sees
 * it). The generator has no hook for it, so its one `super(...)` line per class is rewritten; a
 * count that differs from the schema's resources and the provider fails the build.
 */
function checkInputsInConstructors(dir) {
  const call = /\bsuper\((\w+)\.__pulumiType, name, resourceInputs, opts\b/g;
  const expected = Object.keys(JSON.parse(fs.readFileSync(SCHEMA, "utf8")).resources).length + 1;
  let rewritten = 0;
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const text = fs.readFileSync(path.join(dir, file), "utf8");
    const calls = [...text.matchAll(call)].length;
    if (calls === 0) continue;
    const imports = 'import * as pulumi from "@pulumi/pulumi";\n';
    if (!text.includes(imports))
      throw new Error(`${file}: no line ${JSON.stringify(imports)} to import beside`);
    rewritten += calls;
    fs.writeFileSync(
      path.join(dir, file),
      text
        .replace(imports, `${imports}import { checkedInputs } from "pulumi-edge/program-checks";\n`)
        .replace(call, 'super($1.__pulumiType, name, checkedInputs("$1", name, resourceInputs), opts'),
    );
  }
  if (rewritten !== expected)
    throw new Error(
      `the Node.js SDK has ${rewritten} constructors that register their inputs as scripts/sdks.mjs expects, not ${expected} (the schema's resources and the provider): update checkInputsInConstructors for the generator's code`,
    );
}

generate();
