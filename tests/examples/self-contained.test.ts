/**
 * The repository stands alone: no tracked file names a document a clone does not hold (the API's
 * contract and the notes it was built from live outside it), and every citation of
 * docs/decisions.md, where the project writes down what the contract leaves open, finds its
 * section. The names are spelled in pieces so that this file does not name them itself.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");
const FILES = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);

const OUTSIDE = [
  ["gaps", "md"].join("."),
  ["edge-api", "md"].join("."),
  ["shared", "notes"].join("/"),
  ["..", "shared"].join("/"),
];
const DECISIONS = "docs/decisions.md";

/** `file:line: name` for each line of `text` that names a document outside the repository. */
function outsideNames(file: string, text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const name of OUTSIDE) if (line.includes(name)) found.push(`${file}:${i + 1}: ${name}`);
  });
  return found;
}

/** The anchors of the headings of a Markdown text, as GitHub makes them. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const [, title] of markdown.matchAll(/^#{1,6} (.*)$/gm))
    out.add(
      title!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_\- ]/gu, "")
        .replace(/ /g, "-"),
    );
  return out;
}

/** `file:line: #anchor` for each citation of docs/decisions.md in `text` that no heading makes. */
function deadCitations(file: string, text: string, known: Set<string>): string[] {
  const dead: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const [, anchor] of line.matchAll(/decisions\.md#([\w-]+)/g))
      if (!known.has(anchor!)) dead.push(`${file}:${i + 1}: #${anchor}`);
  });
  return dead;
}

const texts = FILES.filter((f) => !/\.(png|jpe?g|gif|ico|woff2?|tgz|gz|zip|sqlite|db)$/i.test(f)).map(
  (f) => ({
    file: f,
    text: readFileSync(join(ROOT, f), "utf8"),
  }),
);

test("no tracked file names a document outside the repository", () => {
  expect(texts.flatMap(({ file, text }) => outsideNames(file, text))).toEqual([]);
});

test("every citation of docs/decisions.md finds its section", () => {
  const known = anchors(readFileSync(join(ROOT, DECISIONS), "utf8"));
  expect(texts.flatMap(({ file, text }) => deadCitations(file, text, known))).toEqual([]);
  // The code cites it: a section nobody cites is still documentation, but none cited means the
  // citations were lost.
  expect(texts.filter(({ text }) => /decisions\.md#/.test(text)).length).toBeGreaterThan(5);
});

test("the checks notice an outside name and a dead citation", () => {
  expect(outsideNames("x.ts", `a\n// see ${OUTSIDE[0]} "Wire"\n${OUTSIDE[2]}/x.md`)).toEqual([
    `x.ts:2: ${OUTSIDE[0]}`,
    `x.ts:3: ${OUTSIDE[2]}`,
  ]);
  expect(deadCitations("y.ts", `${DECISIONS}#wire ${DECISIONS}#${"nope"}`, new Set(["wire"]))).toEqual([
    "y.ts:1: #nope",
  ]);
});
