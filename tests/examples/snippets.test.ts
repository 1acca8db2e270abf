/** Every code block in the docs is a copy of a region of an example that the tests run. */
const { syncDoc, regions } =
  require("../../scripts/snippets.js") as typeof import("../../scripts/snippets.js");

test.each(["README.md", "docs/guide.md"])("%s: every code block comes from an example, unchanged", (doc) => {
  expect(syncDoc(doc).problems).toEqual([]);
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
