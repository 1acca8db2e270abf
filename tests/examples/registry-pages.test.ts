/**
 * The Pulumi registry's pages of the provider, laid out as the registry reads them: front matter
 * (`title`, `meta_desc`, `layout: package`), and on docs/_index.md one example per language in a
 * `{{< chooser >}}` whose every `{{% choosable %}}` block is a snippet of an example that a test
 * deploys (the copy itself is checked by snippets.test.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

/** The examples a test deploys, each with the test that does. */
const DEPLOYED: Record<string, string> = {
  "examples/packaged-typescript": "tests/examples/examples.test.ts",
  "examples/python": "tests/packaged/languages.test.ts",
  "examples/go": "tests/examples/go.test.ts",
  "examples/yaml": "tests/examples/yaml.test.ts",
};

test.each(["docs/_index.md", "docs/installation-configuration.md"])(
  "%s has the registry's front matter",
  (doc) => {
    const front = /^---\n([\s\S]*?)\n---\n/.exec(read(doc))?.[1] ?? "";
    expect(front).toMatch(/^title: \S/m);
    expect(front).toMatch(/^meta_desc: \S/m);
    expect(front).toMatch(/^layout: package$/m);
  },
);

test("docs/_index.md: an example in every language it offers, each a snippet of a deployed example", () => {
  const text = read("docs/_index.md");
  const offered = /\{\{< chooser language "([^"]+)" >\}\}/.exec(text)?.[1]?.split(",") ?? [];
  expect(offered).toEqual(["typescript", "python", "go", "yaml"]);
  const blocks = [...text.matchAll(/\{\{% choosable language (\w+) %\}\}([\s\S]*?)\{\{% \/choosable %\}\}/g)];
  expect(blocks.map((b) => b[1])).toEqual(offered);
  for (const [, language, body] of blocks) {
    const sources = [...body!.matchAll(/<!-- snippet: (examples\/[\w-]+)\/[^#\s]+#[\w-]+ -->/g)].map(
      (m) => m[1]!,
    );
    expect({ language, sources: sources.length }).toEqual({ language, sources: 1 });
    const test = DEPLOYED[sources[0]!];
    expect({ language, deployedBy: test }).toEqual({ language, deployedBy: expect.any(String) });
    expect(read(test!)).toContain(sources[0]!.replace("examples/", ""));
  }
});

test("docs/installation-configuration.md lists every configuration key of the provider", () => {
  const text = read("docs/installation-configuration.md");
  const schema = JSON.parse(read("provider/plugin/schema.json")) as {
    config: { variables: Record<string, unknown> };
  };
  for (const key of Object.keys(schema.config.variables)) expect(text).toContain(`\`edge:${key}\``);
});
