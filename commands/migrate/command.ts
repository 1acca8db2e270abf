/**
 * `pulumi-edge migrate-to-packaged [--stack NAME] [--cwd DIR] [--yes]`: moves a stack of
 * pulumi-edge's dynamic resources to the packaged provider, in place, writing nothing to the edge
 * service. First switch the program (import from "pulumi-edge/packaged" and declare the plugin in
 * Pulumi.yaml); then this: checks that the program now declares the same resources as packaged
 * ones, backs the state up, forgets the dynamic resources and imports the same objects. Without
 * --yes it only prints the plan. Uses the `pulumi` on PATH.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseCommandLine, withoutColours } from "../../sdk/command-line";
import { errorField } from "../../sdk/contract";
import { VERSION } from "../../sdk/version";
import { pulumiEnv } from "../drift/run";
import { type ExportedResource, type ImportEntry, migrationPlan } from "./plan";

export const MIGRATE_USAGE = `usage: pulumi-edge migrate-to-packaged [--stack NAME] [--cwd DIR] [--yes]
         Moves a stack of pulumi-edge's dynamic resources to the packaged provider in place:
         forgets them (no delete) and imports the same objects as packaged resources. First
         switch the program (import from "pulumi-edge/packaged", the plugin in Pulumi.yaml).
         --stack NAME  the stack (default: the project's selected stack)
         --cwd DIR     the Pulumi project's directory (default: .)
         --yes         do it; without, print the plan only
         The stack is found as the pulumi CLI (on PATH) finds it in DIR: PULUMI_BACKEND_URL, else
         Pulumi.yaml's backend.url, else \`pulumi login\`. A passphrase stack's passphrase comes
         from PULUMI_CONFIG_PASSPHRASE(_FILE); with neither set, the empty passphrase is tried
         (what the stacks of pulumi-edge's own scripts, \`npm run up\`, use).`;

/** What a failed pulumi command printed that says what to do next. */
function nextStep(output: string): string | undefined {
  // TypeScript's TS2307 when the program is type-checked, Node's MODULE_NOT_FOUND when not.
  if (/Cannot find module '(pulumi-edge\/packaged|[^']*pulumi-edge\/dist\/packaged\/[^']*)'/.test(output))
    return (
      "pulumi-edge/packaged (the generated Node.js SDK) is not built in the pulumi-edge this program loads: " +
      "the npm package ships it; in a checkout of pulumi-edge run `npm run sdks` (it needs Go), then run this again"
    );
  if (/PULUMI_ACCESS_TOKEN must be set|not logged in/.test(output))
    return (
      "pulumi looked for the stack on Pulumi Cloud: run this where `pulumi stack ls` lists the stack " +
      "(PULUMI_BACKEND_URL, a backend.url in Pulumi.yaml, or `pulumi login <backend>`)"
    );
  if (/passphrase/.test(output))
    return "set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to the stack's passphrase";
  return undefined;
}

/** The part of a failed command's output that explains it: pulumi's diagnostics, else the end. */
function cause(stdout: string, stderr: string): string {
  const diagnostics = stdout.indexOf("Diagnostics:");
  const lines = (diagnostics >= 0 ? stdout.slice(diagnostics) : stdout).trimEnd().split("\n");
  return withoutColours([...lines.slice(-60), stderr.trimEnd()].filter((l) => l.trim()).join("\n"));
}

function pulumi(cwd: string, stack: string | undefined, args: string[]): string {
  const argv = [...args, ...(stack ? ["--stack", stack] : []), "--non-interactive", "--color", "never"];
  const env = pulumiEnv();
  const run = spawnSync("pulumi", argv, { cwd, env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (run.error) {
    throw new Error(
      errorField(run.error, "code") === "ENOENT"
        ? "no `pulumi` on PATH: install the Pulumi CLI (or run this through npx in a project that has the `pulumi` npm package)"
        : `pulumi ${args.join(" ")}: ${run.error.message}`,
    );
  }
  if (run.status !== 0) {
    const output = cause(run.stdout, run.stderr);
    const next = nextStep(output);
    throw new Error(
      `pulumi ${argv.join(" ")} failed (exit ${run.status ?? run.signal}) in ${cwd}:\n${output}` +
        (next ? `\nNext: ${next}.` : ""),
    );
  }
  return run.stdout;
}

/** Runs `pulumi-edge migrate-to-packaged` with its arguments (after the command's name); its exit code. */
export async function runMigrate(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({
    args: argv,
    allowPositionals: false,
    options: {
      stack: { type: "string" },
      cwd: { type: "string", default: "." },
      yes: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(MIGRATE_USAGE);
    return 0;
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
