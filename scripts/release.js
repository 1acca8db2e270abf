#!/usr/bin/env node
/**
 * Releasing, in two steps (CONTRIBUTING.md, "Releases and upgrades"):
 *
 *   node scripts/release.js prepare 0.2.0   # every place that names the version, CHANGELOG's heading
 *   (review, `npm run generate`, commit)
 *   node scripts/release.js record          # releases.json: the version at HEAD's commit
 *
 * The places that name the package's version are listed once here (`VERSION_PLACES`):
 * `prepare` rewrites them and `tests/packaging/versions.test.ts` checks that each says
 * package.json's version, so a release cannot leave an example or a doc on the old one.
 */
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.join(__dirname, "..");
const V = String.raw`(\d+\.\d+\.\d+)`;

/**
 * Where a file names the version: each pattern's first group is the version. Files that record
 * history (CHANGELOG.md, releases.json, BENCHMARKS.md, RELIABILITY.md, README's upgrade notes)
 * are not places: they name old versions on purpose.
 */
const VERSION_PLACES = [
  // The plugin a Pulumi project declares (examples and test fixtures, the guide's YAML).
  ...[
    "examples/adopt-fleet/Pulumi.yaml",
    "examples/packaged-typescript/Pulumi.yaml",
    "examples/typescript/Pulumi.yaml",
    "tests/packaged/fixtures/packaged-spec-program/Pulumi.yaml",
    "tests/packaged/fixtures/python-spec-program/Pulumi.yaml",
  ].map((file) => ({ file, patterns: [new RegExp(String.raw`- name: edge\n\s+version: ${V}`, "g")] })),
  {
    file: "examples/python/requirements.txt",
    patterns: [new RegExp(String.raw`pulumi_edge-${V}-py3-none-any\.whl`, "g")],
  },
  { file: "examples/go/go.mod", patterns: [new RegExp(String.raw`pulumi-edge/sdk/go v${V}`, "g")] },
  // The plugin a Pulumi YAML program names on each resource (a release with a download URL).
  { file: "examples/yaml/download-url/Pulumi.yaml", patterns: [new RegExp(String.raw`version: ${V}`, "g")] },
  // The guide's first stack per language: the release's file names and the plugin's version.
  ...["go", "python", "typescript", "yaml"].map((language) => ({
    file: `examples/${language}/first-stack.sh`,
    patterns: [
      new RegExp(String.raw`pulumi-edge-${V}\.tgz`, "g"),
      new RegExp(String.raw`pulumi-edge-go-${V}`, "g"),
      new RegExp(String.raw`-v${V}-`, "g"),
      new RegExp(String.raw`resource edge ${V}`, "g"),
    ],
  })),
  {
    file: "docs/guide.md",
    patterns: [
      new RegExp(String.raw`pulumi-edge-${V}\.tgz`, "g"),
      new RegExp(String.raw`pulumi_edge-${V}-py3`, "g"),
      new RegExp(String.raw`pulumi-edge-go-${V}`, "g"),
      new RegExp(String.raw`sdk/go@v${V}`, "g"),
      new RegExp(String.raw`-v${V}-`, "g"),
      new RegExp(String.raw`/v${V}/`, "g"),
      new RegExp(String.raw`resource edge ${V}`, "g"),
      new RegExp(String.raw`version: ${V}`, "g"),
      new RegExp(String.raw`VERSION=${V}`, "g"),
    ],
  },
  { file: "README.md", patterns: [new RegExp(String.raw`- name: edge\n\s+version: ${V}`, "g")] },
  {
    file: "Dockerfile",
    patterns: [new RegExp(String.raw`VERSION=${V}`, "g"), new RegExp(String.raw`edge-service:${V}`, "g")],
  },
];

/** Every version a place names: `{ file, line, version }`. */
function versionMentions() {
  const found = [];
  for (const { file, patterns } of VERSION_PLACES) {
    const text = fs.readFileSync(path.join(ROOT, file), "utf8");
    for (const pattern of patterns) {
      for (const m of text.matchAll(pattern)) {
        found.push({ file, line: text.slice(0, m.index).split("\n").length, version: m[1] });
      }
    }
  }
  return found;
}

const packageVersion = () => JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version;

function semver(v) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) throw new Error(`not a plain x.y.z version: ${JSON.stringify(v)}`);
  return m.slice(1).map(Number);
}

/** Negative, zero or positive as `a` is older than, the same as or newer than `b` (plain x.y.z). */
function compareVersions(a, b) {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

const today = () => new Date().toISOString().slice(0, 10);

function prepare(next) {
  const current = packageVersion();
  if (compareVersions(next, current) <= 0)
    throw new Error(`${next} is not newer than package.json's ${current}`);
  const changelogFile = path.join(ROOT, "CHANGELOG.md");
  const changelog = fs.readFileSync(changelogFile, "utf8");
  const head = changelog.indexOf("\n## [Unreleased]\n");
  const nextHeading = changelog.indexOf("\n## [", head + 1);
  if (head < 0 || nextHeading < 0 || !/\n### /.test(changelog.slice(head, nextHeading))) {
    throw new Error("CHANGELOG.md has no `## [Unreleased]` section with entries: nothing to release");
  }
  // package.json and package-lock.json, as npm writes them (no git tag: the record is releases.json).
  execFileSync("npm", ["version", next, "--no-git-tag-version", "--ignore-scripts"], {
    cwd: ROOT,
    stdio: "ignore",
  });
  for (const { file, patterns } of VERSION_PLACES) {
    const full = path.join(ROOT, file);
    let text = fs.readFileSync(full, "utf8");
    for (const pattern of patterns) {
      text = text.replace(pattern, (match, version) => match.replace(version, next));
    }
    fs.writeFileSync(full, text);
  }
  fs.writeFileSync(
    changelogFile,
    `${changelog.slice(0, head)}\n## [Unreleased]\n\n## [${next}] - ${today()}\n${changelog.slice(head + "\n## [Unreleased]\n".length)}`,
  );
  const stale = versionMentions().filter((m) => m.version !== next);
  if (stale.length) throw new Error(`still naming another version: ${JSON.stringify(stale)}`);
  console.log(
    `${current} → ${next}. Next: correct CHANGELOG.md's [${next}] lines, run \`npm run generate\` and ` +
      "`npm run sdks` (the schema and the SDKs carry the version), commit, then " +
      "`node scripts/release.js record`.",
  );
}

function record() {
  const version = packageVersion();
  const file = path.join(ROOT, "releases.json");
  const releases = JSON.parse(fs.readFileSync(file, "utf8"));
  if (releases.some((r) => r.version === version))
    throw new Error(`releases.json already records ${version}`);
  const git = (args) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
  if (git(["status", "--porcelain", "--untracked-files=no"])) {
    throw new Error("commit the release first: releases.json records HEAD's commit");
  }
  const commit = git(["rev-parse", "HEAD"]);
  const heading = new RegExp(String.raw`\n## \[${version.replace(/\./g, "\\.")}\] - (\d{4}-\d{2}-\d{2})\n`);
  const date = heading.exec(fs.readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8"))?.[1];
  if (!date) throw new Error(`CHANGELOG.md has no \`## [${version}] - YYYY-MM-DD\` heading`);
  // One release a line, as prettier writes it (the file is checked by `prettier --check`).
  const line = (r) =>
    `{ ${Object.entries(r)
      .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
      .join(", ")} }`;
  const entries = [{ version, commit, date }, ...releases].map((r) => `  ${line(r)}`);
  fs.writeFileSync(file, `[\n${entries.join(",\n")}\n]\n`);
  console.log(`releases.json: ${version} at ${commit} (${date}). Commit it.`);
}

module.exports = { VERSION_PLACES, versionMentions, compareVersions };

if (require.main === module) {
  const [command, arg] = process.argv.slice(2);
  try {
    if (command === "prepare" && arg) prepare(arg);
    else if (command === "record" && !arg) record();
    else {
      console.error("usage: node scripts/release.js prepare <x.y.z> | record");
      process.exit(2);
    }
  } catch (e) {
    console.error(`release: ${e.message}`);
    process.exit(1);
  }
}
