/** Every code block in the docs is a copy of a region of an example that the tests run. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const { syncDoc, regions, missingImports } =
  require("../../scripts/snippets.js") as typeof import("../../scripts/snippets.js");
const { fieldTable } =
  require("../../scripts/field-tables.js") as typeof import("../../scripts/field-tables.js");

const ROOT = join(__dirname, "..", "..");
const DOCS = [
  ...readdirSync(ROOT).filter((f) => f.endsWith(".md")),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

test.each(DOCS)("%s: every code block comes from an example, unchanged, with its imports", (doc) => {
  expect(syncDoc(doc).problems).toEqual([]);
});

test("a snippet that shows imports but leaves one out is caught (the packaged one without `pulumi`)", () => {
  const file = "examples/packaged-typescript/index.ts";
  const source = readFileSync(join(ROOT, file), "utf8");
  const region = regions(file).get("packaged-route")!;
  expect(region).toMatch(/^import \* as pulumi from "@pulumi\/pulumi";$/m);
  expect(missingImports(source, region)).toEqual([]);
  expect(missingImports(source, region.replace(/^import \* as pulumi .*\n/m, ""))).toEqual(["pulumi"]);
  // Python too; and a fragment that shows no import at all is a fragment.
  const py = readFileSync(join(ROOT, "examples/python/__main__.py"), "utf8");
  const pyRegion = regions("examples/python/__main__.py").get("python-program")!;
  expect(missingImports(py, pyRegion)).toEqual([]);
  expect(missingImports(py, pyRegion.replace(/^import pulumi\n/m, ""))).toEqual(["pulumi"]);
  expect(missingImports(source, region.replace(/^import .*\n/gm, ""))).toEqual([]);
});

test("the checker notices an edited snippet and a code block without a source", () => {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const file = path.join(__dirname, "..", "..", ".test-work", "snippet-check.md");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const region = regions("examples/tls-ip-restriction/index.ts").get("tls-restriction")!;
  fs.writeFileSync(
    file,
    "<!-- snippet: examples/tls-ip-restriction/index.ts#tls-restriction -->\n```ts\n" +
      region.replace("postgres", "mysql") +
      "```\n\n```ts\nconst loose = 1;\n```\n",
  );
  const { problems } = syncDoc(".test-work/snippet-check.md");
  expect(problems).toEqual([
    ".test-work/snippet-check.md: snippet examples/tls-ip-restriction/index.ts#tls-restriction differs from the example (run: npm run docs)",
    expect.stringMatching(
      /^\.test-work\/snippet-check\.md:\d+: a code block without a <!-- snippet: file#name --> source$/,
    ),
  ]);
});

test("the guide's input tables are the schema's, and a stale one is caught", () => {
  const fs = require("node:fs") as typeof import("node:fs");
  const path = require("node:path") as typeof import("node:path");
  const guide = fs.readFileSync(path.join(ROOT, "docs", "guide.md"), "utf8");
  for (const token of ["edge:index:HttpsEdge", "edge:index:HttpsEdgeRoute"])
    expect(guide).toContain(`<!-- fields: ${token} -->\n${fieldTable(token)}<!-- /fields -->`);
  // Every route input of the schema has its row: a module added to the contract shows up.
  const schema = JSON.parse(fs.readFileSync(path.join(ROOT, "provider/plugin/schema.json"), "utf8"));
  for (const input of Object.keys(schema.resources["edge:index:HttpsEdgeRoute"].inputProperties))
    expect(fieldTable("edge:index:HttpsEdgeRoute")).toContain(`| \`${input}\` |`);

  const file = path.join(ROOT, ".test-work", "field-table-check.md");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const stale = fieldTable("edge:index:HttpsEdgeRoute").replace(/\{ enabled\? \}/, "{ enabled?, gone? }");
  fs.writeFileSync(file, `<!-- fields: edge:index:HttpsEdgeRoute -->\n${stale}<!-- /fields -->\n`);
  expect(syncDoc(".test-work/field-table-check.md").problems).toEqual([
    ".test-work/field-table-check.md: the field table of edge:index:HttpsEdgeRoute differs from the schema (run: npm run docs)",
  ]);
});
