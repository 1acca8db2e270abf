/**
 * Each fact is written once: no paragraph of prose is copied between the repository's documents
 * (or within one), so a change to a fact cannot leave a stale copy behind. A paragraph here is a
 * block between blank lines, a list item or a table row, compared with its whitespace
 * normalised, when it is at least MIN characters long (shorter lines, such as a link to where a
 * fact lives, may well repeat). Code blocks copied from the examples (`<!-- snippet: … -->`) are
 * exempt: they are checked copies by design (scripts/snippets.js). docs/api.md is generated from
 * the service's OpenAPI document and is not prose anyone writes.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");
const MIN = 200;

const DOCS = [
  ...["README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "RELIABILITY.md", "CHANGELOG.md"],
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md") && f !== "api.md")
    .map((f) => `docs/${f}`),
].sort();

interface Paragraph {
  text: string;
  where: string;
}

/** A document's paragraphs of at least MIN characters, each with the line it starts on. */
export function paragraphs(doc: string, text: string): Paragraph[] {
  const out: Paragraph[] = [];
  let current: string[] = [];
  let start = 0;
  const flush = () => {
    const normalised = current
      .join(" ")
      .replace(/\s+/g, " ")
      .trim()
      .replace(/^([-*+]|\d+\.) /, "");
    if (normalised.length >= MIN) out.push({ text: normalised, where: `${doc}:${start}` });
    current = [];
  };
  let fence: "snippet" | "code" | undefined;
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      if (fence) {
        if (fence === "code") current.push(line);
        fence = undefined;
        if (current.length) flush();
        return;
      }
      flush();
      fence = /^<!-- snippet: /.test(lines[i - 1] ?? "") ? "snippet" : "code";
      start = i + 1;
      current.push(line);
      if (fence === "snippet") current = [];
      return;
    }
    if (fence === "snippet") return;
    if (fence === "code") {
      current.push(line);
      return;
    }
    // A new unit: after a blank line, at a list item, at a table row, at a heading.
    if (!line.trim() || /^\s*([-*+]|\d+\.)\s/.test(line) || /^\s*\|/.test(line) || /^#/.test(line)) {
      flush();
    }
    if (!line.trim()) return;
    if (!current.length) start = i + 1;
    current.push(line);
  });
  flush();
  return out;
}

/** Every paragraph that appears twice, as "first place and second place: the paragraph's start". */
export function duplicates(docs: { doc: string; text: string }[]): string[] {
  const seen = new Map<string, string>();
  const found: string[] = [];
  for (const { doc, text } of docs)
    for (const p of paragraphs(doc, text)) {
      const first = seen.get(p.text);
      if (first) found.push(`${first} and ${p.where}: "${p.text.slice(0, 80)}…"`);
      else seen.set(p.text, p.where);
    }
  return found;
}

test("no paragraph of prose is written twice in the documents (say it once, link to it)", () => {
  const docs = DOCS.map((doc) => ({ doc, text: readFileSync(join(ROOT, doc), "utf8") }));
  expect(duplicates(docs)).toEqual([]);
});

test("a copied paragraph, list item or table row is caught and both places are named", () => {
  const long = "The service keeps every string a client sends exactly, ".repeat(5);
  const a = `# A\n\nIntro.\n\n${long}\nwrapped\n\n- ${long}item\n\n| ${long} | row |\n`;
  const b = `# B\n\n${long}  wrapped\n\nText.\n\n* ${long}item\n| ${long} | row |\n`;
  expect(
    duplicates([
      { doc: "a.md", text: a },
      { doc: "b.md", text: b },
    ]),
  ).toEqual([
    expect.stringMatching(/^a\.md:5 and b\.md:3: "The service keeps/),
    expect.stringMatching(/^a\.md:8 and b\.md:7: "The service keeps/),
    expect.stringMatching(/^a\.md:10 and b\.md:8: "\| The service keeps/),
  ]);
});

test("snippet-copied code blocks are exempt; other copied code blocks are not", () => {
  const code = "pulumi config set edge:baseUrl https://edge.internal.example.com # ".repeat(4);
  const snippet = `<!-- snippet: examples/x/index.ts#x -->\n\`\`\`ts\n${code}\n\`\`\`\n`;
  expect(
    duplicates([
      { doc: "a.md", text: snippet },
      { doc: "b.md", text: snippet },
    ]),
  ).toEqual([]);
  const shell = `\`\`\`sh\n${code}\n\`\`\`\n`;
  expect(
    duplicates([
      { doc: "a.md", text: shell },
      { doc: "b.md", text: shell },
    ]),
  ).toHaveLength(1);
});
