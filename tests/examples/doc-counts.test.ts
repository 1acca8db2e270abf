/**
 * The counts the docs and the sources' comments state come from the code: "the 13 modules",
 * "the 23 operations (59 method and path pairs)". A module or an operation added to the contract
 * fails this test until every place that counts them says the new number (issue 27: the number
 * "13" stood in ~15 places, found by nothing). RELIABILITY.md and BENCHMARKS.md are records of
 * what was run at the time (a bench's "route with 11 modules"), so they are not checked.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ALL_OPERATIONS, buildOpenApi, MODULE_OPERATIONS, ROUTE_MODULE_NAMES } from "../../sdk/contract";

const ROOT = join(__dirname, "..", "..");
const MODULES = ROUTE_MODULE_NAMES.length;
/** Kinds of operation: a module's put, get and delete count once for all modules. */
const OPERATION_KINDS = ALL_OPERATIONS.length - MODULE_OPERATIONS.length + MODULE_OPERATIONS.length / MODULES;
const PAIRS = ALL_OPERATIONS.length;

const CHECKED = execFileSync(
  "git",
  ["ls-files", "README.md", "docs/*.md", "sdk/*.ts", "provider/*.ts", "index.ts"],
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
    [/\b(\d+) operations\b/g, OPERATION_KINDS],
    [/\b(\d+) method and path pairs\b/g, PAIRS],
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
  // Each module's three operations count once, so the kinds are a whole number.
  expect(Number.isInteger(OPERATION_KINDS)).toBe(true);
  const counts = statedCounts();
  // The README states each of them at least once: the check below cannot pass by finding nothing.
  for (const phrase of [/modules/, /operations/, /method and path pairs/]) {
    expect(counts.some((c) => c.where.startsWith("README.md") && phrase.test(c.phrase))).toBe(true);
  }
  const wrong = counts
    .filter((c) => c.stated !== c.actual)
    .map((c) => `${c.where}: "${c.phrase}" (the code has ${c.actual})`);
  expect(wrong).toEqual([]);
});

test("the OpenAPI document counts the modules from the contract", () => {
  expect(JSON.stringify((buildOpenApi() as { info: unknown }).info)).toContain(
    `with ${MODULES} traffic modules`,
  );
});
