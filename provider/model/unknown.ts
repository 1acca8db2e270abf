/** The value the engine sends for inputs not yet known during a preview. */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function containsUnknown(value: unknown): boolean {
  if (value === UNKNOWN) return true;
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (value && typeof value === "object") return Object.values(value).some(containsUnknown);
  return false;
}

/** True when the JSON path (array of keys) passes through an unknown value. */
export function pathHitsUnknown(root: unknown, path: ReadonlyArray<PropertyKey>): boolean {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === UNKNOWN) return true;
    if (cur === null || typeof cur !== "object") return false;
    cur = Reflect.get(cur, seg);
  }
  return containsUnknown(cur);
}
