/**
 * The provider's authorship line, defined once: attribution.ts writes it into the engine's
 * warnings on refresh, `pulumi-edge drift` (drift/report.ts) reads it back. One line per drifted
 * field or object:
 *
 *   <kind> <name>: [<field> ]<changed|deleted|created> out of band[ with its edge <id>] at <time> by key "<key>" (request <id>)
 *
 *   route shop-r2: backend.backendId changed out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_…)
 *   route shop-r2: compression deleted out of band at 2026-11-25T12:03:40Z by key "ops-console" (request op_…)
 *   route shop-r2: deleted out of band with its edge edghts_… at 2026-11-25T12:04:02Z by key "ops-console" (request op_…)
 *
 * Where the service's trail cannot prove who made a drift because it does not reach back to the
 * stack's own last change to the object (a store restored from a backup, events pruned by
 * retention, a trail reset), the line names no key and says why instead:
 *
 *   <kind> <name>: [<field> ]<changed|deleted|created> out of band, author unknown: the service's history does not reach the stack's last change (request <id>): restored or pruned?
 *
 * The key is always a JSON string. The name and the other fields are written bare when they can
 * be read back unambiguously (the common case, so the line stays what people and tools already
 * read), else as JSON strings: a service or a program may hand us any text, and a line break or
 * a quote in it must neither split the line nor forge another author.
 */

/** The kinds of object a line is about, as the lifecycles name them. */
export const AUTHOR_LABELS = ["route", "HTTPS edge", "TLS edge", "IP restriction of TLS edge"] as const;
export type AuthorLabel = (typeof AUTHOR_LABELS)[number];

/** What was done out of band: a field changed; a module or object deleted; one added. */
export type AuthorVerb = "changed" | "deleted" | "created";

/** What every line says before its author: which object, which field, what was done. */
interface LineHead {
  label: AuthorLabel;
  /** The resource's name (its URN's last part), else the object's id. */
  name: string;
  /** The field or module path as the program names it; absent: the whole object. */
  field?: string;
  verb: AuthorVerb;
}

export interface AuthorLine extends LineHead {
  /** A route deleted with its edge: the edge's id. */
  withEdge?: string;
  /** RFC 3339 (to the second as the provider writes it). */
  at: string;
  /** The name of the API key that made the change; "(none)" when the service took no key. */
  key: string;
  /** The service's Request-Id of that change; "(none)" when the event has none. */
  request: string;
}

/** Characters that would end the line, hide in it or not survive UTF-8 (lone surrogates). */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;
/**
 * A field written bare: no space or quote (the parser's bare token), nothing unsafe, and no
 * trailing ":" (else `a: b: changed` would read as the name "a: b" with no field).
 */
const bareToken = (s: string) => /^[^\s"]+$/u.test(s) && !s.endsWith(":") && !UNSAFE.test(s);
/** A name written bare: anything on one line that does not start with a quote or pad itself. */
const bareName = (s: string) => s !== "" && s.trim() === s && !s.startsWith('"') && !UNSAFE.test(s);

const token = (s: string) => (bareToken(s) ? s : JSON.stringify(s));

/**
 * A drift whose author the trail cannot prove: the trail of the object ends before the stack's
 * last change to it, so no event in it is known to be newer than that change.
 */
export interface UnattributedLine extends LineHead {
  /** The `Request-Id` of the stack's last change to the object, which the trail does not reach. */
  since: string;
}

/** What an unattributed line says after "author unknown: ", around the stack's request id. */
export const UNREACHED = {
  before: "the service's history does not reach the stack's last change (request ",
  after: "): restored or pruned?",
} as const;

/** The reason an unattributed line gives, as the line and `pulumi-edge drift` show it. */
export const unreachedReason = (since: string): string =>
  `${UNREACHED.before}${token(since)}${UNREACHED.after}`;

/** `<kind> <name>: [<field> ]<verb> out of band`: the start every line shares. */
function head(a: LineHead): string {
  const name = bareName(a.name) ? a.name : JSON.stringify(a.name);
  const field = a.field === undefined ? "" : `${token(a.field)} `;
  return `${a.label} ${name}: ${field}${a.verb} out of band`;
}

/** The line for `a`. */
export function formatAuthorLine(a: AuthorLine): string {
  const edge = a.withEdge === undefined ? "" : ` with its edge ${token(a.withEdge)}`;
  return `${head(a)}${edge} at ${token(a.at)} by key ${JSON.stringify(a.key)} (request ${token(a.request)})`;
}

/** The line for a drift without a provable author. */
export function formatUnattributedLine(a: UnattributedLine): string {
  return `${head(a)}, author unknown: ${unreachedReason(a.since)}`;
}

const QUOTED = String.raw`"(?:[^"\\]|\\.)*"`;
const TOKEN = `${QUOTED}|[^\\s"]+`;
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
// The name is greedy: the tail after it has a fixed form, so the last ": " that leaves a whole
// tail ends the name, whatever ": " the name itself holds.
const HEAD =
  `^(${AUTHOR_LABELS.map(escapeRegex).join("|")}) (${QUOTED}|[^"].*): ` +
  `(?:(${TOKEN}) )?(changed|deleted|created) out of band`;
const LINE = new RegExp(
  `${HEAD}(?: with its edge (${TOKEN}))? at (${TOKEN}) by key (${QUOTED}) \\(request (${TOKEN})\\)$`,
  "u",
);
const UNATTRIBUTED_LINE = new RegExp(
  `${HEAD}, author unknown: ${escapeRegex(UNREACHED.before)}(${TOKEN})${escapeRegex(UNREACHED.after)}$`,
  "u",
);

/** A quoted field's text; undefined when the quotes hold no JSON string or the field is absent. */
function unquote(s: string | undefined): string | undefined {
  if (s === undefined || !s.startsWith('"')) return s;
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

const isAuthorLabel = (s: string | undefined): s is AuthorLabel => AUTHOR_LABELS.some((l) => l === s);
const isAuthorVerb = (s: string | undefined): s is AuthorVerb =>
  s === "changed" || s === "deleted" || s === "created";

/** One line read back; undefined when it is not an authorship line. */
export function parseAuthorLine(line: string): AuthorLine | undefined {
  const m = LINE.exec(line.trim());
  if (!m) return undefined;
  const [, label, rawName, rawField, verb, rawEdge, rawAt, rawKey, rawRequest] = m;
  // The pattern makes every group but the field and the edge present, the label one of
  // AUTHOR_LABELS and the verb one of three; the checks only tell the compiler so.
  if (!isAuthorLabel(label) || !isAuthorVerb(verb)) return undefined;
  const name = unquote(rawName);
  const field = unquote(rawField);
  const withEdge = unquote(rawEdge);
  const at = unquote(rawAt);
  const key = unquote(rawKey);
  const request = unquote(rawRequest);
  if (name === undefined || at === undefined || key === undefined || request === undefined) return undefined;
  if ((rawField !== undefined && field === undefined) || (rawEdge !== undefined && withEdge === undefined))
    return undefined;
  return {
    label,
    name,
    ...(field === undefined ? {} : { field }),
    verb,
    ...(withEdge === undefined ? {} : { withEdge }),
    at,
    key,
    request,
  };
}

/** Every authorship line of a warning's text (one or more lines); other lines are skipped. */
export function parseAuthorLines(message: string): AuthorLine[] {
  return message.split(/\r?\n/).flatMap((l) => parseAuthorLine(l) ?? []);
}

/** One unattributed line read back; undefined when it is not one. */
export function parseUnattributedLine(line: string): UnattributedLine | undefined {
  const m = UNATTRIBUTED_LINE.exec(line.trim());
  if (!m) return undefined;
  const [, label, rawName, rawField, verb, rawSince] = m;
  if (!isAuthorLabel(label) || !isAuthorVerb(verb)) return undefined;
  const name = unquote(rawName);
  const field = unquote(rawField);
  const since = unquote(rawSince);
  if (name === undefined || since === undefined) return undefined;
  if (rawField !== undefined && field === undefined) return undefined;
  return { label, name, ...(field === undefined ? {} : { field }), verb, since };
}

/** Every unattributed line of a warning's text; other lines are skipped. */
export function parseUnattributedLines(message: string): UnattributedLine[] {
  return message.split(/\r?\n/).flatMap((l) => parseUnattributedLine(l) ?? []);
}
