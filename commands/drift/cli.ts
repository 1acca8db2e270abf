/**
 * `pulumi-edge drift`: the drift check of a fleet of stacks in one command, one report, one exit
 * code. The report goes to stdout (table, Markdown or JSON), progress to stderr.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseCommandLine, UsageError, usageExit } from "../../sdk/command-line";
import { errorMessage } from "../../sdk/contract";
import {
  EXIT,
  exitCode,
  type FleetReport,
  renderJson,
  renderJunit,
  renderMarkdown,
  renderTable,
  type StackReport,
  stackLabel,
} from "./report";
import {
  CHECK_PATHS,
  checkAll,
  type Engine,
  pool,
  pulumiEnv,
  pulumiOnPath,
  remediateStack,
  resolveTargets,
  type StackReads,
  stackReads,
} from "./run";
import { findUnmanaged } from "./unmanaged";
import { isProjectDir } from "../../provider/pulumi-files";

export const DRIFT_USAGE = `usage: pulumi-edge drift [--stack DIR:STACK]... [--project DIR]... [--projects-dir DIR]...
                         [--path fast|refresh|engine] [--parallel 4] [--format table|markdown|json]
                         [--junit FILE] [--remediate [--yes]] [--unmanaged]
         The drift check of many stacks at once, in parallel, through the \`pulumi\` on PATH and the
         current config and EDGE_API_KEY. Reports per stack clean, drifted (each resource, its
         changed fields, and who changed them when the provider says) or error (the engine's
         message), and what judged it. Secrets: [secret].
         --path P              how each stack is judged:
                               fast (default): its state (on a file backend its files, else
                                 \`pulumi stack export\`) against the service, read with one
                                 call per edge and judged by the provider's own refresh and
                                 diff, no program and no engine run; the verdicts
                                 of \`refresh\`, in a fraction of its time; a stack it cannot judge
                                 (resources of other providers, pending operations) is the
                                 engine path's, and the report says so
                               refresh: \`pulumi refresh --preview-only\` (the engine, no program)
                               engine: \`pulumi preview --refresh\` (the program run, so what it
                                 says now counts too: ignoreChanges, changes not yet deployed)
         --stack DIR:STACK     one stack of the project in DIR (repeat for more)
         --project DIR         every stack of the project in DIR on its backend
         --projects-dir DIR    every stack of every project in DIR (a subdirectory with a
                               Pulumi.json, Pulumi.yaml or Pulumi.yml)
                               (none of the three: --project .)
         --parallel N          stacks checked at once (default 4)
         --format F            the report on stdout: table (default), markdown (a CI job summary
                               or pull-request comment), json
         --junit FILE          also write JUnit XML: a testcase per stack, drift a failure, a stack
                               that could not be checked an error
         --remediate           then \`pulumi up --refresh\` the drifted stacks only, after saying
                               which; asks first unless --yes (needs a write key)
         --yes                 do not ask (CI)
         --unmanaged           also list the objects on the stacks' services that none of the
                               checked stacks holds (after a restore, what a stack removed since
                               the backup; anything made by hand), each with its type, id,
                               creation time and the \`pulumi import\` command that takes it;
                               complete only when every stack that deploys to a service is checked;
                               NOT COMPLETE (exit 2) while a project or stack could not be
                               listed, checked or read
         Exit: 0 every stack clean, 1 drift (or, with --unmanaged, an object no checked stack
         holds), 2 an error (a stack not checked, a remediation that failed or was refused, a
         service that could not be listed, an --unmanaged list not complete, a usage error). An
         error wins over drift: the state of a stack that could not be checked is unknown.
         Backend and passphrase as the pulumi CLI finds them in each project's directory
         (PULUMI_BACKEND_URL, else its project file's backend.url, else \`pulumi login\`;
         PULUMI_CONFIG_PASSPHRASE(_FILE), else the empty one).`;

type Format = "table" | "markdown" | "json";
const FORMATS: readonly Format[] = ["table", "markdown", "json"];

const render = (format: Format, report: FleetReport) =>
  format === "json"
    ? renderJson(report)
    : format === "markdown"
      ? renderMarkdown(report)
      : renderTable(report);

/** Asks on the terminal; without one, the answer is no (CI must say --yes). */
async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/**
 * Runs `pulumi-edge drift` with its arguments (after `drift`); the process's exit code. Whatever
 * goes wrong outside a stack's own check (no `pulumi` on PATH, an unwritable --junit file) is
 * exit 2, never 1: a CI job must not read it as drift.
 */
export async function runDrift(argv: string[]): Promise<number> {
  try {
    return await drift(argv);
  } catch (e) {
    if (e instanceof UsageError) return usageExit(COMMAND, e);
    console.error(`${COMMAND}: ${errorMessage(e)}`);
    return EXIT.error;
  }
}

const COMMAND = "pulumi-edge drift";

async function drift(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({
    args: argv,
    allowPositionals: false,
    options: {
      stack: { type: "string", multiple: true, default: [] },
      project: { type: "string", multiple: true, default: [] },
      "projects-dir": { type: "string", multiple: true, default: [] },
      path: { type: "string", default: "fast" },
      parallel: { type: "string", default: "4" },
      format: { type: "string", default: "table" },
      junit: { type: "string" },
      remediate: { type: "boolean", default: false },
      yes: { type: "boolean", default: false },
      unmanaged: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(DRIFT_USAGE);
    return 0;
  }
  const usage = (msg: string) => usageExit(COMMAND, new UsageError(msg));
  const parallel = Number(values.parallel);
  if (!Number.isInteger(parallel) || parallel < 1)
    return usage(`--parallel ${values.parallel}: give a whole number ≥ 1`);
  const path = CHECK_PATHS.find((p) => p === values.path);
  if (path === undefined) return usage(`--path ${values.path}: give one of ${CHECK_PATHS.join(", ")}`);
  const format = FORMATS.find((f) => f === values.format);
  if (format === undefined) return usage(`--format ${values.format}: give one of ${FORMATS.join(", ")}`);
  const selection = {
    stacks: values.stack,
    projects: values.project,
    projectsDirs: values["projects-dir"],
  };
  if (selection.stacks.length + selection.projects.length + selection.projectsDirs.length === 0) {
    if (!isProjectDir("."))
      return usage(
        "no stacks given and no Pulumi project file (Pulumi.json, Pulumi.yaml or Pulumi.yml) here: give --stack DIR:STACK, --project DIR or --projects-dir DIR",
      );
    selection.projects = ["."];
  }

  const progress = (line: string) => process.stderr.write(`drift: ${line}\n`);
  const engine: Engine = { command: await pulumiOnPath(), env: pulumiEnv(), progress, selecting: new Map() };
  const { targets, failures } = await resolveTargets(selection, engine);
  progress(`${targets.length} stack${targets.length === 1 ? "" : "s"} to check, ${parallel} at a time`);
  const reads = stackReads(engine);
  const stacks: StackReport[] = [...(await checkAll(targets, parallel, engine, path, reads)), ...failures];
  const report: FleetReport = { stacks };

  const drifted = stacks.filter((s) => s.verdict === "drifted");
  if (values.remediate && drifted.length > 0) await remediate(drifted, parallel, engine, values.yes, reads);
  if (values.unmanaged) {
    progress("listing the objects no checked stack holds");
    report.unmanaged = await findUnmanaged(targets, stacks, reads, engine, parallel);
  }

  process.stdout.write(render(format, report));
  if (values.junit) {
    const file = resolve(values.junit);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, renderJunit(report));
    progress(`JUnit report written to ${values.junit}`);
  }
  return exitCode(report);
}

/** `up --refresh` of the drifted stacks, after saying what it will do; records each outcome. */
async function remediate(
  drifted: StackReport[],
  parallel: number,
  engine: Engine,
  yes: boolean,
  reads: StackReads,
): Promise<void> {
  const plan = [
    `--remediate: \`pulumi up --refresh\` will restore the program's configuration on ${drifted.length} drifted stack${drifted.length === 1 ? "" : "s"}:`,
    ...drifted.map((s) => `  ${stackLabel(s)}: ${s.resources.map((r) => `${r.op} ${r.name}`).join(", ")}`),
  ];
  process.stderr.write(`${plan.join("\n")}\n`);
  if (!yes && !(await confirm("Proceed? [y/N] "))) {
    const why = process.stdin.isTTY
      ? "not confirmed"
      : "no terminal to confirm on: add --yes to remediate in CI";
    for (const s of drifted) s.remediation = { outcome: "skipped", message: why };
    engine.progress(`remediation skipped (${why})`);
    return;
  }
  await pool(drifted, parallel, async (s) => {
    engine.progress(`remediating ${stackLabel(s)}`);
    s.remediation = await remediateStack(s, engine);
    reads.forget(s); // its refresh and update rewrote the state
    engine.progress(
      `${stackLabel(s)}: ${s.remediation.outcome}${s.remediation.message ? `: ${s.remediation.message.split("\n")[0]}` : ""}`,
    );
  });
}
