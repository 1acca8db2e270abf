/**
 * What the project's commands (`edge-service`, `pulumi-edge` and its subcommands) share about
 * their command lines: one kind of usage error, parsed one way, told one way.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** What parseArgs answers for `T`. */
export type ParsedCommandLine<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

import { errorField, errorMessage, UsageError } from "./contract/errors";

export { UsageError };

/** The exit code of a usage error: a CI job must never read it as drift (1) or success. */
export const USAGE_EXIT = 2;

/**
 * A command line parsed with `config` (node:util's parseArgs, strict, `args` the command's
 * arguments): what it refuses (an unknown option, a missing value) is a UsageError with
 * parseArgs' own words.
 */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ParsedCommandLine<T> {
  try {
    return parseArgs(config);
  } catch (e) {
    const code = errorField(e, "code");
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")) throw new UsageError(errorMessage(e));
    throw e;
  }
}

/**
 * Tells a UsageError the one way (`<command>: <message>; run <command> --help`) and answers its
 * exit code; anything else is not a usage error and is thrown on.
 */
export function usageExit(command: string, e: unknown): number {
  if (!(e instanceof UsageError)) throw e;
  console.error(`${command}: ${e.message}; run ${command} --help`);
  return USAGE_EXIT;
}

// The colours a program's output carries even with --color never (its own stack traces).
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** `text` (another command's output) without its terminal colour codes. */
export const withoutColours = (text: string): string => text.replace(ANSI_COLOUR, "");
