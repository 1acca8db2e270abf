/**
 * Check failures in the form the engine prints, for both faces. The engine (3.259) shows a failure
 * as `property <p> value {<v>} has a problem: <reason>`, <v> being the top-level input named <p>:
 * for a nested path (`circuitBreaker.numBuckets`) it finds none and prints `{<nil>}`. So a nested
 * failure names its top-level property, and its reason the rest of the path and the bad value
 * (`numBuckets is 500: must be between 1 and 128`). A secret value is never repeated: neither one
 * the program marked (each face says how it sees one) nor a secret leaf (./leaves), which the
 * dynamic face receives unmarked; nor is a failure put where the engine would print one.
 */
import { type CheckFailure, isProps, type Props } from "./check";
import { type LeafPath, leafRelation, mapLeaves } from "./leaves";

/** How a face tells what is secret in the inputs it was given. */
export interface SecretsSeen {
  /** A value the program marked secret, as the face receives it (never one for the dynamic face). */
  isSecretWrapper: (v: unknown) => boolean;
  /** The resource's secret leaves: secret whatever the program marked. */
  leaves: readonly LeafPath[];
}

const SEGMENT = /^(?:\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\])/;

/** `a.b[0]["X-Y"]` → ["a", "b", 0, "X-Y"]; undefined when it is not such a path. */
function segments(path: string): (string | number)[] | undefined {
  const out: (string | number)[] = [];
  for (let rest = path; rest;) {
    const m = SEGMENT.exec(rest);
    if (!m) return undefined;
    out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3]!) as string)));
    rest = rest.slice(m[0].length);
  }
  return out;
}

const MAX_VALUE = 80;
const HIDDEN = "[secret]";

/** The value at `path` in the news as given, for a message: secrets (marked, or leaves) hidden. */
function shown(news: unknown, path: (string | number)[], seen: SecretsSeen): string | undefined {
  const relation = leafRelation(path, seen.leaves);
  if (relation.secret) return HIDDEN;
  let v = news;
  for (const seg of path) {
    if (seen.isSecretWrapper(v)) return HIDDEN;
    if (Array.isArray(v) && typeof seg === "number") v = v[seg];
    else if (isProps(v) && typeof seg === "string") v = v[seg];
    else return undefined;
  }
  if (seen.isSecretWrapper(v)) return HIDDEN;
  if (v === undefined) return undefined;
  const value = isProps(v) ? mapLeaves(v, relation.below, () => HIDDEN) : v;
  const text = printed(value, seen) ?? typeof v;
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE)}…` : text;
}

/**
 * A value as JSON for a message, secrets hidden; undefined for what JSON cannot say (a cycle). A
 * program may hand a dynamic resource any JavaScript value: a BigInt reads as its digits.
 */
function printed(value: unknown, seen: SecretsSeen): string | undefined {
  try {
    return JSON.stringify(value, (_k, x: unknown) =>
      seen.isSecretWrapper(x) ? HIDDEN : typeof x === "bigint" ? `${x}n` : x,
    );
  } catch {
    return undefined;
  }
}

/**
 * Whether the engine, printing the top-level input `top` as it has it, would show a secret leaf
 * in plaintext: one present, not empty, and not marked (the program's own value, unmarked).
 */
function exposes(news: unknown, top: string, seen: SecretsSeen): boolean {
  if (!isProps(news)) return false;
  let exposed = false;
  const walkable = (v: unknown): v is Props => isProps(v) && !seen.isSecretWrapper(v);
  const leaves = seen.leaves.filter(([head]) => head === top);
  mapLeaves(news, leaves, (v) => (exposed ||= !seen.isSecretWrapper(v) && holdsText(v)), walkable);
  return exposed;
}

/** Whether a value would print some text: a credential is a string (a module given as `false` holds none). */
const holdsText = (v: unknown): boolean =>
  typeof v === "string"
    ? v !== ""
    : Array.isArray(v)
      ? v.some(holdsText)
      : isProps(v) && Object.values(v).some(holdsText);

/**
 * The failures as the engine should report them against `news` (the inputs as the engine sent
 * them). Where the engine would print a credential with the property's value, the failure names
 * no property (the engine then prints `has a problem: <path> is [secret]: <reason>`).
 */
export function engineFailures(failures: CheckFailure[], news: unknown, seen: SecretsSeen): CheckFailure[] {
  return failures.map((f) => {
    const path = segments(f.property);
    const top = path?.[0];
    if (!path || typeof top !== "string") return f;
    const value = path.length > 1 ? shown(news, path, seen) : undefined;
    const is = value === undefined ? "" : ` is ${value}`;
    if (exposes(news, top, seen)) return { property: "", reason: `${f.property}${is}: ${f.reason}` };
    if (path.length < 2) return f;
    const rest = f.property.slice(top.length).replace(/^\./, "");
    return { property: top, reason: `${rest}${is}: ${f.reason}` };
  });
}
