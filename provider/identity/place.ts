/**
 * Where a stack's state lives: the backend that holds it, as the Pulumi CLI resolves it, and on a
 * backend shared by organizations (Pulumi Cloud, a self-hosted service) the stack's organization
 * where the face knows it. The anchor (./anchor) is recorded with its place, so that a state copied
 * or moved elsewhere (`pulumi stack export` / `stack import` into another backend) is told apart
 * from the stack it came from: a copy is a new stack instance and must not take the objects its
 * original creates from then on.
 *
 * The place names no machine: a CI retry in a new container (a new host name, the same persisted
 * backend) is the same stack. Two machines with one backend path are one place; that can only
 * matter for two copies of one state (each stack has its own random anchor), and the README says so.
 *
 * Resolved as the CLI resolves it (pulumi 3.259.0), from what the engine hands a provider:
 * - the project: the project file (`Pulumi.json`, `.yaml` or `.yml`: ../pulumi-files) of project `PULUMI_PROJECT` (the engine sets it for every provider),
 *   in the CLI's working directory or the nearest directory above it (the CLI's own lookup: it is
 *   where an inline Automation API program's workspace writes `Pulumi.yaml`), else in the
 *   provider's working directory (the program's: the project's `main`) or above;
 * - the backend URL (`pkg/workspace.GetCurrentCloudURL`): `PULUMI_BACKEND_URL`, else the project's
 *   `backend.url`, else `current` of the login file `credentials.json` in `PULUMI_CREDENTIALS_PATH`,
 *   else in `PULUMI_HOME`, else in `~/.pulumi`; else Pulumi Cloud. A login file encrypted by the
 *   credential store (`PULUMI_CREDENTIAL_STORE=auto|os`) cannot be read: the place is unknown;
 * - a file backend's path (`pkg/backend/diy.massageBlobPath`): `~` is the account's home directory
 *   (`user.Current()`, not `$HOME`), a relative path is relative to the CLI's working directory
 *   (found from the process tree where the system shows it, else the project's directory),
 *   options dropped; then symlinks resolved and trailing slashes dropped, so that every spelling of
 *   one directory is one place.
 */
import { readFileSync, readlinkSync, realpathSync } from "node:fs";
import { userInfo } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { projectFileIn } from "../pulumi-files";

/** Why the place cannot be told, for the one warning that says so. */
export class UnknownPlace {
  constructor(readonly reason: string) {}
}

/** A place as recorded beside an anchor: one spelling per backend (and organization). */
export type Place = string;

/** What a provider process sees around it: each part replaceable in tests. */
export interface Surroundings {
  /** The provider's working directory: the program's (`main`). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The CLI's working directory, where the process tree shows it. */
  cliCwd?: string;
  /** The account's home directory (`user.Current()`). */
  home: string;
}

export function surroundings(): Surroundings {
  return { cwd: process.cwd(), env: process.env, cliCwd: cliWorkingDirectory(), home: accountHome() };
}

const DEFAULT_BACKEND = "https://api.pulumi.com";

/**
 * The place of the stack a provider serves. `organization`: the stack's, where the face knows it
 * (a program's `pulumi.getOrganization()`); it names the place on a backend other than a file one.
 */
export function placeOf(s: Surroundings, organization?: string): Place | UnknownPlace {
  const chosen = nonEmpty(s.env.PULUMI_BACKEND_URL);
  // The project's backend.url counts only where the environment names none.
  const project = chosen === undefined ? findProject([s.cliCwd, s.cwd], s.env.PULUMI_PROJECT) : undefined;
  if (project instanceof UnknownPlace) return project;
  const url = chosen ?? backendUrl(project?.config ?? {}, s);
  if (url instanceof UnknownPlace) return url;
  const file = /^file:\/\/([^?]*)/.exec(url);
  if (file) return `file://${filePath(file[1] ?? "", s.cliCwd ?? project?.root ?? s.cwd, s.home)}`;
  const base = url.replace(/\/+$/, "");
  return organization && organization !== "organization" ? `${base} (organization ${organization})` : base;
}

interface Project {
  root: string;
  config: Record<string, unknown>;
}

/**
 * The project file of project `name` (when given) in the first of `from` that has one in it or
 * in a directory above it (a program directory may hold another project's file: the walk goes on
 * past it).
 */
export function findProject(
  from: readonly (string | undefined)[],
  name: string | undefined,
): Project | UnknownPlace {
  const starts = from.filter((d): d is string => d !== undefined);
  for (const start of starts) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const file = projectFileIn(dir);
      // A broken project file is the engine's to report: read as holding nothing.
      const config = file === undefined ? undefined : file.config === "unreadable" ? {} : file.config;
      if (config !== undefined && (!name || config.name === name)) return { root: dir, config };
      if (dirname(dir) === dir) break;
    }
  }
  return new UnknownPlace(
    `no project file (Pulumi.json, Pulumi.yaml or Pulumi.yml)${name ? ` of project "${name}"` : ""} in ${starts.join(" or ")} or above`,
  );
}

/** The backend URL the CLI selects (pkg/workspace `GetCurrentCloudURL`), as written. */
export function backendUrl(
  project: Record<string, unknown>,
  s: Pick<Surroundings, "env" | "home">,
): string | UnknownPlace {
  const fromProject = isRecord(project.backend) ? project.backend.url : undefined;
  const chosen = nonEmpty(s.env.PULUMI_BACKEND_URL) ?? nonEmpty(fromProject);
  if (chosen !== undefined) return chosen;
  const login = storedLogin(s);
  if (login instanceof UnknownPlace) return login;
  return login ?? DEFAULT_BACKEND;
}

/** `current` of the CLI's login file (`pulumi login`), if any. */
function storedLogin(s: Pick<Surroundings, "env" | "home">): string | undefined | UnknownPlace {
  const folder =
    nonEmpty(s.env.PULUMI_CREDENTIALS_PATH) ?? nonEmpty(s.env.PULUMI_HOME) ?? join(s.home, ".pulumi");
  const file = join(folder, "credentials.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined; // never logged in: the CLI asks for Pulumi Cloud
  }
  let creds: unknown;
  try {
    creds = JSON.parse(text);
  } catch {
    return new UnknownPlace(`the CLI's login file ${file} is not JSON`);
  }
  if (isRecord(creds) && "$pulumiSecureStore" in creds) {
    return new UnknownPlace(
      `the CLI's login file ${file} is encrypted by the credential store (PULUMI_CREDENTIAL_STORE)`,
    );
  }
  return isRecord(creds) ? nonEmpty(creds.current) : undefined;
}

/**
 * A file backend's directory, one spelling per directory; `base` is the directory a relative
 * path is relative to (the CLI's working directory).
 */
export function filePath(written: string, base: string, home: string): string {
  let path = written;
  if (path === "~" || path.startsWith("~/")) path = join(home, path.slice(1));
  if (!isAbsolute(path)) path = resolve(base, path);
  return realPath(resolve(path));
}

/** The path with every symlink resolved, as far as it exists (a backend may not exist yet). */
function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPath(parent), basename(path));
  }
}

/**
 * The working directory of the `pulumi` process that started this one: the nearest ancestor
 * named `pulumi` in /proc (Linux). The packaged plugin is its child; the dynamic provider host is
 * its grandchild (a shell script starts node).
 */
function cliWorkingDirectory(): string | undefined {
  let pid = process.ppid;
  for (let depth = 0; depth < 4 && pid > 1; depth++) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "pulumi")
        return readlinkSync(`/proc/${pid}/cwd`);
      pid = Number(/^\d+ \(.*\) \S (\d+)/s.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1] ?? 0);
    } catch {
      return undefined; // no /proc (macOS, Windows) or not ours to read
    }
  }
  return undefined;
}

export function accountHome(): string {
  try {
    return userInfo().homedir;
  } catch {
    return process.env.HOME ?? "/";
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";
const nonEmpty = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
