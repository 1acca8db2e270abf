// The plugin and the service as Pulumi distributes providers: one archive per platform, named as
// the engine asks for it (sdk/go/common/workspace/plugins.go: `<pluginDownloadURL>/
// pulumi-resource-<name>-v<version>-<os>-<arch>.tar.gz`, Go's os and arch names), and the same
// layout for the service (edge-service-v<version>-<os>-<arch>.tar.gz). Each holds:
//   pulumi-resource-edge       the executable the engine starts (sh: `node` on the bundle beside it)
//   pulumi-resource-edge.js    dist/provider/plugin/index.js bundled by esbuild with everything it
//                              loads (@pulumi/pulumi, grpc-js, zod, hono, pg, ...), one file
//   node_modules/libsql, @libsql/<target>   SQLite for the embedded service: JS loader + native
//                              addon of that platform, the one thing a bundle cannot hold
// (edge-service and edge-service.js the same way for the service). A machine needs `node` on PATH
// (>= 20, the bundle's target; 22 or newer advised, what @pulumi/pulumi declares) and nothing
// else; no npm install. Native addons of other platforms come from the npm registry
// (`npm pack @libsql/<target>@<libsql's version>`, cached; npm checks their integrity).
//
//   node scripts/plugin-archive.mjs [--out DIR] [--platforms linux-amd64,linux-arm64,darwin-arm64]
// Writes the archives and checksums.txt (sha256sum's format) into DIR (default dist/archives).
// Run by `npm pack` (scripts/postpack.mjs) after `npm run build`.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const require = createRequire(import.meta.url);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { version } = require("../package.json");
const log = (m) => console.error(`[archives] ${m}`);

/** Go's os-arch → libsql's prebuilt package. glibc only on Linux (node:22-slim, Debian, Ubuntu, RHEL). */
export const PLATFORMS = {
  "linux-amd64": "linux-x64-gnu",
  "linux-arm64": "linux-arm64-gnu",
  "darwin-arm64": "darwin-arm64",
};
export const HOST_PLATFORM = `${process.platform}-${{ x64: "amd64", arm64: "arm64" }[process.arch] ?? process.arch}`;

/** The programs archived: name → compiled entry in dist. */
const PROGRAMS = {
  "pulumi-resource-edge": "dist/provider/plugin/index.js",
  "edge-service": "dist/service/cli/edge-service.js",
};
export const archiveName = (program, platform) => `${program}-v${version}-${platform}.tar.gz`;

/** The modules dist takes from @pulumi/pulumi's own directory (provider/engine/pulumi-internals.ts). */
function pulumiInternals() {
  const names = new Set();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".js"))
        for (const m of fs.readFileSync(p, "utf8").matchAll(/fromPulumi\)?\(\s*"([^"]+)"/g)) names.add(m[1]);
    }
  };
  for (const d of ["provider", "sdk", "service", "commands"]) walk(path.join(ROOT, "dist", d));
  if (!names.has("@grpc/grpc-js")) throw new Error("no fromPulumi() calls found in dist: run npm run build");
  return [...names].sort();
}

/**
 * Two modules of dist find files at run time, which a bundle has not: fromPulumi's
 * `require(require.resolve(m, { paths }))` becomes a table of static requires resolved from
 * @pulumi/pulumi's directory (esbuild bundles them, shared with @pulumi/pulumi's own requires of
 * the same files), and the version read from package.json becomes a constant.
 */
const distPatchPlugin = (names) => ({
  name: "dist-patches",
  setup(build) {
    build.onLoad({ filter: /[\\/]dist[\\/]provider[\\/]engine[\\/]pulumi-internals\.js$/ }, () => ({
      contents: [
        '"use strict";',
        "const MODULES = {",
        ...names.map((n) => `  ${JSON.stringify(n)}: () => require(${JSON.stringify(n)}),`),
        "};",
        "exports.fromPulumi = (m) => {",
        "  const load = MODULES[m];",
        "  if (!load) throw new Error(`${m} is not in the bundle: rebuild the archives (npm pack)`);",
        "  return load();",
        "};",
        'exports.grpc = () => exports.fromPulumi("@grpc/grpc-js");',
      ].join("\n"),
      resolveDir: path.dirname(require.resolve("@pulumi/pulumi/package.json")),
      loader: "js",
    }));
    build.onLoad({ filter: /[\\/]dist[\\/]sdk[\\/]version\.js$/ }, () => ({
      contents: `"use strict";\nexports.VERSION = ${JSON.stringify(version)};\n`,
      loader: "js",
    }));
  },
});

async function bundle(work) {
  const esbuild = require("esbuild");
  const names = pulumiInternals();
  for (const [program, entry] of Object.entries(PROGRAMS)) {
    const file = path.join(ROOT, entry);
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: run npm run build`);
    const result = await esbuild.build({
      entryPoints: [file],
      outfile: path.join(work, `${program}.js`),
      bundle: true,
      platform: "node",
      target: "node20",
      format: "cjs",
      minify: true,
      legalComments: "eof",
      // libsql loads its native addon by a computed name: shipped as files beside the bundle.
      // The rest are lazy requires of @pulumi/pulumi for running programs (closure
      // serialization, TypeScript programs), which a provider never reaches.
      external: ["libsql", "typescript", "ts-node", "@pulumi/pulumi/node_modules/typescript"],
      plugins: [distPatchPlugin(names)],
      logLevel: "error",
      metafile: true,
    });
    const bytes = fs.statSync(path.join(work, `${program}.js`)).size;
    log(
      `${program}.js: ${(bytes / 1e6).toFixed(1)} MB (${Object.keys(result.metafile.inputs).length} modules)`,
    );
  }
}

/** The directory of an npm package, as node resolves it from `from` (some export no package.json). */
function packageDir(name, from = ROOT) {
  const found = createRequire(path.join(from, "noop.js"))
    .resolve.paths(name)
    .map((modules) => path.join(modules, name))
    .find((dir) => fs.existsSync(path.join(dir, "package.json")));
  if (!found) throw new Error(`${name} is not installed (from ${from}): run npm install`);
  return found;
}

/** libsql's prebuilt addon for a target: this machine's from node_modules, others from the registry. */
function nativeAddon(target) {
  const name = `@libsql/${target}`;
  const libsqlVersion = require(path.join(packageDir("libsql"), "package.json")).version;
  try {
    const dir = packageDir(name, packageDir("libsql"));
    if (require(path.join(dir, "package.json")).version === libsqlVersion) return dir;
  } catch {
    // not installed here: another platform's
  }
  const cache = path.join(
    process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"),
    "pulumi-edge",
    "libsql",
  );
  const dir = path.join(cache, `${target}-${libsqlVersion}`, "package");
  if (!fs.existsSync(path.join(dir, "package.json"))) {
    // The destination said outright: run from `npm pack --pack-destination D` (postpack), the
    // inherited npm_config_pack_destination would send the tarball to D instead of here.
    const into = path.dirname(dir);
    fs.mkdirSync(into, { recursive: true });
    log(`fetching ${name}@${libsqlVersion} (npm pack)`);
    let tgz;
    try {
      tgz = execFileSync(
        "npm",
        ["pack", `${name}@${libsqlVersion}`, "--silent", "--pack-destination", into],
        {
          cwd: into,
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        },
      ).trim();
    } catch (e) {
      throw new Error(
        `npm pack ${name}@${libsqlVersion} failed (the archive for this platform needs the npm registry, once; ` +
          `or build only this machine's with --platforms ${HOST_PLATFORM}):\n${e.stderr}`,
      );
    }
    execFileSync("tar", ["-xzf", tgz], { cwd: into });
    fs.rmSync(path.join(into, tgz));
  }
  return dir;
}

const copyPackage = (from, to) => {
  fs.cpSync(from, to, { recursive: true, filter: (src) => !/[\\/]node_modules$/.test(src) });
};

function stage(work, platform) {
  const target = PLATFORMS[platform];
  if (!target) throw new Error(`unknown platform ${platform}: one of ${Object.keys(PLATFORMS).join(", ")}`);
  const dir = path.join(work, platform);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (const program of Object.keys(PROGRAMS)) {
    fs.copyFileSync(path.join(work, `${program}.js`), path.join(dir, `${program}.js`));
    // The engine starts it by its absolute path in the plugin cache; no symlinks to resolve.
    fs.writeFileSync(
      path.join(dir, program),
      `#!/bin/sh\n# ${program} v${version}: needs node (>= 20; 22 or newer advised) on PATH.\n` +
        `exec node "$(dirname "$0")/${program}.js" "$@"\n`,
      { mode: 0o755 },
    );
  }
  const modules = path.join(dir, "node_modules");
  const libsql = packageDir("libsql");
  copyPackage(libsql, path.join(modules, "libsql"));
  for (const dep of Object.keys(require(path.join(libsql, "package.json")).dependencies ?? {}))
    copyPackage(packageDir(dep, libsql), path.join(modules, dep));
  copyPackage(nativeAddon(target), path.join(modules, "@libsql", target));
  return dir;
}

/** A reproducible tar.gz of a directory's contents: sorted, root-owned, a fixed mtime, no gzip name or time. */
function tarball(dir, file, entries) {
  execFileSync(
    "sh",
    [
      "-c",
      'tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@315532800 -cf - "$@" | gzip -9n > "$OUT"',
      "tar",
      ...entries,
    ],
    { cwd: dir, env: { ...process.env, OUT: file } },
  );
}

export async function buildArchives({
  out = path.join(ROOT, "dist", "archives"),
  platforms = Object.keys(PLATFORMS),
} = {}) {
  fs.mkdirSync(out, { recursive: true });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-edge-archives-"));
  const written = [];
  try {
    await bundle(work);
    for (const platform of platforms) {
      const dir = stage(work, platform);
      for (const program of Object.keys(PROGRAMS)) {
        const file = path.join(out, archiveName(program, platform));
        tarball(dir, file, [program, `${program}.js`, "node_modules"]);
        written.push(file);
        log(`${file} (${(fs.statSync(file).size / 1e6).toFixed(1)} MB)`);
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const sums = written
    .map((f) => `${createHash("sha256").update(fs.readFileSync(f)).digest("hex")}  ${path.basename(f)}\n`)
    .join("");
  fs.writeFileSync(path.join(out, "checksums.txt"), sums);
  log(`${path.join(out, "checksums.txt")}`);
  return written;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: "string" }, platforms: { type: "string" } } });
  await buildArchives({
    out: values.out && path.resolve(values.out),
    platforms: values.platforms?.split(",").filter(Boolean),
  });
}
