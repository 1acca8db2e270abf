/**
 * `pulumi-edge drift`: finds the stacks, checks each through the Automation API
 * (`preview --refresh`, the program run so the current config and key are used), and turns the
 * engine's events into a StackReport. `--remediate` runs `up --refresh` on the drifted ones.
 * A stack that cannot be checked is reported with the engine's message; it never stops the others.
 */
import { type Dirent, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  CommandError,
  type EngineEvent,
  LocalWorkspace,
  PulumiCommand,
  type Stack,
  type StepEventMetadata,
} from "@pulumi/pulumi/automation";
import { UnknownPlace } from "../../provider/identity/place";
import { isProjectDir, projectFileIn } from "../../provider/pulumi-files";
import { UsageError, withoutColours } from "../../sdk/command-line";
import { ERROR_CODES, errorMessage } from "../../sdk/contract";
import { STACK_ANCHOR } from "../../provider/identity";
import { projectBackend } from "./backend";
import { CannotJudge, judgeStackFast } from "./fast";
import {
  type Engine,
  readStack,
  selectStack,
  type StackRead,
  stackConfig,
  stacksOnDisk,
  type Target,
} from "./stacks";
import { refusedSettings } from "../../provider/config";
import { programDir } from "./state";

export type { Engine, Target } from "./stacks";
import { lockCheck } from "./lock";
import {
  attributionOf,
  changedFields,
  type FieldChange,
  type Plain,
  secretFields,
  type DriftedResource,
  type Remediation,
  type StackReport,
  stackLabel,
} from "./report";

export interface Selection {
  /** `DIR:STACK` each. */
  stacks: readonly string[];
  /** Project directories: every stack of each on its backend. */
  projects: readonly string[];
  /** Directories whose subdirectories (with a Pulumi.json, .yaml or .yml) are projects. */
  projectsDirs: readonly string[];
}

/**
 * The environment for the `pulumi` the user has: theirs, plus the empty passphrase when they set
 * none (what the stacks of pulumi-edge's own scripts use), so a passphrase stack never prompts.
 */
export function pulumiEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  // `refresh --preview-only` refuses it (as `--yes`); the commands that change anything say --yes.
  // Set false, not left out: the Automation API's child gets this process's environment beneath
  // these variables, so a CI job's PULUMI_SKIP_CONFIRMATIONS=true would reach it anyway.
  if (out.PULUMI_SKIP_CONFIRMATIONS !== undefined || process.env.PULUMI_SKIP_CONFIRMATIONS !== undefined)
    out.PULUMI_SKIP_CONFIRMATIONS = "false";
  if (out.PULUMI_CONFIG_PASSPHRASE === undefined && out.PULUMI_CONFIG_PASSPHRASE_FILE === undefined)
    out.PULUMI_CONFIG_PASSPHRASE = "";
  return out;
}

/** The `pulumi` on PATH, through the Automation API. */
export async function pulumiOnPath(): Promise<PulumiCommand> {
  try {
    return await PulumiCommand.get();
  } catch (e) {
    throw new Error(
      `cannot run the \`pulumi\` CLI on PATH (${errorMessage(e)}): install it (https://www.pulumi.com/docs/install/) ` +
        "or run this through npx in a project that has the `pulumi` npm package",
    );
  }
}

/** `DIR:STACK`, split at the last colon (stack names hold no colon; a directory might). */
export function parseStackArg(arg: string): Target {
  const at = arg.lastIndexOf(":");
  if (at <= 0 || at === arg.length - 1)
    throw new UsageError(`--stack ${arg}: give it as DIR:STACK, e.g. --stack infra/edge:prod`);
  return { dir: arg.slice(0, at), stack: arg.slice(at + 1) };
}

/** A pseudo-stack for a directory whose stacks could not be listed: reported as an error. */
const unlisted = (dir: string, error: string): StackReport => ({
  dir,
  stack: "*",
  verdict: "error",
  resources: [],
  error,
  seconds: 0,
});

/**
 * Every stack the selection names, in the order given (each once), and an error report for each
 * directory whose stacks could not be listed.
 */
export async function resolveTargets(
  selection: Selection,
  engine: Engine,
): Promise<{ targets: Target[]; failures: StackReport[] }> {
  const targets: Target[] = selection.stacks.map(parseStackArg);
  const failures: StackReport[] = [];
  const projects = [...selection.projects];
  for (const parent of selection.projectsDirs) {
    const { found, unreadable } = projectsIn(parent);
    failures.push(...unreadable);
    if (found.length === 0 && unreadable.length === 0)
      failures.push(
        unlisted(
          parent,
          "no Pulumi project (a directory with a Pulumi.json, Pulumi.yaml or Pulumi.yml) in it",
        ),
      );
    projects.push(...found);
  }
  for (const dir of projects) {
    if (!isProjectDir(dir)) {
      failures.push(unlisted(dir, "not a Pulumi project: no Pulumi.json, Pulumi.yaml or Pulumi.yml in it"));
      continue;
    }
    try {
      // A file backend's listing read as the CLI reads it; else `pulumi stack ls`.
      const stacks =
        stacksOnDisk(dir, { ...process.env, ...engine.env }) ??
        (
          await (
            await LocalWorkspace.create({
              workDir: resolve(dir),
              pulumiCommand: engine.command,
              envVars: engine.env,
            })
          ).listStacks()
        ).map((s) => s.name);
      if (stacks.length === 0) failures.push(unlisted(dir, noStacks(dir, engine.env)));
      for (const stack of stacks) targets.push({ dir, stack });
    } catch (e) {
      failures.push(unlisted(dir, engineMessage(e, [])));
    }
  }
  const seen = new Set<string>();
  const unique = targets.filter((t) => {
    const k = `${resolve(t.dir)}\0${t.stack}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return { targets: unique, failures };
}

/**
 * The projects among the subdirectories of `parent` (each with a project file the CLI would take:
 * Pulumi.json, .yaml or .yml), in name order, and an error report for each entry that cannot be
 * looked into (unreadable, or a link to nothing): a project there would otherwise go unchecked
 * without a word, and `--unmanaged` would list its objects as no stack's.
 */
function projectsIn(parent: string): { found: string[]; unreadable: StackReport[] } {
  const found: string[] = [];
  const unreadable: StackReport[] = [];
  let entries: Dirent[];
  try {
    entries = readdirSync(parent, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
  } catch (e) {
    return { found, unreadable: [unlisted(parent, `cannot read the directory: ${errorMessage(e)}`)] };
  }
  for (const entry of entries) {
    const dir = join(parent, entry.name);
    if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
    try {
      if (!statSync(dir).isDirectory()) continue;
      readdirSync(dir);
    } catch (e) {
      unreadable.push(
        unlisted(dir, `cannot look into it (${errorMessage(e)}): a project there could not be checked`),
      );
      continue;
    }
    if (isProjectDir(dir)) found.push(dir);
  }
  return { found, unreadable };
}

/**
 * Why a project lists no stacks, and what to do: the backend the CLI resolved for it and what
 * chose it, and a file backend in the project's own directory that holds stacks of it (the guide's
 * first stacks each keep theirs in `.state`, and the login names only the last one's).
 */
function noStacks(dir: string, env: Record<string, string>): string {
  const projectDir = resolve(dir);
  const backend = projectBackend(projectDir, { ...process.env, ...env });
  const where =
    backend instanceof UnknownPlace
      ? `its backend (which one, this cannot tell: ${backend.reason})`
      : `its backend, ${backend.url} (named by ${backend.namedBy})`;
  const file = projectFileIn(projectDir);
  const name = file && typeof file.config === "object" ? file.config.name : undefined;
  const here = typeof name === "string" ? fileBackendsIn(projectDir, name) : [];
  const projectFile = file?.path ?? join(dir, "Pulumi.yaml");
  const own = here
    .filter((d) => backend instanceof UnknownPlace || d !== backend.dir)
    .map((d) => `file://${d}`);
  return (
    `the project has no stacks on ${where}: \`pulumi stack ls\` in ${dir} lists none. ` +
    (own.length > 0
      ? `Its directory holds a file backend with stacks of this project, ${own.join(" and ")}: if those are its stacks, ` +
        `set backend.url in ${projectFile} to ${own[0]}, then check again. `
      : "") +
    `Where its stacks are on another backend, set backend.url in ${projectFile} to that backend (or ` +
    "PULUMI_BACKEND_URL, for every project); where it has none yet, create one (`pulumi stack init`) or leave the project out."
  );
}

/** File backends directly inside `projectDir` whose layout holds stacks of project `name`. */
function fileBackendsIn(projectDir: string, name: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(projectDir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => join(projectDir, e.name))
    .filter((d) => {
      try {
        return readdirSync(join(d, ".pulumi", "stacks", name)).some((f) => /\.json(\.gz|\.zst)?$/.test(f));
      } catch {
        return false;
      }
    });
}

/** Runs `fn` over `items`, at most `limit` at a time; results in the items' order. */
export async function pool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * What the engine said went wrong: its error diagnostics when it sent any, else the stderr of
 * the failed command (a missing or locked stack fails before any event).
 */
export function engineMessage(e: unknown, errors: readonly string[]): string {
  const stderr = commandStderr(e);
  const text = errors.length > 0 ? errors.join("\n") : stderr?.trim() ? stderr : errorMessage(e);
  return (
    withoutColours(text)
      .split("\n")
      .map((l) => l.trimEnd())
      // The command line the Automation API ran says nothing the engine's own lines do not.
      .filter((l) => l.trim() && !/^Command failed with exit code -?\d+: /.test(l))
      .join("\n")
  );
}

/**
 * The stderr of a failed `pulumi` command, as the Automation API's CommandError holds it (its
 * `commandResult`, typed private but part of every such error), not parsed back out of the
 * error's text.
 */
function commandStderr(e: unknown): string | undefined {
  if (!(e instanceof CommandError)) return undefined;
  const result: unknown = Reflect.get(e, "commandResult");
  const stderr: unknown =
    typeof result === "object" && result !== null ? Reflect.get(result, "stderr") : undefined;
  return typeof stderr === "string" ? stderr : undefined;
}

/**
 * A step of the provider's own bookkeeping, not drift: the dynamic face's StackAnchor (the stack's
 * anchor, provider/identity), made by the first `up` of a stack deployed by 0.2.0.
 */
const isBookkeeping = (step: StepEventMetadata) => step.type === `pulumi-nodejs:dynamic/edge:${STACK_ANCHOR}`;

/** What one engine run's events say: the changed resources with their fields and authors. */
export class EventLog {
  /** How many of the steps were bookkeeping (see isBookkeeping). */
  bookkeeping(): number {
    return this.steps.filter(
      (s) => !["same", "refresh", "read", "discard"].includes(s.op) && isBookkeeping(s),
    ).length;
  }

  private readonly steps: StepEventMetadata[] = [];
  private readonly warnings = new Map<string, string[]>();
  readonly errors: string[] = [];

  /** What each step did (a refresh's outcome: `same`, `update`, `delete`). */
  private readonly outcomes: StepEventMetadata[] = [];

  readonly onEvent = (event: EngineEvent): void => {
    const step = event.resourcePreEvent?.metadata;
    if (step) this.steps.push(step);
    const outcome = event.resOutputsEvent?.metadata;
    if (outcome) this.outcomes.push(outcome);
    const diag = event.diagnosticEvent;
    if (diag?.severity === "error") this.errors.push(diag.message);
    if (diag?.severity === "warning") {
      const key = diag.urn ?? "";
      this.warnings.set(key, [...(this.warnings.get(key) ?? []), diag.message]);
    }
  };

  /**
   * The authors the provider reported for a resource, and the fields it could name none for (its
   * URN; a warning without one, by its name).
   */
  private attribution(urn: string, name: string): Pick<DriftedResource, "authors" | "unattributed"> {
    const own = attributionOf(this.warnings.get(urn) ?? []);
    // The line names its resource; a kind of two words ("HTTPS edge") or a name with spaces included.
    const unattached = attributionOf(this.warnings.get("") ?? [], name);
    const unattributed = [...(own.unattributed ?? []), ...(unattached.unattributed ?? [])];
    return {
      authors: [...own.authors, ...unattached.authors],
      ...(unattributed.length > 0 ? { unattributed } : {}),
    };
  }

  /**
   * Resources a refresh found changed (`pulumi refresh --preview-only`): the outcome of each
   * refresh step (`update`: the live object differs, `delete`: it is gone), as the engine path
   * reports them: what `up` would do (update it back, create it again), the state's inputs
   * against the live ones.
   */
  refreshed(): DriftedResource[] {
    const out: DriftedResource[] = [];
    for (const step of this.outcomes) {
      if (!["update", "delete"].includes(step.op) || step.type === "pulumi:pulumi:Stack") continue;
      if (isBookkeeping(step)) continue;
      const name = step.urn.split("::").pop() ?? step.urn;
      const deployed = step.old?.inputs ?? {};
      const live = step.new?.inputs ?? {};
      const who = this.attribution(step.urn, name);
      out.push({
        urn: step.urn,
        name,
        type: step.type,
        op: step.op === "delete" ? "create" : "update",
        fields: step.op === "delete" ? [] : fieldsOf(step, deployed, live, who),
        ...who,
      });
    }
    return out;
  }

  /**
   * Resources the engine would change: every step but `same` and the refresh and read steps,
   * the root stack left out (its outputs follow its resources). For an update, the step's old
   * inputs are the live ones (just refreshed) and its new inputs the program's.
   */
  drifted(): DriftedResource[] {
    const out: DriftedResource[] = [];
    for (const step of this.steps) {
      if (["same", "refresh", "read", "discard"].includes(step.op)) continue;
      if (step.type === "pulumi:pulumi:Stack") continue;
      if (isBookkeeping(step)) continue;
      const name = step.urn.split("::").pop() ?? step.urn;
      const live = step.old?.inputs ?? {};
      const declared = step.new?.inputs ?? {};
      const who = this.attribution(step.urn, name);
      out.push({
        urn: step.urn,
        name,
        type: step.type,
        op: step.op,
        fields: step.old && step.new ? fieldsOf(step, declared, live, who) : [],
        ...who,
      });
    }
    return out;
  }
}

/**
 * The fields a step changes, `from` (what the stack holds) to `to` (what the service does): by the
 * properties its detailed diff (or diff) names; where every value shown looks the same (a secret,
 * shown alike on both sides), the secrets (see secretFields).
 */
function fieldsOf(
  step: StepEventMetadata,
  from: Plain,
  to: Plain,
  who: Pick<DriftedResource, "authors" | "unattributed">,
): FieldChange[] {
  const keys = step.detailedDiff
    ? Object.keys(step.detailedDiff).map((p) => p.split(/[.[]/)[0]!)
    : step.diffs;
  const fields = changedFields(from, to, keys);
  return fields.length > 0 ? fields : secretFields(from, to, [...who.authors, ...(who.unattributed ?? [])]);
}

const seconds = (since: number) => Math.round((Date.now() - since) / 100) / 10;

/**
 * How a stack is judged: `engine`, `pulumi preview --refresh` with the program run (what the
 * program says now, `ignoreChanges` included); `refresh`, `pulumi refresh --preview-only` (the
 * engine, no program: the service against what the last `up` deployed); `fast`, the same verdicts
 * as `refresh` without the engine (./fast), or the engine path where it cannot judge.
 */
export const CHECK_PATHS = ["fast", "refresh", "engine"] as const;
export type CheckPath = (typeof CHECK_PATHS)[number];

/** Reads a stack's state and config (readStack); one read per stack until it is forgotten. */
export interface StackReads {
  (target: Target): Promise<StackRead>;
  /** After a run that may have changed the stack's state (a remediation). */
  forget(target: Target): void;
}

export function stackReads(engine: Engine): StackReads {
  const reads = new Map<string, Promise<StackRead>>();
  const key = (t: Target) => `${resolve(t.dir)}\0${t.stack}`;
  const read = (target: Target) => {
    let got = reads.get(key(target));
    if (!got) {
      got = readStack(target, engine);
      reads.set(key(target), got);
    }
    return got;
  };
  return Object.assign(read, { forget: (target: Target) => void reads.delete(key(target)) });
}

/** The drift check of one stack by `path`; never throws. `reads`: where the fast path reads the stack. */
export async function checkStack(
  target: Target,
  engine: Engine,
  path: CheckPath = "engine",
  reads?: StackReads,
): Promise<StackReport> {
  const started = Date.now();
  const log = new EventLog();
  let judged: CheckPath = path;
  let fallback: string | undefined;
  try {
    // No path takes the stack's lock: a locked stack's state is mid-update, not drifted.
    const unlocked = await lockCheck(target, engine.command.command, engine.env);
    unlocked();
    if (path !== "engine") {
      // Settings `up` would refuse fail the check: neither the fast path nor `refresh
      // --preview-only` runs the program, where they are refused (provider/config).
      const config = reads ? (await reads(target)).config : await stackConfig(target, engine);
      const refused = refusedSettings(config, engine.env, programDir(target.dir));
      if (refused) throw new Error(refused);
    }
    let resources: DriftedResource[];
    let changes: boolean;
    if (path === "fast") {
      // Not selected: the fast path names the stack in each command (see readStack).
      const fast = await judgeStackFast(target, engine, reads ? await reads(target) : undefined);
      if (fast instanceof CannotJudge) {
        [judged, fallback] = ["engine", fast.reason];
        ({ resources, changes } = await byPreview(await selectStack(target, engine), log));
      } else ({ resources, changes } = { resources: fast.resources, changes: false });
    } else if (path === "refresh") {
      const stack = await selectStack(target, engine);
      const preview = await stack.previewRefresh({ color: "never", onEvent: log.onEvent });
      resources = log.refreshed();
      changes = changedBeyondBookkeeping(preview.changeSummary, log) > 0;
    } else ({ resources, changes } = await byPreview(await selectStack(target, engine), log));
    unlocked(); // taken while it ran: what it read may be mid-update too
    return {
      ...target,
      verdict: changes || resources.length > 0 ? "drifted" : "clean",
      resources,
      seconds: seconds(started),
      path: judged,
      ...(fallback ? { fallback } : {}),
    };
  } catch (e) {
    return {
      ...target,
      verdict: "error",
      resources: [],
      error: engineMessage(e, log.errors),
      seconds: seconds(started),
      path: judged,
      ...(fallback ? { fallback } : {}),
    };
  }
}

/** `pulumi preview --refresh`, the program run: its drifted resources, and whether it changes anything. */
async function byPreview(stack: Stack, log: EventLog) {
  const preview = await stack.preview({
    refresh: true,
    runProgram: true,
    color: "never",
    onEvent: log.onEvent,
  });
  return { resources: log.drifted(), changes: changedBeyondBookkeeping(preview.changeSummary, log) > 0 };
}

/** The steps a summary counts as changes, less the provider's own bookkeeping. */
function changedBeyondBookkeeping(summary: Record<string, number | undefined>, log: EventLog): number {
  const changed = Object.entries(summary).reduce((sum, [op, n]) => sum + (op === "same" ? 0 : (n ?? 0)), 0);
  return changed - log.bookkeeping();
}

/** `up --refresh` of one drifted stack; a 403 (a read key) is "refused", naming the scope. */
export async function remediateStack(target: Target, engine: Engine): Promise<Remediation> {
  const log = new EventLog();
  try {
    const stack = await selectStack(target, engine);
    await stack.up({ refresh: true, runProgram: true, color: "never", onEvent: log.onEvent });
    return { outcome: "restored" };
  } catch (e) {
    const message = engineMessage(e, log.errors);
    // The service's own error code for a key out of scope, in the engine's error diagnostics.
    const forbidden = message.split("\n").find((l) => l.includes(ERROR_CODES.forbidden.code));
    return forbidden
      ? {
          outcome: "refused",
          message: `${forbidden.trim()} (the key in EDGE_API_KEY may only read: remediate with a write key)`,
        }
      : { outcome: "failed", message };
  }
}

/** Checks every target, `parallel` at a time, with a progress line per stack. */
export async function checkAll(
  targets: readonly Target[],
  parallel: number,
  engine: Engine,
  path: CheckPath = "engine",
  reads?: StackReads,
): Promise<StackReport[]> {
  let done = 0;
  return pool(targets, parallel, async (t) => {
    engine.progress(`checking ${stackLabel(t)}`);
    const r = await checkStack(t, engine, path, reads);
    done++;
    const what =
      r.verdict === "drifted"
        ? `drifted (${r.resources.length} resource${r.resources.length === 1 ? "" : "s"})`
        : r.verdict === "error"
          ? `error: ${r.error?.split("\n")[0] ?? ""}`
          : "clean";
    const how = r.fallback ? `${r.path}: ${r.fallback}` : r.path;
    engine.progress(`[${done}/${targets.length}] ${stackLabel(t)}: ${what} (${r.seconds} s, ${how})`);
    return r;
  });
}
