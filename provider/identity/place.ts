/**
 * The environment's guess at which stack instance a provider process serves: the backend that
 * holds the stack's state as the Pulumi CLI resolves it, and the stack's secret salt. It is only
 * a guess (two dev containers with equal backend paths look alike; a CI retry on a new host looks
 * different), so it is used only where the stack's own state holds no anchor yet (see ./index):
 * a stack's first update, the first update after an upgrade from 0.2.0, and a plugin version's
 * first update. Where it cannot be told at all, it is `undefined`, and nothing is ever taken
 * over on its strength.
 *
 * Resolved as the CLI resolves it (pulumi 3.259.0), from what the engine hands a provider:
 * - the project: `Pulumi.yaml` in the provider's working directory (the program's: the project's
 *   `main`) or the nearest directory above it, whose `name` must be `PULUMI_PROJECT` (the engine
 *   sets it for every provider). The handshake's `root_directory` is the plugin's own directory
 *   in 3.259.0, not the project's, so it cannot serve.
 * - the backend URL (`pkg/workspace.GetCurrentCloudURL`): `PULUMI_BACKEND_URL`, else the project's
 *   `backend.url`, else `current` of the login file `credentials.json` in `PULUMI_CREDENTIALS_PATH`,
 *   else in `PULUMI_HOME`, else in `~/.pulumi`; else Pulumi Cloud. A login file encrypted by the
 *   credential store (`PULUMI_CREDENTIAL_STORE=auto|os`) cannot be read: the backend is unknown.
 * - a file backend's path (`pkg/backend/diy.massageBlobPath`): `~` is the account's home directory
 *   (`user.Current()`, not `$HOME`), a relative path is relative to the CLI's working directory
 *   (found from the process tree where the system shows it, else the project's directory),
 *   options dropped; then symlinks resolved and trailing slashes dropped, so every spelling of one
 *   directory is one backend, and this machine's host name in front (the same path on two
 *   machines is two directories).
 * - the salt: `encryptionsalt` or `encryptedkey` of `Pulumi.<stack>.yaml` in the project's
 *   `stackConfigDir`; "" when there is none (`--config-file`, Pulumi Cloud secrets).
 */
import { readFileSync, readlinkSync, realpathSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { readPulumiFile, stackConfigDir, stackFileBase } from "../pulumi-files";

/** The environment's guess at one stack instance (see the module's comment). */
export interface StackInstance {
  /** The backend the CLI uses, one spelling per backend (a file backend: `file://<host><realpath>`). */
  backend: string;
  /** The settings file's secret salt, or "". */
  salt: string;
}

/** Why the instance cannot be told, for the one warning that says so. */
export class UnknownInstance {
  constructor(readonly reason: string) {}
}

/** What a provider process sees around it: each part replaceable in tests. */
export interface Surroundings {
  /** The provider's working directory: the program's (`main`). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The CLI's working directory, where the process tree shows it. */
  cliCwd?: string;
  /** The account's home directory (`user.Current()`). */
  home: string;
  host: string;
}

export function surroundings(): Surroundings {
  return {
    cwd: process.cwd(),
    env: process.env,
    cliCwd: cliWorkingDirectory(),
    home: accountHome(),
    host: hostname(),
  };
}

const DEFAULT_BACKEND = "https://api.pulumi.com";

/** The stack instance of `stack` as the environment shows it, or why it cannot be told. */
export function deriveInstance(
  stack: string,
  s: Surroundings = surroundings(),
): StackInstance | UnknownInstance {
  const project = findProject(s.cwd, s.env.PULUMI_PROJECT);
  if (project instanceof UnknownInstance) return project;
  const url = backendUrl(project.config, s);
  if (url instanceof UnknownInstance) return url;
  return {
    backend: normaliseBackend(url, s.cliCwd ?? project.root, s),
    salt: readSalt(stack, project.root, project.config),
  };
}

interface Project {
  root: string;
  config: Record<string, unknown>;
}

/**
 * The project file in `from` or the nearest directory above it, of project `name` when given (a
 * program directory may hold another project's file: the walk goes on past it).
 */
export function findProject(from: string, name: string | undefined): Project | UnknownInstance {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const config = readYaml(dir, "Pulumi");
    if (config !== undefined && (!name || config.name === name)) return { root: dir, config };
    if (dirname(dir) === dir) {
      return new UnknownInstance(
        `no Pulumi.yaml${name ? ` of project "${name}"` : ""} in ${from} or above it`,
      );
    }
  }
}

/** The backend URL the CLI selects (pkg/workspace `GetCurrentCloudURL`), as written. */
export function backendUrl(
  project: Record<string, unknown>,
  s: Pick<Surroundings, "env" | "home">,
): string | UnknownInstance {
  const fromProject = isRecord(project.backend) ? project.backend.url : undefined;
  const chosen = nonEmpty(s.env.PULUMI_BACKEND_URL) ?? nonEmpty(fromProject);
  if (chosen !== undefined) return chosen;
  const login = storedLogin(s);
  if (login instanceof UnknownInstance) return login;
  return login ?? DEFAULT_BACKEND;
}

/** `current` of the CLI's login file (`pulumi login`), if any. */
function storedLogin(s: Pick<Surroundings, "env" | "home">): string | undefined | UnknownInstance {
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
    return new UnknownInstance(`the CLI's login file ${file} is not JSON`);
  }
  if (isRecord(creds) && "$pulumiSecureStore" in creds) {
    return new UnknownInstance(
      `the CLI's login file ${file} is encrypted by the credential store (PULUMI_CREDENTIAL_STORE)`,
    );
  }
  return isRecord(creds) ? nonEmpty(creds.current) : undefined;
}

/**
 * One spelling per backend (see the module's comment); `base` is the directory a relative file
 * path is relative to (the CLI's working directory).
 */
export function normaliseBackend(url: string, base: string, s: Pick<Surroundings, "home" | "host">): string {
  const file = /^file:\/\/([^?]*)/.exec(url);
  if (!file) return url.replace(/\/+$/, "");
  let path = file[1] ?? "";
  if (path === "~" || path.startsWith("~/")) path = join(s.home, path.slice(1));
  if (!isAbsolute(path)) path = resolve(base, path);
  return `file://${s.host}${realPath(resolve(path))}`;
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

function readSalt(stack: string, root: string, project: Record<string, unknown>): string {
  const settings = readYaml(stackConfigDir(root, project), stackFileBase(stack));
  for (const key of ["encryptionsalt", "encryptedkey"]) {
    const value = settings?.[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return "";
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

function accountHome(): string {
  try {
    return userInfo().homedir;
  } catch {
    return process.env.HOME ?? "/";
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";
const nonEmpty = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** A Pulumi file's mapping; undefined when missing, {} when broken (the engine reports that). */
function readYaml(dir: string, base: string): Record<string, unknown> | undefined {
  const file = readPulumiFile(dir, base);
  return file === "missing" ? undefined : file === "unreadable" ? {} : file;
}
