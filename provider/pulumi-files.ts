/**
 * The files the `pulumi` CLI reads beside a program: `Pulumi.yaml` (the project) and
 * `Pulumi.<stack>.yaml` (a stack's settings), each also spelled `.yml` (the CLI tries `.yaml`
 * first). Read here, once, for the provider's identity and the drift check.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

/** What a Pulumi file holds: its mapping, or why there is none. */
export type PulumiFile = Record<string, unknown> | "missing" | "unreadable";

/** `<dir>/<base>.yaml`, else `<dir>/<base>.yml` ("unreadable": not YAML, or not a mapping). */
export function readPulumiFile(dir: string, base: string): PulumiFile {
  for (const ext of [".yaml", ".yml"]) {
    const file = join(dir, base + ext);
    if (!existsSync(file)) continue;
    try {
      const value: unknown = parse(readFileSync(file, "utf8"));
      return typeof value === "object" && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : "unreadable";
    } catch {
      return "unreadable";
    }
  }
  return "missing";
}

/** The directory of the project's stack settings files (`stackConfigDir`, else the project's). */
export function stackConfigDir(projectDir: string, project: Record<string, unknown>): string {
  return typeof project.stackConfigDir === "string" ? join(projectDir, project.stackConfigDir) : projectDir;
}

/** The settings file's base name of a stack given short or fully qualified (`org/project/stack`). */
export const stackFileBase = (stack: string): string => `Pulumi.${stack.split("/").pop()}`;
