// @ts-check
/**
 * Keeps the code in the docs honest: a fenced block preceded by
 *   <!-- snippet: examples/x/index.ts#name -->
 * must equal the region of that file between `[snippet: name]` and `[/snippet]` (comment lines
 * in any syntax). The examples are run by the tests, so every such snippet is tested code.
 * Tables between `<!-- fields: <resource token> -->` and `<!-- /fields -->` are generated from the
 * plugin schema (scripts/field-tables.js).
 * Usage: node scripts/snippets.js [--write] README.md docs/*.md
 */
const fs = require("node:fs");
const path = require("node:path");
const { syncFieldTables } = require("./field-tables");

const ROOT = path.resolve(__dirname, "..");
const MARKER = /<!-- snippet: ([^#\s]+)#([\w-]+) -->\n```(\w*)\n([\s\S]*?)```/g;

/**
 * The named regions of a file, dedented.
 * @param {string} file path relative to the repository
 * @returns {Map<string, string>}
 */
function regions(file) {
  const out = new Map();
  const lines = fs.readFileSync(path.join(ROOT, file), "utf8").split("\n");
  /** @type {string | undefined} */
  let name;
  /** @type {string[]} */
  let body = [];
  for (const line of lines) {
    const open = /\[snippet: ([\w-]+)\]/.exec(line);
    if (open) {
      name = open[1];
      body = [];
    } else if (/\[\/snippet\]/.test(line) && name) {
      const indent = Math.min(...body.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
      out.set(name, body.map((l) => l.slice(indent)).join("\n") + "\n");
      name = undefined;
    } else if (name) body.push(line);
  }
  return out;
}

/**
 * The names a file's imports bind, each with its import line: `import * as x`, `import x`,
 * `import { a, b as c }` (TypeScript / JavaScript), `import x`, `import x as y`, `from m import a`
 * (Python).
 * @param {string} text
 * @returns {Map<string, string>}
 */
function importBindings(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    const t = line.trim();
    let m;
    if ((m = /^import\s+(?:type\s+)?(.+?)\s+from\s+["'][^"']+["'];?$/.exec(t))) {
      for (const part of (m[1] ?? "").split(/,(?![^{]*})/)) {
        const p = part.trim();
        const ns = /^\*\s+as\s+(\w+)$/.exec(p);
        if (ns) out.set(ns[1], t);
        else if (/^\w+$/.test(p)) out.set(p, t);
        else if (p.startsWith("{"))
          for (const name of p.replace(/[{}]/g, "").split(",")) {
            const local = name
              .trim()
              .split(/\s+as\s+/)
              .pop()
              ?.replace(/^type\s+/, "");
            if (local) out.set(local, t);
          }
      }
    } else if ((m = /^import\s+([\w.]+)(?:\s+as\s+(\w+))?$/.exec(t))) {
      out.set(m[2] ?? (m[1] ?? "").split(".")[0], t);
    } else if ((m = /^from\s+[\w.]+\s+import\s+(.+)$/.exec(t))) {
      for (const name of (m[1] ?? "").replace(/[()]/g, "").split(","))
        if (name.trim())
          out.set(
            name
              .trim()
              .split(/\s+as\s+/)
              .pop(),
            t,
          );
    }
  }
  return out;
}

/**
 * A snippet that shows imports must show every import it uses: the names the example imports
 * outside the region and the region uses without importing them.
 * @param {string} source the example's whole text
 * @param {string} region the snippet
 * @returns {string[]} the names missing their import
 */
function missingImports(source, region) {
  const shown = importBindings(region);
  if (shown.size === 0) return []; // a fragment, not the top of a program
  const code = region
    .split("\n")
    .filter((l) => !/^\s*(import\s|from\s+\S+\s+import\s)/.test(l))
    .join("\n")
    .replace(/(["'`])(?:\\.|(?!\1).)*\1/g, '""') // strings
    .replace(/(\/\/|#).*$/gm, ""); // comments
  return [...importBindings(source).keys()].filter(
    (name) => !shown.has(name) && new RegExp(`(?<![\\w.])${name}\\b`).test(code),
  );
}

/**
 * Checks (or rewrites) one document.
 * @param {string} doc path relative to the repository
 * @returns {{ problems: string[], text: string }}
 */
function syncDoc(doc) {
  const text = fs.readFileSync(path.join(ROOT, doc), "utf8");
  /** @type {string[]} */
  const problems = [];
  const updated = text.replace(MARKER, (whole, file, name, lang, code) => {
    if (!fs.existsSync(path.join(ROOT, file))) {
      problems.push(`${doc}: snippet source ${file} does not exist`);
      return whole;
    }
    const region = regions(file).get(name);
    if (region === undefined) {
      problems.push(`${doc}: ${file} has no region [snippet: ${name}]`);
      return whole;
    }
    if (code !== region)
      problems.push(`${doc}: snippet ${file}#${name} differs from the example (run: npm run docs)`);
    for (const missing of missingImports(fs.readFileSync(path.join(ROOT, file), "utf8"), region))
      problems.push(
        `${doc}: snippet ${file}#${name} shows its imports but not the one of \`${missing}\`, which it uses`,
      );
    return `<!-- snippet: ${file}#${name} -->\n\`\`\`${lang}\n${region}\`\`\``;
  });
  // Code (not shell commands) in the docs must come from an example.
  const fences = text
    .split("\n")
    .flatMap((line, i, all) =>
      /^```(ts|typescript|js|yaml|yml|python|py|go)$/.test(line) && !/^<!-- snippet: /.test(all[i - 1] ?? "")
        ? [`${doc}:${i + 1}`]
        : [],
    );
  for (const where of fences)
    problems.push(`${where}: a code block without a <!-- snippet: file#name --> source`);
  // Input tables come from the plugin schema (scripts/field-tables.js).
  const tables = syncFieldTables(doc, updated);
  return { problems: [...problems, ...tables.problems], text: tables.text };
}

if (require.main === module) {
  const write = process.argv.includes("--write");
  const docs = process.argv.slice(2).filter((a) => a !== "--write");
  let failed = false;
  for (const doc of docs) {
    const { problems, text } = syncDoc(doc);
    if (write) fs.writeFileSync(path.join(ROOT, doc), text);
    for (const p of write ? problems.filter((p) => !p.includes("differs")) : problems) {
      console.error(p);
      failed = true;
    }
  }
  process.exit(failed ? 1 : 0);
}

module.exports = { regions, syncDoc, importBindings, missingImports };
