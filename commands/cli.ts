#!/usr/bin/env node
/**
 * The `pulumi-edge` command: `export` (commands/export: adopt a fleet made outside Pulumi),
 * `drift` (commands/drift: the drift check of many stacks) and `migrate-to-packaged`
 * (commands/migrate: a stack from the dynamic face to the packaged one). This file only
 * dispatches; each command parses and answers its own arguments.
 */
import { USAGE_EXIT, UsageError, usageExit } from "../sdk/command-line";
import { errorMessage } from "../sdk/contract";
import { VERSION } from "../sdk/version";
import { DRIFT_USAGE, runDrift } from "./drift/cli";
import { EXPORT_USAGE, runExport } from "./export/cli";
import { MIGRATE_USAGE, runMigrate } from "./migrate/command";

const USAGE = [MIGRATE_USAGE, EXPORT_USAGE, DRIFT_USAGE]
  .map((u, i) => (i === 0 ? u : u.replace(/^usage: /, "       ")))
  .concat("       pulumi-edge --help | --version")
  .join("\n");

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  export: runExport,
  drift: runDrift,
  "migrate-to-packaged": runMigrate,
};

async function main([name, ...argv]: string[]): Promise<number> {
  if (name === "--help" || name === "-h") {
    console.log(USAGE);
    return 0;
  }
  if (name === "--version") {
    console.log(VERSION);
    return 0;
  }
  if (name === undefined) {
    console.error(USAGE); // what the command takes, where a script's log shows it
    return USAGE_EXIT;
  }
  const command = COMMANDS[name];
  if (!command) {
    const what = name.startsWith("-") ? `Unknown option '${name}'` : `no command "${name}"`;
    return usageExit(
      "pulumi-edge",
      new UsageError(`${what}: give one of ${Object.keys(COMMANDS).join(", ")}`),
    );
  }
  try {
    return await command(argv);
  } catch (e) {
    return usageExit(`pulumi-edge ${name}`, e);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`pulumi-edge: ${errorMessage(e)}`);
    process.exit(1);
  },
);
