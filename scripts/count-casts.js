#!/usr/bin/env node
// Counts the type casts in the product's TypeScript sources (sdk/, service/, provider/, commands/;
// not .d.ts):
// `as` assertions (`x as T` and `<T>x`, but not `as const`) and non-null assertions (`x!`), with
// the compiler's parser, so a cast in a string or a comment is not one. Each cast is a place where
// the types do not flow and the reader takes the author's word for it; their number is kept
// under a budget (tests/provider/cast-budget.test.ts).
//   node scripts/count-casts.js          totals, then the files with casts, most first
//   node scripts/count-casts.js --json   { as, nonNull, files: { "<path>": { as, nonNull } } }
const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

const ROOT = path.join(__dirname, "..");
const DIRS = ["provider", "sdk", "service", "commands"];

/** Every .ts file (not .d.ts) under `root`/`dir`, as a path relative to `root`, sorted. */
function sources(root, dir) {
  const found = [];
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") found.push(...sources(root, rel));
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) found.push(rel);
  }
  return found.sort();
}

/** `as const` (or `<const>x`): a literal's type kept narrow, not a claim about a value. */
function isConstAssertion(node) {
  const type = node.type;
  return (
    type !== undefined &&
    ts.isTypeReferenceNode(type) &&
    ts.isIdentifier(type.typeName) &&
    type.typeName.text === "const"
  );
}

/** The casts of one source text: `{ as, nonNull }`. */
function countText(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const counts = { as: 0, nonNull: 0 };
  const visit = (node) => {
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && !isConstAssertion(node)) {
      counts.as++;
    } else if (ts.isNonNullExpression(node)) {
      counts.nonNull++;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return counts;
}

/** The casts of provider/ and sdk/: totals and, per file with any, its counts. */
function countCasts(root = ROOT) {
  const result = { as: 0, nonNull: 0, files: {} };
  for (const dir of DIRS) {
    for (const file of sources(root, dir)) {
      const counts = countText(file, fs.readFileSync(path.join(root, file), "utf8"));
      result.as += counts.as;
      result.nonNull += counts.nonNull;
      if (counts.as || counts.nonNull) result.files[file] = counts;
    }
  }
  return result;
}

/** The files with casts, most first (`as` and `!` together), then by name. */
function ranked(files) {
  return Object.entries(files)
    .map(([file, c]) => ({ file, ...c, total: c.as + c.nonNull }))
    .sort((a, b) => b.total - a.total || a.file.localeCompare(b.file));
}

module.exports = { countCasts, countText, ranked };

if (require.main === module) {
  const result = countCasts();
  if (process.argv.includes("--json")) {
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } else {
    console.log(`as (not as const): ${result.as}`);
    console.log(`non-null (!):      ${result.nonNull}`);
    for (const { file, as, nonNull } of ranked(result.files)) {
      console.log(`${String(as).padStart(4)} ${String(nonNull).padStart(4)}  ${file}`);
    }
  }
}
