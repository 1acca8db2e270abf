#!/usr/bin/env node
/**
 * pulumi-edge migrate-to-packaged [--stack NAME] [--cwd DIR] [--yes]
 *
 * Moves a stack of pulumi-edge's dynamic resources to the packaged provider, in place, writing
 * nothing to the edge service. First switch the program (import from "pulumi-edge/packaged" and
 * declare the plugin in Pulumi.yaml); then this: checks that the program now declares the same
 * resources as packaged ones, backs the state up, forgets the dynamic resources and imports the
 * same objects. Without --yes it only prints the plan. Uses the `pulumi` on PATH.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type ExportedResource, type ImportEntry, migrationPlan } from "./plan";

const VERSION = (require("pulumi-edge/package.json") as { version: string }).version;

const USAGE = `usage: pulumi-edge migrate-to-packaged [--stack NAME] [--cwd DIR] [--yes]
         Moves a stack of pulumi-edge's dynamic resources to the packaged provider in place:
         forgets them (no delete) and imports the same objects as packaged resources. First
         switch the program (import from "pulumi-edge/packaged", the plugin in Pulumi.yaml).
         --stack NAME  the stack (default: the project's selected stack)
         --cwd DIR     the Pulumi project's directory (default: .)
         --yes         do it; without, print the plan only
       pulumi-edge --help | --version`;

function pulumi(cwd: string, stack: string | undefined, args: string[]): string {
  return execFileSync(
    "pulumi",
    [...args, ...(stack ? ["--stack", stack] : []), "--non-interactive", "--color", "never"],
    {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 256 * 1024 * 1024,
    },
  );
}

function main(argv: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        stack: { type: "string" },
        cwd: { type: "string", default: "." },
        yes: { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
    });
  } catch (e) {
    console.error(`pulumi-edge: ${(e as Error).message}; run pulumi-edge --help`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.version) {
    console.log(VERSION);
    return 0;
  }
  if (positionals[0] !== "migrate-to-packaged" || positionals.length !== 1) {
    console.error(USAGE);
    return 2;
  }
  const cwd = resolve(values.cwd);
  const stack = values.stack;
  const work = mkdtempSync(join(tmpdir(), "pulumi-edge-migrate-"));

  const exported = pulumi(cwd, stack, ["stack", "export"]);
  const backup = join(work, "state-before.json");
  writeFileSync(backup, exported);
  const { deployment } = JSON.parse(exported) as { deployment: { resources?: ExportedResource[] } };
  const plan = migrationPlan(deployment.resources ?? [], VERSION);
  if (plan.imports.length === 0) {
    console.log("no dynamic pulumi-edge resources in this stack: nothing to do");
    return 0;
  }

  // The program must already declare them as packaged resources: the preview lists what it would create.
  const wanted = join(work, "import.json");
  pulumi(cwd, stack, ["preview", "--import-file", wanted]);
  const declared =
    (JSON.parse(readFileSync(wanted, "utf8")) as { resources?: ImportEntry[] }).resources ?? [];
  const key = (e: { type: string; name: string }) => `${e.type} "${e.name}"`;
  const declaredKeys = new Set(declared.map(key));
  // Sorted: the state lists resources in the order the engine happened to create them.
  const missing = plan.imports
    .filter((e) => !declaredKeys.has(key(e)))
    .sort((a, b) => key(a).localeCompare(key(b)));
  if (missing.length > 0) {
    console.error(
      `the program does not declare ${missing.map(key).join(", ")} as packaged resources yet: ` +
        `import them from "pulumi-edge/packaged" (and declare the plugin in Pulumi.yaml), then run this again`,
    );
    return 1;
  }

  console.log(`forget (not delete) ${plan.forget.length} dynamic resources, then import:`);
  for (const e of plan.imports) console.log(`  ${key(e)} ${e.id}`);
  if (!values.yes) {
    console.log("dry run: add --yes to do it");
    return 0;
  }
  const file = join(work, "import-ids.json");
  writeFileSync(file, JSON.stringify({ resources: plan.imports }, null, 2));
  console.log(`state backed up to ${backup} (restore: pulumi stack import --file ${backup})`);
  for (const urn of plan.forget) pulumi(cwd, stack, ["state", "delete", urn, "--yes"]);
  pulumi(cwd, stack, ["import", "--file", file, "--yes", "--protect=false", "--generate-code=false"]);
  console.log("done: `pulumi preview` should now show no changes");
  return 0;
}

try {
  process.exit(main(process.argv.slice(2)));
} catch (e) {
  console.error(`pulumi-edge: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
