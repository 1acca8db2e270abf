/**
 * The counts the docs and the sources' comments state come from the code: "the 13 modules". A
 * module added to the contract fails this test until every place that counts them says the new
 * number (issue 27: the number "13" stood in ~15 places, found by nothing). Operations are not
 * counted in prose at all (issue 37: an operation added must not cost a README edit): a stated
 * count of them fails. RELIABILITY.md and BENCHMARKS.md are records of what was run at the time
 * (a bench's "route with 11 modules"), so they are not checked.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ALL_OPERATIONS, buildOpenApi, ROUTE_MODULE_NAMES } from "../../sdk/contract";

const ROOT = join(__dirname, "..", "..");
const MODULES = ROUTE_MODULE_NAMES.length;

const CHECKED = execFileSync(
  "git",
  ["ls-files", "README.md", "CONTRIBUTING.md", "docs/*.md", "sdk/*.ts", "provider/*.ts", "index.ts"],
  {
    cwd: ROOT,
    encoding: "utf8",
  },
)
  .split("\n")
  // Generated from the schema.
  .filter(
    (f) => f && !f.endsWith("provider/resources/args.ts") && !f.endsWith("provider/resources/outputs.ts"),
  );

/** Every count a file states, as `file:line: "<phrase>"` with the number the code has. */
interface StatedCount {
  where: string;
  phrase: string;
  stated: number;
  actual: number;
}

function statedCounts(): StatedCount[] {
  const rules: Array<[RegExp, number]> = [
    [/\b(\d+) (?:route |traffic )?modules\b/g, MODULES],
    [/\bthe (\d+)\s+per-module\b/g, MODULES],
  ];
  const found: StatedCount[] = [];
  for (const file of CHECKED) {
    const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
    lines.forEach((line, i) => {
      for (const [pattern, actual] of rules) {
        for (const m of line.matchAll(pattern)) {
          found.push({ where: `${file}:${i + 1}`, phrase: m[0], stated: Number(m[1]), actual });
        }
      }
    });
  }
  return found;
}

test("every count stated in the docs and comments is the code's", () => {
  const counts = statedCounts();
  // The README states it at least once: the check below cannot pass by finding nothing.
  expect(counts.some((c) => c.where.startsWith("README.md") && /modules/.test(c.phrase))).toBe(true);
  const wrong = counts
    .filter((c) => c.stated !== c.actual)
    .map((c) => `${c.where}: "${c.phrase}" (the code has ${c.actual})`);
  expect(wrong).toEqual([]);
});

test("no doc or comment counts the operations (a count would need an edit per operation)", () => {
  const counting = /\b(\d+) (?:operations|method and path pairs|endpoints|routes of the API)\b/;
  const stated: string[] = [];
  for (const file of CHECKED) {
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        const m = counting.exec(line);
        if (m) stated.push(`${file}:${i + 1}: "${m[0]}"`);
      });
  }
  expect(stated).toEqual([]);
  // The pattern finds what it is for (the table has that many operations).
  expect(counting.test(`the ${ALL_OPERATIONS.length} operations`)).toBe(true);
});

test("the OpenAPI document counts the modules from the contract", () => {
  expect(JSON.stringify((buildOpenApi() as { info: unknown }).info)).toContain(
    `with ${MODULES} traffic modules`,
  );
});
