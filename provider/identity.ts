/**
 * The identity a Pulumi resource's creates carry, so that a create is made exactly once across
 * runs: the next run of the same stack derives the same identity again and the service answers
 * it with the object the lost create made (see `CreateOptions.identity` of the client: the
 * `Idempotency-Key` is this identity with the request).
 *
 * It names one **stack instance**, not one stack name: the resource's URN (stack, project, type,
 * name and parents), the backend that holds the stack's state, and the stack's secret salt.
 * - The URN alone is shared by every stack of the same project and stack name.
 * - The salt (`encryptionsalt` or `encryptedkey` of `Pulumi.<stack>.yaml`) is shared by every
 *   stack that uses one committed settings file: `pulumi stack init` keeps the salt it finds, so
 *   the same stack name on a second backend has the same salt (issue 26: stack B took, then
 *   deleted, stack A's objects). It is absent with `--config-file` and with Pulumi Cloud secrets.
 * - The backend is what tells those apart: the URL the CLI itself resolves (`PULUMI_BACKEND_URL`,
 *   else the project's `backend.url`, else the login in `credentials.json`, else Pulumi Cloud),
 *   with a file backend's path made absolute and qualified by this machine's host name (the same
 *   path on two machines is two backends).
 * A stack renamed or moved to another backend therefore gets new identities: what its state
 * holds is untouched, but a create lost before the move is not recovered after it (the route's
 * match conflicts and says so; an edge is made anew). Pulumi Cloud does not tell a provider the
 * stack's organization, so two organizations' stacks of one project and stack name share an
 * identity there; the recovery window (../lifecycle/held) keeps that from reaching objects
 * older than a day.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { parse } from "yaml";

/** The stack name of a URN: `urn:pulumi:<stack>::<project>::<type>::<name>`. */
function stackOfUrn(urn: string): string {
  const match = /^urn:pulumi:([^:]+)::/.exec(urn);
  if (!match) throw new Error(`not a Pulumi URN: ${urn}`);
  return match[1]!;
}

/** What tells one stack instance from another stack of the same name (see the module's comment). */
export interface StackInstance {
  /** The backend the CLI uses, as it resolves it (a file backend: `file://<host><absolute path>`). */
  backend: string;
  /** The settings file's secret salt, or "". */
  salt: string;
}

const instances = new Map<string, StackInstance>();

/**
 * The stack instance of stack `stack` of the project in `projectDir` (the engine runs providers
 * there, with its own environment). Read once per process and stack.
 */
export function stackInstance(stack: string, projectDir = process.cwd()): StackInstance {
  const cacheKey = `${resolve(projectDir)}\n${stack}`;
  let instance = instances.get(cacheKey);
  if (instance === undefined) {
    const project = readYaml(projectDir, "Pulumi");
    instance = { backend: currentBackend(projectDir, project), salt: readSalt(stack, projectDir, project) };
    instances.set(cacheKey, instance);
  }
  return instance;
}

const DEFAULT_BACKEND = "https://api.pulumi.com";

/** The backend URL as the CLI selects it (pkg/workspace `GetCurrentCloudURL`), normalised. */
export function currentBackend(
  projectDir: string,
  project = readYaml(projectDir, "Pulumi"),
  env: NodeJS.ProcessEnv = process.env,
): string {
  const projectBackend = isRecord(project?.backend) ? project.backend.url : undefined;
  const url =
    nonEmpty(env.PULUMI_BACKEND_URL) ??
    nonEmpty(projectBackend) ??
    nonEmpty(storedLogin(env)) ??
    DEFAULT_BACKEND;
  return normaliseBackend(url, projectDir, env);
}

/** The login the CLI stored last (`pulumi login`), if any. */
function storedLogin(env: NodeJS.ProcessEnv): unknown {
  const home = nonEmpty(env.PULUMI_HOME) ?? join(homedir(), ".pulumi");
  try {
    const creds: unknown = JSON.parse(readFileSync(join(home, "credentials.json"), "utf8"));
    return isRecord(creds) ? creds.current : undefined;
  } catch {
    return undefined; // never logged in: the CLI then asks for Pulumi Cloud
  }
}

/**
 * One spelling per backend: a file backend's path absolute (`~` and relative paths resolved as
 * the CLI resolves them, against the home directory and the project directory), its options
 * dropped, and this machine's host name in front; other URLs without a trailing slash.
 */
export function normaliseBackend(
  url: string,
  projectDir: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const file = /^file:\/\/([^?]*)/.exec(url);
  if (!file) return url.replace(/\/+$/, "");
  let path = file[1]!;
  if (path === "~" || path.startsWith("~/")) path = join(nonEmpty(env.HOME) ?? homedir(), path.slice(1));
  if (!isAbsolute(path)) path = resolve(projectDir, path);
  return `file://${hostname()}${resolve(path)}`;
}

function readSalt(stack: string, projectDir: string, project: Record<string, unknown> | undefined): string {
  const configDir =
    typeof project?.stackConfigDir === "string" ? join(projectDir, project.stackConfigDir) : projectDir;
  const settings = readYaml(configDir, `Pulumi.${stack.split("/").pop()}`);
  for (const key of ["encryptionsalt", "encryptedkey"]) {
    const value = settings?.[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return "";
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";
const nonEmpty = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function readYaml(dir: string, base: string): Record<string, unknown> | undefined {
  for (const ext of [".yaml", ".yml"]) {
    const file = join(dir, base + ext);
    if (!existsSync(file)) continue;
    try {
      const value: unknown = parse(readFileSync(file, "utf8"));
      return isRecord(value) ? value : undefined;
    } catch {
      return undefined; // not ours to judge: the engine reports a broken settings file
    }
  }
  return undefined;
}

/** The create identity of the resource `urn` (see the module's comment). */
export function createIdentity(urn: string, instance = stackInstance(stackOfUrn(urn))): string {
  return createHash("sha256")
    .update(`pulumi-edge create identity v2\n${instance.backend}\n${instance.salt}\n${urn}`)
    .digest("base64url");
}
