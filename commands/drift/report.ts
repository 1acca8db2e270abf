/**
 * `pulumi-edge drift`: what a fleet's check found, and its renderings (terminal table, Markdown,
 * JSON, JUnit XML). Pure: no engine, no I/O, so every rendering is tested on values alone.
 *
 * Every string in a report may come from someone else (a stack's name, a service's field
 * values, the engine's errors), so each rendering makes sure its reader still reads it: JSON
 * escapes by itself; the others show what they cannot hold as `\uXXXX` (shownLine, shownText)
 * and quote the rest as their format asks.
 */
import { isSecretWrapper } from "../../provider/engine/secrets";
import {
  type AuthorLine,
  parseAuthorLines,
  parseUnattributedLines,
  type UnattributedLine,
  unreachedReason,
} from "../../provider/lifecycle/authorship";

/** One stack's verdict. */
export type Verdict = "clean" | "drifted" | "error";

/** A field whose live value differs from the stack's. Values are display text; secrets are `[secret]`. */
export interface FieldChange {
  path: string;
  /** What the stack holds (absent: the field is new on the service). */
  from?: string;
  /** What the service holds now (absent: the field is gone from the service). */
  to?: string;
}

/** Who changed a field, as the provider reported it on refresh (parseAuthorWarnings). */
export interface Author {
  /** The field or module path; "" for the whole resource (deleted out of band). */
  field: string;
  at: string;
  key: string;
  request: string;
  /** What the key did when it did not change the field: deleted it (or the resource), or created it. */
  change?: "deleted" | "created";
  /** A route deleted with its edge: the edge's id. */
  edge?: string;
}

/**
 * A field (or the whole resource) whose author the provider could not prove, as it reported on
 * refresh: the service's trail of the object does not reach the stack's last change to it.
 */
export interface Unattributed {
  /** The field or module path; "" for the whole resource (gone). */
  field: string;
  /** What was done when the field was not changed: deleted (or the resource gone), or created. */
  change?: "deleted" | "created";
  /** The `Request-Id` of the stack's last change to the object, which the trail does not reach. */
  since: string;
  /** Why there is no author, as the provider says it. */
  reason: string;
}

export interface DriftedResource {
  urn: string;
  /** The resource's name in the program (the URN's last segment). */
  name: string;
  type: string;
  /** The engine's step: update, create (deleted out of band), delete, replace. */
  op: string;
  fields: FieldChange[];
  authors: Author[];
  /** Fields the provider said it cannot name an author for, and why (absent: none). */
  unattributed?: Unattributed[];
}

/** What `--remediate` did to a drifted stack. */
export interface Remediation {
  outcome: "restored" | "refused" | "failed" | "skipped";
  /** The engine's or service's reason, for refused and failed. */
  message?: string;
}

export interface StackReport {
  /** The project directory, as given (or found). */
  dir: string;
  stack: string;
  verdict: Verdict;
  resources: DriftedResource[];
  /** The engine's message, for verdict "error". */
  error?: string;
  remediation?: Remediation;
  seconds: number;
  /** What judged it (see run's CheckPath): `fast`, `refresh` or `engine`. */
  path?: "fast" | "refresh" | "engine";
  /** Why the fast path handed it to the engine, when it did. */
  fallback?: string;
}

/** An object on a service that none of the checked stacks holds (`--unmanaged`). */
export interface UnmanagedObject {
  /** The packaged provider's type name: HttpsEdge, HttpsEdgeRoute, TlsEdge, TlsEdgeIpRestriction. */
  type: string;
  /** The id `pulumi import` takes (a route's `<edgeId>/<routeId>`; a TLS IP restriction's, its edge's). */
  id: string;
  /** The name `pulumi-edge export` gives it (deployEdgeConfig's entry name). */
  name: string;
  /** When the service made it; absent for a TLS IP restriction (the service keeps none for a module). */
  createdAt?: string;
  /** What it is, for a reader: an edge's description or hosts, a route's match, a module's policies. */
  summary: string;
  /** The command that takes it into a stack of the packaged provider. */
  importCommand: string;
}

/** One service the checked stacks deploy to, and what on it none of them holds. */
export interface UnmanagedService {
  /** Its URL, or the embedded service's data directory. */
  service: string;
  objects: UnmanagedObject[];
  /** Why it could not be listed (then `objects` is empty). */
  error?: string;
}

/** What `--unmanaged` found: per service, the objects no checked stack holds. */
export interface Unmanaged {
  /** How many stacks were checked: an object is unmanaged only among them. */
  stacks: number;
  /**
   * Whether every project and stack found was listed, checked and read, and every service they
   * deploy to is known: never while a caveat stands. Only then may what is listed be deleted.
   */
  complete: boolean;
  services: UnmanagedService[];
  /**
   * What may make a listed object one a stack holds after all: a project whose stacks could not
   * be listed, a stack that could not be checked or read, an interrupted update, a service unknown.
   */
  caveats: string[];
}

export interface FleetReport {
  stacks: StackReport[];
  /** With `--unmanaged`: the objects no checked stack holds. */
  unmanaged?: Unmanaged;
}

/** Exit codes: what a CI job branches on. */
export const EXIT = { clean: 0, drift: 1, error: 2 } as const;

/**
 * 0 when every stack is clean, 1 when one drifted (restored or not) or a service holds objects no
 * checked stack holds (`--unmanaged`), 2 when one could not be checked, a remediation failed, a
 * service could not be listed or the list of unmanaged objects is not complete. An error wins over
 * drift: a stack that could not be checked may have drifted too, so the fleet's state is unknown,
 * which is worse than known drift.
 */
export function exitCode(report: FleetReport): number {
  const failedRemediation = (s: StackReport) =>
    s.remediation?.outcome === "failed" || s.remediation?.outcome === "refused";
  const services = report.unmanaged?.services ?? [];
  if (report.stacks.some((s) => s.verdict === "error" || failedRemediation(s))) return EXIT.error;
  if (services.some((s) => s.error !== undefined)) return EXIT.error;
  if (report.unmanaged && !report.unmanaged.complete) return EXIT.error;
  if (report.stacks.some((s) => s.verdict === "drifted")) return EXIT.drift;
  if (services.some((s) => s.objects.length > 0)) return EXIT.drift;
  return EXIT.clean;
}

// ---------------------------------------------------------------------------------------------
// The provider's authorship warning (provider/lifecycle/authorship.ts writes and reads it).

/** An authorship line as the report keeps it: the field (or the whole resource) and who. */
export function authorOf(line: AuthorLine): Author {
  return {
    field: line.field ?? "",
    at: line.at,
    key: line.key,
    request: line.request,
    ...(line.verb === "changed" ? {} : { change: line.verb }),
    ...(line.withEdge === undefined ? {} : { edge: line.withEdge }),
  };
}

/**
 * The authors in a diagnostic's text, one per authorship line (changed, deleted or created out
 * of band); with `name`, only the lines about the resource of that name. Other lines are skipped.
 */
export function parseAuthorWarnings(message: string, name?: string): Author[] {
  return parseAuthorLines(message)
    .filter((l) => name === undefined || l.name === name)
    .map(authorOf);
}

/** An unattributed line as the report keeps it. */
export function unattributedOf(line: UnattributedLine): Unattributed {
  return {
    field: line.field ?? "",
    ...(line.verb === "changed" ? {} : { change: line.verb }),
    since: line.since,
    reason: unreachedReason(line.since),
  };
}

/** The fields a diagnostic's text says have no provable author (with `name`: of that resource). */
export function parseUnattributedWarnings(message: string, name?: string): Unattributed[] {
  return parseUnattributedLines(message)
    .filter((l) => name === undefined || l.name === name)
    .map(unattributedOf);
}

/**
 * What the provider said of a resource's authors in its warnings (with `name`: only the lines
 * about the resource of that name): `unattributed` only when some field has no provable author.
 */
export function attributionOf(
  messages: readonly string[],
  name?: string,
): Pick<DriftedResource, "authors" | "unattributed"> {
  const authors = messages.flatMap((m) => parseAuthorWarnings(m, name));
  const unattributed = messages.flatMap((m) => parseUnattributedWarnings(m, name));
  return { authors, ...(unattributed.length > 0 ? { unattributed } : {}) };
}

const within = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`);

/** The authors of one field: exact path, or a warning about an enclosing or enclosed path. */
export function authorsOf<A extends { field: string }>(field: string, authors: readonly A[]): A[] {
  return authors.filter((a) => within(field, a.field) || within(a.field, field));
}

// ---------------------------------------------------------------------------------------------
// Values as shown: secrets never.

export const SECRET_SHOWN = "[secret]";

/**
 * Whether the report shows `value` as `[secret]`: the engine's wrapper of a secret
 * (isSecretWrapper), or a value already shown as one.
 */
export const isShownAsSecret = (value: unknown): boolean => value === SECRET_SHOWN || isSecretWrapper(value);

const MAX_SHOWN = 80;

/** The first `n` code points of `text` (a cut never splits a surrogate pair). */
const codePoints = (text: string, n: number) => Array.from(text).slice(0, n).join("");

/** A value as the report shows it: JSON, secrets as [secret] at any depth, long values cut. */
export function showValue(value: unknown): string {
  const masked = (v: unknown): unknown => {
    if (isShownAsSecret(v)) return SECRET_SHOWN;
    if (Array.isArray(v)) return v.map(masked);
    if (typeof v === "object" && v !== null)
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
    return v;
  };
  const m = masked(value);
  const text = m === SECRET_SHOWN ? SECRET_SHOWN : JSON.stringify(m);
  return text.length > MAX_SHOWN ? `${codePoints(text, MAX_SHOWN - 1)}…` : text;
}

export type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !isShownAsSecret(v);

/**
 * The leaf fields that differ between the stack's and the live properties, under the top-level
 * keys `keys` (the engine's `diffs`; every key when it gave none). Internal keys (`__provider`)
 * are not fields. A secret is compared, never shown: a changed secret is one `[secret]` change.
 */
export function changedFields(before: Plain, after: Plain, keys?: readonly string[]): FieldChange[] {
  const out: FieldChange[] = [];
  const walk = (path: string, a: unknown, b: unknown) => {
    if (isPlain(a) && isPlain(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort())
        walk(`${path}.${k}`, a[k], b[k]);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach((x, i) => walk(`${path}[${i}]`, x, b[i]));
      return;
    }
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    out.push({
      path,
      ...(a === undefined ? {} : { from: showValue(a) }),
      ...(b === undefined ? {} : { to: showValue(b) }),
    });
  };
  const top = keys && keys.length > 0 ? keys : [...new Set([...Object.keys(before), ...Object.keys(after)])];
  for (const k of [...top].sort()) {
    if (k.startsWith("__")) continue;
    const found = out.length;
    walk(k, before[k], after[k]);
    // A property the engine said changed where every value looks the same: its secrets differ,
    // shown alike ([secret]) on both sides. Named, as a diff of the values themselves names them.
    if (out.length === found && keys?.includes(k)) {
      for (const path of secretPaths(k, before[k], after[k]))
        out.push({ path, from: SECRET_SHOWN, to: SECRET_SHOWN });
    }
  }
  return out;
}

/**
 * The fields of a resource the engine changed though every value it showed looks the same (a
 * dynamic resource's diff names no property): secrets, which it shows alike ([secret]) on both
 * sides. Those its authors name, else every secret it holds.
 */
export function secretFields(
  before: Plain,
  after: Plain,
  authors: readonly { field: string }[],
): FieldChange[] {
  const all = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => !k.startsWith("__"))
    .sort()
    .flatMap((k) => secretPaths(k, before[k], after[k]));
  const named = all.filter((p) => authors.some((a) => a.field === p));
  return (named.length > 0 ? named : all).map((path) => ({ path, from: SECRET_SHOWN, to: SECRET_SHOWN }));
}

/** The paths under `path` where either value holds a secret (the engine's wrapper, or shown as such). */
function secretPaths(path: string, a: unknown, b: unknown): string[] {
  if (isShownAsSecret(a) || isShownAsSecret(b)) return [path];
  const keys = new Set([...(isPlain(a) ? Object.keys(a) : []), ...(isPlain(b) ? Object.keys(b) : [])]);
  return [...keys]
    .sort()
    .flatMap((k) =>
      secretPaths(`${path}.${k}`, isPlain(a) ? a[k] : undefined, isPlain(b) ? b[k] : undefined),
    );
}

// ---------------------------------------------------------------------------------------------
// Text as a reader can take it.

/**
 * What no rendering shows as it is: control characters (terminal escapes, and XML 1.0 cannot
 * hold C0 at all), lone surrogates (not UTF-8), non-characters (U+FFFE, U+FFFF, …: XML rejects
 * U+FFFE and U+FFFF), bidirectional controls (they reorder what a reader sees) and Unicode's line
 * and paragraph separators.
 */
const UNSHOWABLE = /[\p{Cc}\p{Cs}\p{Noncharacter_Code_Point}\p{Bidi_Control}\u2028\u2029]/gu;

/** `\u001B`, `\u{1FFFF}`: a character shown by its code point. */
function codePoint(c: string): string {
  const cp = c.codePointAt(0)!;
  const hex = cp.toString(16).toUpperCase();
  return cp > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/** Text on one line: line breaks and tabs as spaces, anything unshowable as `\uXXXX`. */
export function shownLine(text: string): string {
  return text.replace(/\r\n|[\r\n\t\u2028\u2029]/g, " ").replace(UNSHOWABLE, codePoint);
}

/** Text of several lines (an engine's error): `\n` between lines, tabs kept, the rest as shownLine. */
export function shownText(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .replace(UNSHOWABLE, (c) => (c === "\n" || c === "\t" ? c : codePoint(c)));
}

// ---------------------------------------------------------------------------------------------
// Renderings.

export const stackLabel = (s: { dir: string; stack: string }) => `${s.dir}:${s.stack}`;

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;

function counts(report: FleetReport) {
  const n = (v: Verdict) => report.stacks.filter((s) => s.verdict === v).length;
  return { clean: n("clean"), drifted: n("drifted"), error: n("error"), total: report.stacks.length };
}

/** How many objects `--unmanaged` found no checked stack holds (undefined: not asked). */
const unmanagedCount = (report: FleetReport): number | undefined =>
  report.unmanaged?.services.reduce((n, s) => n + s.objects.length, 0);

/** One line: "3 stacks: 1 drifted, 1 clean, 1 error" (with `--unmanaged`: "; 2 unmanaged objects"). */
export function summaryLine(report: FleetReport): string {
  const c = counts(report);
  const unmanaged = unmanagedCount(report);
  return (
    `${plural(c.total, "stack")}: ${c.drifted} drifted, ${c.clean} clean, ${c.error} error` +
    (unmanaged === undefined ? "" : `; ${plural(unmanaged, "unmanaged object")}`)
  );
}

/**
 * What the list of unmanaged objects can be trusted for: said once above it in every rendering.
 * Not complete while a caveat stands: the restore steps (docs/operating.md) delete what it lists.
 */
export function unmanagedScope(u: Unmanaged): string {
  const held = `objects on the service that none of the ${plural(u.stacks, "checked stack")} holds`;
  return u.complete
    ? `${held}: every project and stack found was read, so the list is complete unless a stack not given ` +
        "here deploys to the service (an object of a stack not checked is listed too)"
    : `NOT COMPLETE, delete nothing on it: ${held}, but what could not be listed, checked or read ` +
        `(${plural(u.caveats.length, "caveat")} below) may hold some of them`;
}

/** An unmanaged object on one line: its type, id, creation time and what it is. */
const unmanagedLine = (o: UnmanagedObject) =>
  `${o.type} ${o.id}${o.createdAt === undefined ? "" : ` created ${o.createdAt}`}: ${o.summary}`;

/**
 * "by key "ops-console" at 2026-…Z (request req_…)" ("deleted by key …", "deleted with its edge
 * edghts_… by key …", "created by key …"), or "author unknown".
 */
export function showAuthors(authors: readonly Author[]): string {
  if (authors.length === 0) return "author unknown";
  const what = (a: Author) =>
    a.change === undefined
      ? ""
      : a.edge === undefined
        ? `${a.change} `
        : `${a.change} with its edge ${a.edge} `;
  return authors
    .map((a) => `${what(a)}by key ${JSON.stringify(a.key)} at ${a.at} (request ${a.request})`)
    .join("; ");
}

/**
 * Who changed `field` of `r` (see showAuthors), or why nobody can be named:
 * "author unknown: the service's history does not reach …: restored or pruned?" ("deleted,
 * author unknown: …" for a whole resource).
 */
export function showWho(field: string, r: DriftedResource): string {
  const authors = authorsOf(field, r.authors);
  const unknown = authorsOf(field, r.unattributed ?? []);
  if (authors.length > 0 || unknown.length === 0) return showAuthors(authors);
  const what = field === "" && unknown.some((u) => u.change === "deleted") ? "deleted, " : "";
  return `${what}author unknown: ${[...new Set(unknown.map((u) => u.reason))].join("; ")}`;
}

/** A resource's drift line by line: each field with its authors; a fieldless one (deleted out of band) its own. */
function fieldLines(r: DriftedResource): string[] {
  if (r.fields.length === 0)
    return r.authors.length > 0 || (r.unattributed ?? []).length > 0
      ? [`whole resource: ${showWho("", r)}`]
      : [];
  return r.fields.map((f) => `${f.path}: ${showChange(f)}, ${showWho(f.path, r)}`);
}

const showChange = (f: FieldChange) =>
  f.from === undefined
    ? `added ${f.to}`
    : f.to === undefined
      ? `removed (was ${f.from})`
      : `${f.from} => ${f.to}`;

function remediationText(r: Remediation): string {
  return r.message ? `${r.outcome}: ${r.message}` : r.outcome;
}

function detailOf(s: StackReport): string {
  if (s.verdict === "error") return firstLine(s.error ?? "");
  if (s.verdict === "drifted") return plural(s.resources.length, "resource");
  return "";
}

/** What judged a stack, and why the engine where the fast path could not. */
const judgedBy = (s: StackReport): string =>
  s.fallback ? `${s.path ?? ""} (${s.fallback})` : (s.path ?? "");

const firstLine = (text: string) => text.split(/\r\n|\r|\n/).find((l) => l.trim()) ?? "";

/** The terminal table (stdout), then each drifted resource's fields and each error in full. */
export function renderTable(report: FleetReport): string {
  // The PATH column where a check said what judged it; REMEDIATION where one was asked for.
  const paths = report.stacks.some((s) => s.path);
  const rows = report.stacks.map((s) =>
    [
      stackLabel(s),
      s.verdict,
      ...(paths ? [judgedBy(s)] : []),
      detailOf(s),
      s.remediation ? s.remediation.outcome : "",
    ].map(shownLine),
  );
  const header = [
    "STACK",
    "VERDICT",
    ...(paths ? ["PATH"] : []),
    "DETAIL",
    ...(rows.some((r) => r.at(-1)) ? ["REMEDIATION"] : []),
  ];
  const table = [header, ...rows.map((r) => r.slice(0, header.length))];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const lines = table.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd(),
  );
  for (const s of report.stacks) {
    const label = shownLine(stackLabel(s));
    if (s.verdict === "drifted") {
      lines.push("", `${label} drifted:`);
      for (const r of s.resources) {
        lines.push(`  ${shownLine(`${r.op} ${r.name} (${r.type})`)}`, `    ${shownLine(r.urn)}`);
        for (const l of fieldLines(r)) lines.push(`    ${shownLine(l)}`);
      }
    }
    if (s.verdict === "error") {
      lines.push("", `${label} could not be checked:`);
      for (const l of shownText(s.error ?? "").split("\n")) lines.push(`  ${l}`);
    }
    if (s.remediation?.message)
      lines.push("", `${label} remediation ${shownLine(remediationText(s.remediation))}`);
  }
  if (report.unmanaged) lines.push("", ...unmanagedTable(report.unmanaged));
  lines.push("", summaryLine(report));
  return `${lines.join("\n")}\n`;
}

/** The table's section of unmanaged objects: per service, each object and its import command. */
function unmanagedTable(u: Unmanaged): string[] {
  const lines = [`Unmanaged: ${unmanagedScope(u)}.`];
  for (const s of u.services) {
    const service = shownLine(s.service);
    if (s.error !== undefined) {
      lines.push(
        `  ${service} could not be listed:`,
        ...shownText(s.error)
          .split("\n")
          .map((l) => `    ${l}`),
      );
      continue;
    }
    if (s.objects.length === 0) lines.push(`  ${service}: none`);
    else lines.push(`  ${service}: ${plural(s.objects.length, "object")}`);
    for (const o of s.objects)
      lines.push(`    ${shownLine(unmanagedLine(o))}`, `      ${shownLine(o.importCommand)}`);
  }
  for (const c of u.caveats) lines.push(`  caveat: ${shownLine(c)}`);
  return lines;
}

/**
 * Text inside a Markdown table cell: one line; backslashes, pipes and backticks escaped (GFM
 * splits cells at every pipe not after a backslash, before any other parsing, and takes that
 * backslash away).
 */
function cell(text: string): string {
  return shownLine(text).replace(/[\\|`]/g, "\\$&");
}

/**
 * A Markdown code span holding `text` as it is: fenced by more backticks than any run inside,
 * padded when it starts or ends with a backtick or a space (CommonMark strips one space each
 * side); in a table cell its pipes escaped (the table takes the backslash away, the span does
 * not). Empty text is no span.
 */
function code(text: string, inTable = true): string {
  let body = shownLine(text);
  if (body === "") return "";
  if (inTable) body = body.replace(/\|/g, "\\|");
  const fence = "`".repeat(Math.max(0, ...(body.match(/`+/g) ?? []).map((r) => r.length)) + 1);
  const pad = /^[` ]|[` ]$/.test(body) && body.trim() !== "" ? " " : "";
  return `${fence}${pad}${body}${pad}${fence}`;
}

/** A fenced code block holding `text`'s lines as they are: its fence longer than any backtick run in them. */
function codeBlock(text: string): string[] {
  const body = shownText(text);
  const fence = "`".repeat(Math.max(2, ...(body.match(/`+/g) ?? []).map((r) => r.length)) + 1);
  return [fence, body, fence];
}

/** Markdown for a CI job summary or a pull-request comment. */
export function renderMarkdown(report: FleetReport): string {
  const c = counts(report);
  const icon = c.error > 0 ? "🔴" : c.drifted > 0 ? "🟠" : "🟢";
  const out = [`## ${icon} Edge drift: ${summaryLine(report)}`, ""];
  const withRemediation = report.stacks.some((s) => s.remediation);
  const paths = report.stacks.some((s) => s.path);
  out.push(
    `| Stack | Verdict |${paths ? " Path |" : ""} Detail |${withRemediation ? " Remediation |" : ""}`,
    `| --- | --- |${paths ? " --- |" : ""} --- |${withRemediation ? " --- |" : ""}`,
  );
  for (const s of report.stacks) {
    const rem = withRemediation ? ` ${s.remediation ? cell(remediationText(s.remediation)) : ""} |` : "";
    const path = paths ? ` ${cell(judgedBy(s))} |` : "";
    out.push(`| ${code(stackLabel(s))} | ${s.verdict} |${path} ${cell(detailOf(s))} |${rem}`);
  }
  for (const s of report.stacks.filter((x) => x.verdict === "drifted")) {
    out.push("", `### ${code(stackLabel(s), false)} drifted`, "");
    out.push("| Resource | Type | Field | Change | Changed by |", "| --- | --- | --- | --- | --- |");
    for (const r of s.resources) {
      const fields = r.fields.length > 0 ? r.fields : [{ path: "", from: undefined, to: undefined }];
      for (const f of fields) {
        const change = f.path ? showChange(f) : r.op;
        out.push(
          `| ${cell(r.name)} | ${code(r.type)} | ${code(f.path)} | ${cell(change)} | ${cell(showWho(f.path, r))} |`,
        );
      }
    }
  }
  for (const s of report.stacks.filter((x) => x.verdict === "error")) {
    out.push("", `### ${code(stackLabel(s), false)} could not be checked`, "", ...codeBlock(s.error ?? ""));
  }
  if (report.unmanaged) out.push("", ...unmanagedMarkdown(report.unmanaged));
  return `${out.join("\n")}\n`;
}

/** Markdown's section of unmanaged objects: one table of every service's, then what went wrong. */
function unmanagedMarkdown(u: Unmanaged): string[] {
  const out = ["### Unmanaged objects", "", `${cell(unmanagedScope(u))}.`, ""];
  out.push("| Service | Type | Id | Created | What | Import |", "| --- | --- | --- | --- | --- | --- |");
  for (const s of u.services)
    for (const o of s.objects)
      out.push(
        `| ${code(s.service)} | ${code(o.type)} | ${code(o.id)} | ${cell(o.createdAt ?? "")} | ${cell(o.summary)} | ${code(o.importCommand)} |`,
      );
  const notes = [
    ...u.services.flatMap((s) =>
      s.error === undefined ? [] : [`${code(s.service, false)} could not be listed: ${cell(s.error)}`],
    ),
    ...u.caveats.map((c) => `caveat: ${cell(c)}`),
  ];
  if (notes.length > 0) out.push("", ...notes.map((n) => `- ${n}`));
  return out;
}

/** The machine-readable report: the version of this shape, the exit code and every stack. */
export function renderJson(report: FleetReport): string {
  const c = counts(report);
  return `${JSON.stringify(
    {
      version: 1,
      exitCode: exitCode(report),
      summary: {
        stacks: c.total,
        clean: c.clean,
        drifted: c.drifted,
        error: c.error,
        ...(report.unmanaged ? { unmanaged: unmanagedCount(report) } : {}),
      },
      stacks: report.stacks,
      ...(report.unmanaged ? { unmanaged: report.unmanaged } : {}),
    },
    null,
    2,
  )}\n`;
}

/** Markup characters as entities (`>` always: `]]>` may not appear in an element's text). */
const entities = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/**
 * An attribute's value: one line (a parser would turn a tab or line break into a space anyway).
 * XML 1.0 has no character at all, not even a reference, for C0 controls, U+FFFE, U+FFFF or a
 * lone surrogate: shownLine and shownText show them as `\uXXXX`.
 */
const xmlAttr = (text: string) => entities(shownLine(text));
/** An element's text: lines and tabs kept (a CR as a line break, which is what a parser makes of it). */
const xmlText = (text: string) => entities(shownText(text));

/** JUnit XML: one testsuite, one testcase per stack; drift a failure, a broken stack an error. */
export function renderJunit(report: FleetReport): string {
  const c = counts(report);
  const services = report.unmanaged?.services ?? [];
  const incomplete = report.unmanaged?.complete === false ? 1 : 0;
  const tests = c.total + services.length + incomplete;
  const failures = c.drifted + services.filter((s) => s.error === undefined && s.objects.length > 0).length;
  const errors = c.error + services.filter((s) => s.error !== undefined).length + incomplete;
  const time = report.stacks.reduce((t, s) => t + s.seconds, 0);
  const counted = `tests="${tests}" failures="${failures}" errors="${errors}"`;
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="pulumi-edge drift" ${counted} time="${time.toFixed(3)}">`,
    `  <testsuite name="pulumi-edge drift" ${counted} skipped="0" time="${time.toFixed(3)}">`,
  ];
  for (const s of report.stacks) {
    const open = `    <testcase classname="${xmlAttr(s.dir)}" name="${xmlAttr(s.stack)}" time="${s.seconds.toFixed(3)}"`;
    if (s.verdict === "clean") {
      lines.push(`${open}/>`);
      continue;
    }
    lines.push(`${open}>`);
    if (s.verdict === "drifted") {
      const body = s.resources.flatMap((r) => [
        shownLine(`${r.op} ${r.name} (${r.type}) ${r.urn}`),
        ...fieldLines(r).map((l) => `  ${shownLine(l)}`),
      ]);
      if (s.remediation) body.push(shownLine(`remediation ${remediationText(s.remediation)}`));
      lines.push(
        `      <failure type="drift" message="${xmlAttr(`${plural(s.resources.length, "resource")} drifted`)}">${xmlText(body.join("\n"))}</failure>`,
      );
    } else {
      lines.push(
        `      <error type="error" message="${xmlAttr(firstLine(s.error ?? ""))}">${xmlText(s.error ?? "")}</error>`,
      );
    }
    lines.push(`    </testcase>`);
  }
  if (report.unmanaged) lines.push(...unmanagedJunit(report.unmanaged));
  lines.push(`  </testsuite>`, `</testsuites>`);
  return `${lines.join("\n")}\n`;
}

/** JUnit's testcase per service listed: objects no checked stack holds a failure, as drift is. */
function unmanagedJunit(u: Unmanaged): string[] {
  const lines: string[] = [];
  for (const s of u.services) {
    lines.push(`    <testcase classname="unmanaged" name="${xmlAttr(s.service)}" time="0.000">`);
    if (s.error !== undefined) {
      lines.push(
        `      <error type="error" message="${xmlAttr(firstLine(s.error))}">${xmlText(s.error)}</error>`,
      );
    } else if (s.objects.length > 0) {
      const body = [
        shownLine(`${unmanagedScope(u)}.`),
        ...s.objects.flatMap((o) => [shownLine(unmanagedLine(o)), `  ${shownLine(o.importCommand)}`]),
        ...u.caveats.map((c) => shownLine(`caveat: ${c}`)),
      ];
      const message = `${plural(s.objects.length, "object")} no checked stack holds`;
      lines.push(
        `      <failure type="unmanaged" message="${xmlAttr(message)}">${xmlText(body.join("\n"))}</failure>`,
      );
    }
    lines.push(`    </testcase>`);
  }
  if (!u.complete) {
    // The list's own error: what it lists may be held by what could not be read.
    lines.push(
      `    <testcase classname="unmanaged" name="complete" time="0.000">`,
      `      <error type="incomplete" message="${xmlAttr(`${plural(u.caveats.length, "caveat")}: the list is not complete`)}">${xmlText(
        [`${unmanagedScope(u)}.`, ...u.caveats.map((c) => `caveat: ${c}`)].join("\n"),
      )}</error>`,
      `    </testcase>`,
    );
  }
  return lines;
}
