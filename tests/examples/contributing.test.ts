/**
 * CONTRIBUTING.md's claims about where things are hold: every identifier it places in a file
 * ("`requiredScope` in `sdk/contract/operations.ts`", "`sdk/contract/wire.ts` (`pageQuerySchema`,
 * …)") is in that file. (That the files exist is doc-paths.test.ts's; that the recipes work, the
 * tests each recipe names.) A rename that leaves the guide for contributors behind fails here.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";

const ROOT = join(__dirname, "..", "..");
const FILES = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);

/** A path as the text gives it: from the repository's root, or a bare name that one file has. */
function resolve(file: string): string | undefined {
  if (existsSync(join(ROOT, file))) return join(ROOT, file);
  const same = FILES.filter((f) => posix.basename(f) === file);
  return !file.includes("/") && same.length === 1 ? join(ROOT, same[0]!) : undefined;
}

interface Claim {
  line: number;
  names: string[];
  file: string;
}

/** The identifiers a Markdown text places in a source file, with the line that says so. */
export function placements(text: string): Claim[] {
  const claims: Claim[] = [];
  const idents = (s: string) => [...s.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1]!);
  let fenced = false;
  text.split("\n").forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    // "`a`, `b` and `c` in `file`" (only the names joined to "in" by commas and conjunctions)
    for (const m of line.matchAll(
      /((?:`[A-Za-z_$][\w$]*`(?:,? (?:and|or) |, )?)+) in `([\w./-]+\.[cm]?[jt]s)`/g,
    ))
      claims.push({ line: i + 1, names: idents(m[1]!), file: m[2]! });
    // "`file` (`a`, `b`, `c`)"
    for (const m of line.matchAll(/`([\w./-]+\.[cm]?[jt]s)` \(((?:`[A-Za-z_$][\w$]*`(?:, )?)+)\)/g))
      claims.push({ line: i + 1, names: idents(m[2]!), file: m[1]! });
  });
  return claims;
}

/** The claims whose identifier is not in the file, as "CONTRIBUTING.md:line: `name` is not in file". */
function broken(doc: string): string[] {
  const out: string[] = [];
  for (const { line, names, file } of placements(readFileSync(join(ROOT, doc), "utf8"))) {
    const path = resolve(file);
    if (!path) continue; // doc-paths.test.ts names it
    const source = readFileSync(path, "utf8");
    for (const name of names)
      if (!new RegExp(`(?<![\\w$])${name.replace(/\$/g, "\\$")}(?![\\w$])`).test(source))
        out.push(`${doc}:${line}: \`${name}\` is not in ${file}`);
  }
  return out;
}

test("every identifier CONTRIBUTING.md places in a file is in that file", () => {
  const claims = placements(readFileSync(join(ROOT, "CONTRIBUTING.md"), "utf8"));
  expect(claims.length).toBeGreaterThan(10); // the check cannot pass by reading nothing
  expect(broken("CONTRIBUTING.md")).toEqual([]);
});

test("both forms of a placement are read", () => {
  expect(placements("`a`, `b` and `c` in `x/y.ts`; `z.ts` (`d`, `e`)\n```\n`f` in `g.ts`\n```\n")).toEqual([
    { line: 1, names: ["a", "b", "c"], file: "x/y.ts" },
    { line: 1, names: ["d", "e"], file: "z.ts" },
  ]);
});
