/**
 * Where a project's stacks are: the backend the `pulumi` CLI resolves for the project's directory
 * (provider/identity/place.ts: `PULUMI_BACKEND_URL`, else the project file's `backend.url`, else
 * the login, else Pulumi Cloud), and on a file backend the files the CLI keeps for a stack, read
 * here instead of running the CLI (each run costs about a quarter second of CPU, nearly all of a
 * fast check's). The layout is pulumi 3.259.0's `pkg/backend/diy`:
 *
 * - `.pulumi/meta.yaml` says the layout: `version: 1`, stacks per project
 *   (`.pulumi/stacks/<project>/<stack>.json`); version 0, or no file while legacy stack files are
 *   there, the layout before projects (`.pulumi/stacks/<stack>.json`) (meta.go, store.go);
 * - a stack's checkpoint is `<base>.json`, `.json.gz` or `.json.zst`, the most recently modified
 *   of them, its compression told by its first bytes (state.go `stackPath`, `getCheckpoint`);
 * - its history is one `<stack>-<unix nanoseconds>.history.json[.gz|.zst]` per operation in
 *   `.pulumi/history/<project>/<stack>/`, the newest last by name (state.go `getHistory`);
 * - its locks are `.pulumi/locks/<fully qualified name>/<id>.json`, the name
 *   `organization/<project>/<stack>` (the legacy layout: `<stack>`) (lock.go).
 *
 * Whatever this does not know as the CLI does (another layout version, zstd, a checkpoint of an
 * older format, secrets it would have to decrypt) is left to the CLI: the caller runs it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { parse } from "yaml";
import { accountHome, backendUrl, filePath, UnknownPlace } from "../../provider/identity/place";
import { projectFileIn } from "../../provider/pulumi-files";

/** A project's backend, as the CLI resolves it for the project's directory. */
export interface Backend {
  /** Its URL as written where it was chosen. */
  url: string;
  /** What named it, for a message ("named by …"): the variable, the project file, or the login. */
  namedBy: string;
  /** A file backend's directory (`file://` resolved as the CLI does: `~`, relative to the project). */
  dir?: string;
}

/**
 * The backend of the project in `projectDir` (the CLI's working directory when the drift check
 * runs it), or why it cannot be told (a login file the credential store encrypts).
 */
export function projectBackend(projectDir: string, env: NodeJS.ProcessEnv): Backend | UnknownPlace {
  const home = accountHome();
  const file = projectFileIn(projectDir);
  const project = file === undefined || file.config === "unreadable" ? {} : file.config;
  const url = backendUrl(project, { env, home });
  if (url instanceof UnknownPlace) return url;
  const written = (v: unknown) => typeof v === "string" && v !== "";
  const fromProject: unknown =
    typeof project.backend === "object" && project.backend !== null
      ? Reflect.get(project.backend, "url")
      : undefined;
  const namedBy = written(env.PULUMI_BACKEND_URL)
    ? "PULUMI_BACKEND_URL"
    : written(fromProject)
      ? `backend.url in ${file?.path ?? "the project file"}`
      : `\`pulumi login\`, since neither PULUMI_BACKEND_URL nor backend.url in ${file?.path ?? "the project file"} names one`;
  const path = /^file:\/\/([^?]*)/.exec(url)?.[1];
  return {
    url,
    namedBy,
    ...(path === undefined ? {} : { dir: filePath(path, resolve(projectDir), home) }),
  };
}

/** A stack's files on a file backend. */
export interface StackFiles {
  /** The checkpoint's path without its extension. */
  checkpoint: string;
  /** The directory of its history files. */
  history: string;
  /** The directory of its lock files. */
  locks: string;
}

const STACK_FILE_EXTENSIONS = [".json", ".json.gz", ".json.zst"] as const;

/**
 * Where the CLI keeps `stack` (short, or `organization/<project>/<stack>`) of project `project` on
 * the file backend in `dir`; undefined where this cannot say as the CLI would (an unknown layout
 * version, a name the CLI would refuse).
 */
export function stackFiles(dir: string, project: string, stack: string): StackFiles | undefined {
  const layout = layoutOf(dir);
  if (layout === undefined) return undefined;
  const parts = stack.split("/");
  const name = parts.at(-1)!;
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) return undefined;
  const bookkeeping = join(dir, ".pulumi");
  if (layout === "legacy") {
    if (parts.length !== 1) return undefined;
    return {
      checkpoint: join(bookkeeping, "stacks", name),
      history: join(bookkeeping, "history", name),
      locks: join(bookkeeping, "locks", name),
    };
  }
  if (parts.length > 3 || (parts.length > 1 && parts[0] !== "organization")) return undefined;
  const proj = parts.length === 3 ? (parts[1] ?? "") : project;
  if (!/^[A-Za-z0-9_.-]+$/.test(proj)) return undefined;
  return {
    checkpoint: join(bookkeeping, "stacks", proj, name),
    history: join(bookkeeping, "history", proj, name),
    locks: join(bookkeeping, "locks", "organization", proj, name),
  };
}

/** The layout of the file backend in `dir` (meta.go `readPulumiMeta`, `ensurePulumiMeta`). */
function layoutOf(dir: string): "project" | "legacy" | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, ".pulumi", "meta.yaml"), "utf8");
  } catch {
    // No meta.yaml: the CLI takes the legacy layout where legacy stack files are, else writes version 1.
    const stacks = join(dir, ".pulumi", "stacks");
    // A legacy stack file: `<stack>` with a marshaler's extension (.json, .yaml, .yml), perhaps compressed.
    const legacy =
      existsSync(stacks) &&
      readdirSync(stacks, { withFileTypes: true }).some(
        (e) => e.isFile() && /\.(json|ya?ml)(\.gz|\.zst)?$/.test(e.name),
      );
    return legacy ? "legacy" : "project";
  }
  let meta: unknown;
  try {
    meta = parse(text);
  } catch {
    return undefined;
  }
  const version: unknown =
    typeof meta === "object" && meta !== null ? Reflect.get(meta, "version") : undefined;
  return version === 1 ? "project" : version === 0 ? "legacy" : undefined;
}

/**
 * The stacks of project `project` on the file backend in `dir`, as `pulumi stack ls` names them
 * in the project's directory (short names, in name order: store.go `ListReferences`, the CLI's
 * `stack ls`); undefined where the CLI must say: the legacy layout (its stacks name no project),
 * an unknown one, no backend directory, or stack names unvalidated (PULUMI_DISABLE_VALIDATION).
 */
export function listStacks(dir: string, project: string, env: NodeJS.ProcessEnv): string[] | undefined {
  if (!existsSync(dir) || /^(1|true)$/i.test(env.PULUMI_DISABLE_VALIDATION ?? "")) return undefined;
  if (layoutOf(dir) !== "project" || !/^[A-Za-z0-9_.-]+$/.test(project)) return undefined;
  let names: string[];
  try {
    names = readdirSync(join(dir, ".pulumi", "stacks", project));
  } catch {
    return []; // no stack of the project was ever made here
  }
  const stacks = new Set<string>();
  for (const file of names) {
    // A checkpoint with a marshaler's extension, perhaps compressed; not a `.bak` nor `.attrs`.
    const name = /^(.*)\.(?:json|ya?ml)(?:\.gz|\.zst)?$/.exec(file)?.[1];
    if (name !== undefined && /^[A-Za-z0-9_.-]{1,100}$/.test(name)) stacks.add(name);
  }
  return [...stacks].sort(byBytes);
}

/** A file's bytes, gunzipped when they are gzip's; undefined for zstd (Node.js 20 has no decoder). */
function contentOf(file: string): string | undefined {
  const bytes = readFileSync(file);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return gunzipSync(bytes).toString("utf8");
  if (bytes[0] === 0x28 && bytes[1] === 0xb5 && bytes[2] === 0x2f && bytes[3] === 0xfd) return undefined;
  return bytes.toString("utf8");
}

/**
 * The stack's latest deployment as its checkpoint holds it (what `pulumi stack export` writes
 * from it, secrets still encrypted), or undefined where the CLI must read it: no checkpoint
 * (the CLI says which stack is missing), zstd, a checkpoint version other than 3 or one with
 * features, or one never deployed.
 */
export function checkpointDeployment(files: StackFiles): unknown {
  let newest: { file: string; mtime: number } | undefined;
  for (const ext of STACK_FILE_EXTENSIONS) {
    const file = `${files.checkpoint}${ext}`;
    let mtime: number;
    try {
      mtime = statSync(file).mtimeMs;
    } catch {
      continue;
    }
    // The most recently modified; on a tie the later in the CLI's listing order.
    if (newest === undefined || mtime >= newest.mtime) newest = { file, mtime };
  }
  if (newest === undefined) return undefined;
  const text = contentOf(newest.file);
  if (text === undefined) return undefined;
  const versioned: unknown = JSON.parse(text);
  if (typeof versioned !== "object" || versioned === null) return undefined;
  const features: unknown = Reflect.get(versioned, "features");
  if (Reflect.get(versioned, "version") !== 3 || (Array.isArray(features) && features.length > 0))
    return undefined;
  const checkpoint: unknown = Reflect.get(versioned, "checkpoint");
  const latest: unknown =
    typeof checkpoint === "object" && checkpoint !== null ? Reflect.get(checkpoint, "latest") : undefined;
  return typeof latest === "object" && latest !== null ? latest : undefined;
}

/** The newest entry of a stack's history: what `pulumi stack history --json` shows first. */
export interface LastOperation {
  kind: string;
  result: string;
}

const HISTORY_SUFFIXES = [".history.json", ".history.json.gz", ".history.json.zst"];

/**
 * The stack's newest history entry; undefined for a stack never updated (no history); "cli" where
 * the CLI must read it (zstd).
 */
export function lastOperation(files: StackFiles): LastOperation | undefined | "cli" {
  let names: string[];
  try {
    names = readdirSync(files.history);
  } catch {
    return undefined; // the CLI: history does not exist until a stack has been updated
  }
  // By name, as the CLI's listing sorts them: older updates first (their names hold the time).
  const newest = names
    .filter((n) => HISTORY_SUFFIXES.some((s) => n.endsWith(s)))
    .sort(byBytes)
    .at(-1);
  if (newest === undefined) return undefined;
  const text = contentOf(join(files.history, newest));
  if (text === undefined) return "cli";
  const entry: unknown = JSON.parse(text);
  if (typeof entry !== "object" || entry === null) return "cli";
  return { kind: String(Reflect.get(entry, "kind")), result: String(Reflect.get(entry, "result")) };
}

/** Go's string order (bytes), which the CLI's listing uses, for ASCII names as here. */
const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
