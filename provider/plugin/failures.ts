/**
 * Check failures in the form the engine prints. The engine (3.259) shows a failure as
 * `property <p> value {<v>} has a problem: <reason>`, <v> being the top-level input named <p>:
 * for a nested path (`circuitBreaker.numBuckets`) it finds none and prints `{<nil>}`. So a nested
 * failure names its top-level property, and its reason the rest of the path and the bad value
 * (`numBuckets is 500: must be between 1 and 128`); a secret value is not repeated.
 */
import { type CheckFailure, isProps } from "../model/check";
import { isSecret } from "./secrets";

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

/** The value at `path` in the news as given (secrets still wrapped), for a message. */
function shown(news: unknown, path: (string | number)[]): string | undefined {
  let v = news;
  for (const seg of path) {
    if (isSecret(v)) return "[secret]";
    if (Array.isArray(v) && typeof seg === "number") v = v[seg];
    else if (isProps(v) && typeof seg === "string") v = v[seg];
    else return undefined;
  }
  if (isSecret(v)) return "[secret]";
  if (v === undefined) return undefined;
  const text = JSON.stringify(v) ?? typeof v;
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE)}…` : text;
}

/** The failures as the engine should report them against `news` (the inputs as the engine sent them). */
export function engineFailures(failures: CheckFailure[], news: unknown): CheckFailure[] {
  return failures.map((f) => {
    const path = segments(f.property);
    const top = path?.[0];
    if (!path || path.length < 2 || typeof top !== "string") return f;
    const rest = f.property.slice(top.length).replace(/^\./, "");
    const value = shown(news, path);
    return { property: top, reason: `${rest}${value === undefined ? "" : ` is ${value}`}: ${f.reason}` };
  });
}
