import type { z } from "zod";
import type { Problem } from "./errors";

/**
 * Renders a JSON path the way error messages and `details.field` show it:
 * `circuit_breaker.num_buckets`, `ip_policy_ids[2]`, `request_headers.add["X-Foo"]`.
 */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (typeof seg === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

/** Turns zod issues into one problem per bad field, each naming the field's JSON path. */
export function issuesToProblems(
  issues: ReadonlyArray<z.core.$ZodIssue>,
  prefix: PropertyKey[] = [],
): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        problems.push({
          field: formatPath([...path, key]),
          msg: "unknown field (check the spelling; unknown fields are never ignored)",
        });
      }
    } else if (issue.code === "invalid_key" && issue.issues.length > 0) {
      // A bad map key (a header name): say what is wrong with the key, at the key's path.
      for (const inner of issue.issues) problems.push({ field: formatPath(path), msg: inner.message });
    } else if (issue.code === "invalid_union" && issue.errors.length > 0) {
      // Report the alternative that got furthest rather than a generic "invalid input".
      const best = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
      problems.push(...issuesToProblems(best, path));
    } else {
      problems.push({ field: formatPath(path), msg: issue.message });
    }
  }
  return problems;
}
