/**
 * Earlier releases of this package, built from git history for the upgrade test: the typed face
 * of scripts/built-release.js, which the benchmark of a release beside this tree
 * (bench/write-path-ab.mjs) uses too, so both build and cache a release alike.
 *
 * releases.json (repository root) lists what shipped, each with its commit. `previousRelease()`
 * is the newest one older than package.json's version; `builtRelease()` checks it out with
 * `git archive` and builds it as its own scripts do (`npm ci --prefer-offline`, `npm run build`,
 * `npm run sdks`), once per machine: the result is cached in
 * ~/.cache/pulumi-edge/releases/<commit>, so a second run costs nothing.
 */
const built = require("../../scripts/built-release.js") as typeof import("../../scripts/built-release.js");

export const ROOT: string = built.ROOT;

export interface Release {
  version: string;
  commit: string;
  date: string;
}

/** Release versions compare as scripts/release.js (which bumps them) compares them. */
export const { compareVersions } =
  require("../../scripts/release.js") as typeof import("../../scripts/release.js");

export const releases: () => Release[] = built.releases;
export const currentVersion: () => string = built.currentVersion;

/**
 * The release an upgrade starts from: the newest recorded one older than package.json's version;
 * while package.json still says the newest release, that release, unless this tree is that
 * release itself (see scripts/built-release.js).
 */
export const previousRelease: () => Release = built.previousRelease;

/** Throws, saying what to do, when the clone lacks the release's commit (a shallow clone). */
export const assertCommit: (release: Release) => void = built.assertCommit;

/**
 * The release built (dist, bin, node_modules), from the cache or now. `log` reports the steps
 * (they take minutes when the cache is cold).
 */
export const builtRelease: (release: Release, log?: (m: string) => void) => string = built.builtRelease;

/** The `edge-service` command of a built tree, as its package.json names it. */
export const edgeServiceCli: (dir: string) => string = built.edgeServiceCli;
