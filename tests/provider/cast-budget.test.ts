/**
 * The type casts of provider/ and sdk/ stay under a budget: `as` assertions (not
 * `as const`) and non-null assertions `!`, counted with the compiler's parser by
 * scripts/count-casts.js. A cast is a place where the types do not flow; a new one should be the
 * exception, so one more than the budget fails here, naming the files with the most. Lower the
 * budget when casts are removed, never raise it to make room.
 */
import { countCasts, countText, ranked } from "../../scripts/count-casts";

/** At most this many `x as T` / `<T>x` (not `as const`) in provider/ and sdk/. */
const AS_BUDGET = 63;
/** At most this many `x!` in provider/ and sdk/. */
const NON_NULL_BUDGET = 31;

const counts = countCasts();

/** The files with the most casts of one kind, for the failure message. */
function worst(kind: "as" | "nonNull"): string {
  return ranked(counts.files)
    .filter((f) => f[kind] > 0)
    .sort((a, b) => b[kind] - a[kind] || a.file.localeCompare(b.file))
    .slice(0, 8)
    .map((f) => `  ${f[kind]}  ${f.file}`)
    .join("\n");
}

function overBudget(kind: "as" | "nonNull", budget: number): string {
  const label = kind === "as" ? "`as` assertions" : "non-null assertions `!`";
  return counts[kind] <= budget
    ? ""
    : `${counts[kind]} ${label} in provider/ and sdk/, budget ${budget}; ` +
        `the files with the most (node scripts/count-casts.js):\n${worst(kind)}`;
}

test("the counter sees casts in code, not in strings or comments, and not `as const`", () => {
  const text = [
    "const a = x as string;",
    "const b = <number>y;",
    "const c = [1] as const;",
    "const d = m.get(k)!;",
    "const e = 'x as string'; // y!",
    "const f = (z as unknown as T)!.w;",
  ].join("\n");
  expect(countText("sample.ts", text)).toEqual({ as: 4, nonNull: 2 });
});

test(`at most ${AS_BUDGET} \`as\` assertions in provider/ and sdk/`, () => {
  expect(overBudget("as", AS_BUDGET)).toBe("");
});

test(`at most ${NON_NULL_BUDGET} non-null assertions in provider/ and sdk/`, () => {
  expect(overBudget("nonNull", NON_NULL_BUDGET)).toBe("");
});
