/**
 * Pulumi's own files, read by the CLI's rules (provider/pulumi-files): every project file the CLI
 * accepts, in its order, and a stack's settings file with the project file's extension.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isProjectDir, projectFileIn, readProject, readStackSettings } from "../../provider/pulumi-files";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-pulumi-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test.each([
  [
    "Pulumi.json",
    JSON.stringify({ name: "shop", runtime: "nodejs" }),
    "Pulumi.dev.json",
    '{"config":{"a":"1"}}',
  ],
  ["Pulumi.yaml", "name: shop\nruntime: nodejs\n", "Pulumi.dev.yaml", "config:\n  a: '1'\n"],
  ["Pulumi.yml", "name: shop\nruntime: nodejs\n", "Pulumi.dev.yml", "config:\n  a: '1'\n"],
])("a project in %s, its stack settings in %s", (projectFile, projectText, settingsFile, settingsText) => {
  expect(isProjectDir(dir)).toBe(false);
  writeFileSync(join(dir, projectFile), projectText);
  expect(isProjectDir(dir)).toBe(true);
  expect(readProject(dir)).toEqual({ name: "shop", runtime: "nodejs" });
  // A settings file of another extension is not the stack's.
  writeFileSync(join(dir, settingsFile === "Pulumi.dev.json" ? "Pulumi.dev.yaml" : "Pulumi.dev.json"), "{}");
  expect(readStackSettings(dir, "dev")).toBe("missing");
  writeFileSync(join(dir, settingsFile), settingsText);
  expect(readStackSettings(dir, "acme/shop/dev")).toEqual({ config: { a: "1" } });
});

test("the CLI takes Pulumi.json before Pulumi.yaml, and Pulumi.yaml before Pulumi.yml", () => {
  writeFileSync(join(dir, "Pulumi.yml"), "name: yml\n");
  writeFileSync(join(dir, "Pulumi.yaml"), "name: yaml\n");
  expect(projectFileIn(dir)?.path).toBe(join(dir, "Pulumi.yaml"));
  writeFileSync(join(dir, "Pulumi.json"), '{"name":"json"}');
  expect(readProject(dir)).toEqual({ name: "json" });
});

test("stackConfigDir is honoured, and a broken file is unreadable, not missing", () => {
  mkdirSync(join(dir, "stacks"));
  writeFileSync(join(dir, "Pulumi.json"), JSON.stringify({ name: "shop", stackConfigDir: "stacks" }));
  writeFileSync(join(dir, "stacks", "Pulumi.dev.json"), '{"config":{}}');
  expect(readStackSettings(dir, "dev")).toEqual({ config: {} });
  writeFileSync(join(dir, "stacks", "Pulumi.dev.json"), "{not json");
  expect(readStackSettings(dir, "dev")).toBe("unreadable");
  writeFileSync(join(dir, "Pulumi.json"), "[1]");
  expect(readProject(dir)).toBe("unreadable");
  expect(isProjectDir(dir)).toBe(true);
});
