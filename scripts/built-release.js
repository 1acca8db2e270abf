/**
 * Earlier releases of this package, built from git history: for the upgrade test
 * (tests/upgrade, through tests/upgrade/release.ts) and for the benchmark that runs a release
 * beside this tree (bench/write-path-ab.mjs). One implementation for both, so that they build and
 * cache a release alike and share the cache.
 *
 * releases.json (repository root) lists what shipped, each with its commit. `previousRelease()`
 * is the newest one older than package.json's version; `builtRelease()` checks a release out with
 * `git archive` and builds it as its own scripts do (`npm ci --prefer-offline`, `npm run build`,
 * `npm run sdks`), once per machine: the result is cached in
 * ~/.cache/pulumi-edge/releases/<commit> (built beside, renamed into place when complete), so a
 * second run costs nothing.
 */
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { compareVersions } = require("./release.js");

const ROOT = path.join(__dirname, "..");

/** @typedef {{ version: string, commit: string, date: string }} Release */

/** @returns {Release[]} releases.json, newest first (as `release.js record` writes it). */
function releases() {
  return JSON.parse(fs.readFileSync(path.join(ROOT, "releases.json"), "utf8"));
}

/** @returns {string} package.json's version. */
const currentVersion = () => JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version;

/**
 * The recorded release of `version`; without one, the newest recorded release.
 * @param {string} [version]
 * @returns {Release}
 */
function releaseNamed(version) {
  const all = releases();
  if (version === undefined) {
    const newest = [...all].sort((a, b) => compareVersions(b.version, a.version))[0];
    if (!newest) throw new Error("releases.json records no release");
    return newest;
  }
  const found = all.find((r) => r.version === version);
  if (!found) {
    throw new Error(
      `releases.json records no release ${version} (it records ${all.map((r) => r.version).join(", ")})`,
    );
  }
  return found;
}

/**
 * The release an upgrade starts from: the newest recorded one older than package.json's version;
 * while package.json still says the newest release (work merged after it, before the next
 * release bumps the version), that release, unless this tree is that release itself (only the
 * release record differs: upgrading a release to itself proves nothing).
 * @returns {Release}
 */
function previousRelease() {
  const current = currentVersion();
  const older = releases()
    .filter((r) => compareVersions(r.version, current) <= 0)
    .sort((a, b) => compareVersions(b.version, a.version));
  const strictly = older.find((r) => compareVersions(r.version, current) < 0);
  const same = older[0] && compareVersions(older[0].version, current) === 0 ? older[0] : undefined;
  const found = same && !isThisTree(same) ? same : strictly;
  if (!found) throw new Error(`releases.json records no release at or before ${current}`);
  return found;
}

/**
 * Whether the working tree is `release`'s commit but for releases.json (the record made after it).
 * @param {Release} release
 */
function isThisTree(release) {
  try {
    execFileSync("git", ["diff", "--quiet", release.commit, "--", ".", ":(exclude)releases.json"], {
      cwd: ROOT,
      stdio: "ignore",
    });
    return true;
  } catch {
    return false; // differs, or the commit is not in this clone (assertCommit says so later)
  }
}

/** @param {string[]} args */
const git = (args) =>
  execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

/**
 * Throws, saying what to do, when the clone lacks the release's commit (a shallow clone).
 * @param {Release} release
 */
function assertCommit(release) {
  try {
    git(["cat-file", "-e", `${release.commit}^{commit}`]);
  } catch {
    const shallow = (() => {
      try {
        return git(["rev-parse", "--is-shallow-repository"]) === "true";
      } catch {
        return false;
      }
    })();
    throw new Error(
      `release ${release.version} (commit ${release.commit}, releases.json) is not in this clone` +
        `${shallow ? " (a shallow clone)" : ""}: it is built from git history; ` +
        "fetch the full history (`git fetch --unshallow`, or clone without --depth) and run again",
    );
  }
}

/**
 * Whether a process of this id runs (signal 0: no signal sent, only the check).
 * @param {number} pid
 */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {NodeJS.ErrnoException} */ (e).code === "EPERM";
  }
}

const cacheRoot = () =>
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "pulumi-edge", "releases");

/**
 * The release built (dist, bin, node_modules), from the cache or now: its directory. `log` reports
 * the steps (they take minutes when the cache is cold).
 * @param {Release} release
 * @param {(m: string) => void} [log]
 * @returns {string}
 */
function builtRelease(release, log = () => {}) {
  assertCommit(release);
  const dir = path.join(cacheRoot(), release.commit);
  if (fs.existsSync(path.join(dir, ".built"))) return dir;
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const building = `${dir}.building-${process.pid}`;
  // What an interrupted build left (its process gone) is removed, not kept forever.
  for (const entry of fs.readdirSync(cacheRoot())) {
    const pid = Number(/\.building-(\d+)$/.exec(entry)?.[1]);
    if (entry.startsWith(release.commit) && pid && !alive(pid)) {
      fs.rmSync(path.join(cacheRoot(), entry), { recursive: true, force: true });
    }
  }
  fs.rmSync(building, { recursive: true, force: true });
  fs.mkdirSync(building);
  /** @param {string} cmd @param {string[]} args @param {string} what */
  const run = (cmd, args, what) => {
    log(`${release.version}: ${what}`);
    try {
      execFileSync(cmd, args, {
        cwd: building,
        stdio: ["ignore", "pipe", "pipe"],
        maxBuffer: 256 * 1024 * 1024,
        timeout: 1_200_000,
        // The release's own scripts, not this checkout's: no npm_* of the calling `npm test`.
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))),
      });
    } catch (e) {
      const err = /** @type {{ stdout?: Buffer, stderr?: Buffer, message: string }} */ (e);
      throw new Error(
        `building release ${release.version} (${release.commit}) in ${building}: ${what} failed:\n` +
          `${err.stdout?.toString().slice(-3000) ?? ""}\n${err.stderr?.toString().slice(-3000) ?? err.message}`,
      );
    }
  };
  try {
    const tar = path.join(building, ".source.tar");
    run(
      "git",
      ["-C", ROOT, "archive", "--format=tar", "-o", tar, release.commit],
      `git archive ${release.commit}`,
    );
    run("tar", ["-xf", tar], "unpack");
    fs.rmSync(tar);
    run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], "npm ci --prefer-offline");
    run("npm", ["run", "build"], "npm run build");
    run("npm", ["run", "sdks"], "npm run sdks");
    fs.writeFileSync(path.join(building, ".built"), `${new Date().toISOString()}\n`);
    // A directory there without the mark is no finished build (e.g. one copied in by hand).
    if (!fs.existsSync(path.join(dir, ".built"))) fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(building, dir);
    } catch (e) {
      // Another run built it meanwhile: keep theirs.
      if (!fs.existsSync(path.join(dir, ".built"))) throw e;
    }
  } finally {
    fs.rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

/**
 * The `edge-service` command of a built tree (this one, or a release built above), as its own
 * package.json names it: where it lives in dist/ changed when the service got a folder of its own
 * (dist/sdk/cli up to 0.2.0, dist/service/cli after), so a tree is asked, never assumed.
 */
function edgeServiceCli(dir) {
  const bin = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).bin["edge-service"];
  return path.join(dir, bin);
}

module.exports = {
  ROOT,
  edgeServiceCli,
  releases,
  currentVersion,
  releaseNamed,
  previousRelease,
  assertCommit,
  builtRelease,
};

// `node scripts/built-release.js [VERSION]`: builds (or finds) a release, prints its directory.
if (require.main === module) {
  try {
    console.log(builtRelease(releaseNamed(process.argv[2]), (m) => console.error(m)));
  } catch (e) {
    console.error(`built-release: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
