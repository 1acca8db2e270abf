/**
 * What text the API keeps. Every string a request carries (a field, a list's item, a map's key, a
 * path's identifier, the `Idempotency-Key` header) is checked by the one rule here, and a string
 * that passes is stored and answered byte for byte, on either store, in every field:
 *
 * - **well-formed Unicode**: JSON's `\ud800` escape can spell half of a surrogate pair alone, a
 *   lone surrogate, which is no character and has no UTF-8 form: a store would keep U+FFFD in its
 *   place, and two such strings would then be one. Refused.
 * - **no U+0000 (NUL)**: no header, URL or host name may hold one (HTTP refuses it), PostgreSQL's
 *   text cannot, and C libraries (SQLite's driver among them) end a string there. What the real
 *   API stores it cannot keep either. Refused, never cut.
 *
 * Anything else is kept exactly: every other control character, noncharacters (U+FFFE, U+FFFF),
 * private use, bidi controls, emoji, any length within a field's limits.
 */
import { z } from "zod";

/** The rule in a sentence, for the API's documentation (the OpenAPI document, docs/api.md). */
export const TEXT_RULE_SUMMARY =
  "Every string is kept exactly, byte for byte, in every field; a string holding U+0000 or half of a UTF-16 surrogate pair alone (JSON's `\\ud800` escape can spell one) is refused with a 400 naming its field.";

/** U+0000, or half of a surrogate pair alone (with the `u` flag a whole pair is one code point). */
// eslint-disable-next-line no-control-regex -- U+0000 is what this finds
const NOT_KEPT = /\u0000|\p{Surrogate}/u;

/** Why the API does not keep `s`, as a problem's message; undefined when it keeps it. */
export function textProblem(s: string): string | undefined {
  const found = NOT_KEPT.exec(s);
  if (found === null) return undefined;
  const at = `at UTF-16 offset ${found.index}`;
  if (found[0] === "\u0000")
    return `must not hold U+0000 (NUL, ${at}): the API does not keep it; leave it out`;
  const unit = found[0].charCodeAt(0).toString(16);
  return `must be well-formed Unicode: it holds half of a surrogate pair alone (\\u${unit}, ${at}), which is no character; send the whole character or leave it out`;
}

/** Whether the API keeps `s` exactly (see textProblem). */
export const isKeptText = (s: string): boolean => !NOT_KEPT.test(s);

/** Reads of stored values in progress (see readStored). */
let readingStored = 0;

/**
 * Runs `parse` (a schema's parse, which is synchronous) on a value a store holds: the rule is
 * what a request may send, and a value stored before it existed is read as it was written.
 */
export function readStored<T>(parse: () => T): T {
  readingStored++;
  try {
    return parse();
  } finally {
    readingStored--;
  }
}

/**
 * The one check of the rule, shared by every string schema of a request (`keptText`): a test
 * walks the operations' request schemas and finds it on each string.
 */
export const TEXT_RULE = z.superRefine<string>((s, ctx) => {
  if (readingStored > 0) return;
  const problem = textProblem(s);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: s });
});

/** A string of a request: the API keeps it exactly (TEXT_RULE). */
export const keptText = (params?: Parameters<typeof z.string>[0]) => z.string(params).check(TEXT_RULE);
