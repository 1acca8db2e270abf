/**
 * Every file of this repository that the docs name exists: the targets of relative links, and
 * the backticked paths that start in one of the repository's top-level entries (`provider/…`,
 * `scripts/x.sh`), and bare document and test names (`README.md`, `faults.test.ts`). Paths in a
 * user's project (`node_modules/…`, `../edge-dist/…`), what builds and runs write (`dist/…`,
 * `bench/tmp/…`: ignored by git) and patterns (`examples/*`, `<v>`) are not checked. A link to a
 * heading (`#anchor`, `other.md#anchor`) must find one, named as GitHub names it.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";

const ROOT = join(__dirname, "..", "..");
const FILES = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
/** The repository's top-level entries, as git has them (so not node_modules/, dist/, …). */
const TOP = new Set(FILES.map((f) => f.split("/")[0]));

function ignored(path: string): boolean {
  return spawnSync("git", ["check-ignore", "-q", "--no-index", path], { cwd: ROOT }).status === 0;
}
const DOCS = [
  ...readdirSync(ROOT).filter((f) => f.endsWith(".md")),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
].sort();

/** The files a document names that do not exist, as `doc:line: path`. */
function missingPaths(doc: string): string[] {
  const lines = readFileSync(join(ROOT, doc), "utf8").split("\n");
  const missing: string[] = [];
  let fenced = false;
  lines.forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    const where = `${doc}:${i + 1}`;
    // Links: [text](target), relative to the document.
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^([a-z]+:|#)/i.test(target!)) continue;
      const file = target!.replace(/[#?].*$/, "");
      const resolved = posix.normalize(posix.join(posix.dirname(doc), file));
      if (resolved.startsWith("../") || !existsSync(join(ROOT, resolved)))
        missing.push(`${where}: link ${target} (outside the repository or missing)`);
    }
    // Backticked paths: repository-relative (or relative to the document).
    for (const [, token] of line.matchAll(/`([^`\s]+)`/g)) {
      const path = token!.replace(/(:\d+)+$|#.*$/, "").replace(/\/$/, "");
      if (/[*<>{}$~]|\.\.\.|…/.test(path) || !/^[\w.@/-]+$/.test(path)) continue;
      // A bare file name: a document, or a test named in its folder's section.
      const named = path.includes("/") ? TOP.has(path.split("/")[0]!) : /\.(md|test\.ts)$/.test(path);
      if (!named || existsSync(join(ROOT, path)) || existsSync(join(ROOT, dirname(doc), path))) continue;
      if (!path.includes("/") && FILES.some((f) => posix.basename(f) === path)) continue;
      if (ignored(path)) continue; // what runs write (bench/tmp/…)
      missing.push(`${where}: \`${token}\``);
    }
  });
  return missing;
}

test.each(DOCS)("%s: every repository file it names exists", (doc) => {
  expect(missingPaths(doc)).toEqual([]);
});

/** The anchors of a Markdown document's headings, as GitHub makes them (code blocks skipped). */
function headingAnchors(doc: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, doc), "utf8").split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading) {
      anchors.add(
        heading[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N}_\- ]/gu, "")
          .replace(/ /g, "-"),
      );
    }
  }
  return anchors;
}

/** The links of `doc` to a heading (`#anchor`, `other.md#anchor`) that no heading there makes. */
function missingAnchors(doc: string): string[] {
  const missing: string[] = [];
  let fenced = false;
  readFileSync(join(ROOT, doc), "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (/^\s*```/.test(line)) fenced = !fenced;
      if (fenced) return;
      for (const [, file, anchor] of line.matchAll(/\]\(([^)\s#]*\.md|)#([^)\s]+)\)/g)) {
        const target = file ? posix.normalize(posix.join(posix.dirname(doc), file!)) : doc;
        if (target.startsWith("../") || !existsSync(join(ROOT, target))) continue; // missingPaths says so
        if (!headingAnchors(target).has(anchor!))
          missing.push(`${doc}:${i + 1}: ${file ?? ""}#${anchor} (no such heading)`);
      }
    });
  return missing;
}

test.each(DOCS)("%s: every link to a heading finds it", (doc) => {
  expect(missingAnchors(doc)).toEqual([]);
});

test("the checker notices a missing link target, a link out of the repository and a missing path", () => {
  const doc = ".test-work/doc-paths-check.md";
  mkdirSync(join(ROOT, ".test-work"), { recursive: true });
  writeFileSync(
    join(ROOT, doc),
    [
      "[ok](../README.md) [gone](../docs/nope.md) [out](../../elsewhere/spec.md#x) [web](https://x.y/z)",
      "`provider/plugin/schema.json` `provider/plugin/missing.ts:12` `node_modules/pulumi-edge/bin` `examples/*/index.ts`",
      "`README.md` `GAPS.md` `faults.test.ts` `nope.test.ts` `bench/tmp/x.json` `pulumi-edge/packaged` `edge:index:HttpsEdge`",
      "```sh",
      "cat scripts/nope.sh `scripts/nope.sh`",
      "```",
    ].join("\n"),
  );
  expect(missingPaths(doc)).toEqual([
    `${doc}:1: link ../docs/nope.md (outside the repository or missing)`,
    `${doc}:1: link ../../elsewhere/spec.md#x (outside the repository or missing)`,
    `${doc}:2: \`provider/plugin/missing.ts:12\``,
    `${doc}:3: \`GAPS.md\``,
    `${doc}:3: \`nope.test.ts\``,
  ]);
});
