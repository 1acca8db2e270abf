// @ts-check
/**
 * Keeps the code in the docs honest: a fenced block preceded by
 *   <!-- snippet: examples/x/index.ts#name -->
 * must equal the region of that file between `[snippet: name]` and `[/snippet]` (comment lines
 * in any syntax). The examples are run by the tests, so every such snippet is tested code.
 * Usage: node scripts/snippets.js [--write] README.md docs/*.md
 */
const fs = require("node:fs");
const path = require("node:path");

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
    return `<!-- snippet: ${file}#${name} -->\n\`\`\`${lang}\n${region}\`\`\``;
  });
  // Code (not shell commands) in the docs must come from an example.
  const fences = text
    .split("\n")
    .flatMap((line, i, all) =>
      /^```(ts|typescript|js|yaml|yml)$/.test(line) && !/^<!-- snippet: /.test(all[i - 1] ?? "")
        ? [`${doc}:${i + 1}`]
        : [],
    );
  for (const where of fences)
    problems.push(`${where}: a code block without a <!-- snippet: file#name --> source`);
  return { problems, text: updated };
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

module.exports = { regions, syncDoc };
