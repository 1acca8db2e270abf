/**
 * The files the `pulumi` CLI reads beside a program, read here once for the provider's identity
 * and the drift check, by the CLI's own rules (pulumi 3.259.0, sdk/go/common/workspace/paths.go):
 * - the project file is `Pulumi` with one of the extensions `.json`, `.yaml`, `.yml`, tried in
 *   that order in each directory (`findProjectInDir` over `encoding.Exts`), so a directory with
 *   both `Pulumi.json` and `Pulumi.yaml` is the JSON project's;
 * - a stack's settings file is `Pulumi.<stack>` with the project file's own extension
 *   (`ProjectStackPath`), in `stackConfigDir` when the project names one.
 */
import { existsSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { parse } from "yaml";

/** The project file's extensions, in the order the CLI tries them (`encoding.Exts`). */
export const PULUMI_FILE_EXTENSIONS = [".json", ".yaml", ".yml"] as const;

/** What a Pulumi file holds: its mapping, or why there is none. */
export type PulumiFile = Record<string, unknown> | "missing" | "unreadable";

/** A project as the CLI finds it in a directory. */
export interface ProjectFile {
  /** The directory holding the file: the project's root. */
  dir: string;
  /** The file's path (`<dir>/Pulumi.json|yaml|yml`). */
  path: string;
  /** Its mapping; "unreadable" when it is neither JSON/YAML nor a mapping (the CLI says why). */
  config: Record<string, unknown> | "unreadable";
}

/** The project file the CLI would take in `dir` (not above it), if any. */
export function projectFileIn(dir: string): ProjectFile | undefined {
  for (const ext of PULUMI_FILE_EXTENSIONS) {
    const path = join(dir, `Pulumi${ext}`);
    if (!existsSync(path)) continue;
    const config = parseMapping(path);
    return { dir, path, config: config === "missing" ? "unreadable" : config };
  }
  return undefined;
}

/** Whether `dir` is a project's root for the CLI. */
export const isProjectDir = (dir: string): boolean => projectFileIn(dir) !== undefined;

/** The project's mapping in `dir` ("missing": no project file there). */
export function readProject(dir: string): PulumiFile {
  const found = projectFileIn(dir);
  return found === undefined ? "missing" : found.config;
}

/**
 * The settings file of `stack` (given short or fully qualified, `org/project/stack`) of the
 * project in `dir`: in the project's `stackConfigDir`, with the project file's extension.
 */
export function readStackSettings(dir: string, stack: string): PulumiFile {
  const project = projectFileIn(dir);
  if (project === undefined) return "missing";
  const folder = project.config === "unreadable" ? dir : stackConfigDir(dir, project.config);
  return parseMapping(join(folder, `${stackFileBase(stack)}${extname(project.path)}`));
}

/** The directory of the project's stack settings files (`stackConfigDir`, else the project's). */
export function stackConfigDir(projectDir: string, project: Record<string, unknown>): string {
  return typeof project.stackConfigDir === "string" ? join(projectDir, project.stackConfigDir) : projectDir;
}

/** The settings file's base name of a stack given short or fully qualified (`org/project/stack`). */
export const stackFileBase = (stack: string): string => `Pulumi.${stack.split("/").pop()}`;

/** A JSON (`.json`) or YAML file's mapping, as the CLI's marshaler for its extension reads it. */
function parseMapping(path: string): PulumiFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return "missing";
  }
  try {
    const value: unknown = path.endsWith(".json") ? JSON.parse(text) : parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : "unreadable";
  } catch {
    return "unreadable";
  }
}
