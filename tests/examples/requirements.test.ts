/**
 * The requirements the README and the guide state are the ones the pinned tools declare: Node.js
 * from `@pulumi/pulumi`'s `engines` (and pulumi-edge's, which must not promise less), Go from the
 * `go` line of the Go modules. And the quick start does not call a registry install offline.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const README = read("README.md");
const GUIDE = read("docs/guide.md");

/** ">=22" or ">=22.0.0" → "22". */
function floor(range: string): string {
  const m = /^>=\s*(\d+)(?:\.0)*(?:\.(\d+))?$/.exec(range.trim());
  if (!m) throw new Error(`an engines range this test does not read: ${range}`);
  return m[1]!;
}

test("Node.js: pulumi-edge declares what @pulumi/pulumi declares, and the docs say it", () => {
  const pulumiNode = (
    JSON.parse(read("node_modules/@pulumi/pulumi/package.json")) as { engines: { node: string } }
  ).engines.node;
  const ours = (JSON.parse(read("package.json")) as { engines: { node: string } }).engines.node;
  expect(ours).toBe(pulumiNode);
  const major = floor(pulumiNode);
  expect(README).toContain(`Node.js ≥ ${major}`);
  expect(GUIDE).toMatch(new RegExp(`^\\| Node\\.js \\| ≥ ${major}\\b`, "m"));
});

test("Go: the docs state the go line of the Go modules", () => {
  const lines = ["examples/go/go.mod", "scripts/sdkgen/go.mod"].map((f) => /^go (\S+)$/m.exec(read(f))?.[1]);
  expect(new Set(lines).size).toBe(1);
  expect(README).toContain(`Go ≥ ${lines[0]}`);
  expect(GUIDE).toMatch(new RegExp(`^\\| Go \\| ≥ ${lines[0]!.replace(/\./g, "\\.")} `, "m"));
});

test("the quick start says what needs the network, and does not call it offline", () => {
  // (Link targets aside: the engine section is about building the engine without its archive.)
  const quickStart = README.slice(0, README.indexOf("\n## ")).replace(/\]\([^)]*\)/g, "]");
  expect(quickStart).toMatch(/`npm ci` installs the dependencies from the npm registry/);
  expect(quickStart).not.toMatch(/offline/i);
});
