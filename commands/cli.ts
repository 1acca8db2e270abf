#!/usr/bin/env node
/**
 * The `pulumi-edge` command: operators' tools built on the provider. Each command is a module
 * under commands/<command>/ exporting its usage and its run; COMMANDS below is the one list of
 * them, from which the usage (`--help`) and the dispatch follow. This file only dispatches; each
 * command parses and answers its own arguments.
 */
import { USAGE_EXIT, UsageError, usageExit } from "../sdk/command-line";
import { errorMessage } from "../sdk/contract";
import { VERSION } from "../sdk/version";
import { DRIFT_USAGE, runDrift } from "./drift/cli";
import { EXPORT_USAGE, runExport } from "./export/cli";
import { MIGRATE_USAGE, runMigrate } from "./migrate/command";

/** The commands by name, in the order `--help` lists them: each one's usage and what runs it. */
const COMMANDS: Record<string, { usage: string; run: (argv: string[]) => Promise<number> }> = {
  "migrate-to-packaged": { usage: MIGRATE_USAGE, run: runMigrate },
  export: { usage: EXPORT_USAGE, run: runExport },
  drift: { usage: DRIFT_USAGE, run: runDrift },
};

const USAGE = Object.values(COMMANDS)
  .map(({ usage }, i) => (i === 0 ? usage : usage.replace(/^usage: /, "       ")))
  .concat("       pulumi-edge --help | --version")
  .join("\n");

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
    return await command.run(argv);
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
