/**
 * What a plan changes, property by property, as Pulumi paths (`circuitBreaker.numBuckets`,
 * `requestHeaders.add["X-Foo"]`): the detailed diff a preview shows, computed from the brain's two
 * values (the wire's canonical shapes) and named in the program's terms.
 */
import { formatPath } from "../../sdk/contract";
import { isProps } from "../model/check";
import { camelPath } from "../model/case";
import { deepEqual } from "../model/canonical";
import { containsUnknown } from "../model/unknown";

export type ChangeKind = "add" | "delete" | "update";

export interface PropertyChange {
  /** A Pulumi property path, e.g. `circuitBreaker.numBuckets` or `requestHeaders.add["X-Foo"]`. */
  path: string;
  kind: ChangeKind;
  /** The change forces a new object (the property is one of the plan's `replaces`). */
  replace: boolean;
}

/** A path of wire names → the Pulumi path of the same property (the contract's path notation). */
const propertyPath = (wire: ReadonlyArray<string | number>): string => formatPath(camelPath(wire));

/**
 * The leaves that differ between `current` and `desired` under `fields` (wire names at the top),
 * each as one change; `replacing` are the top-level fields whose change replaces the object.
 * An unknown desired value is an update of its whole subtree.
 */
export function propertyChanges(
  current: Readonly<Record<string, unknown>>,
  desired: Readonly<Record<string, unknown>>,
  fields: readonly string[],
  replacing: ReadonlySet<string> = new Set(),
): PropertyChange[] {
  const out: PropertyChange[] = [];
  const walk = (path: Array<string | number>, a: unknown, b: unknown, replace: boolean) => {
    const absentA = a === undefined || a === null;
    const absentB = b === undefined || b === null;
    if (absentA && absentB) return;
    if (absentA || absentB) {
      out.push({ path: propertyPath(path), kind: absentA ? "add" : "delete", replace });
      return;
    }
    if (containsUnknown(b)) {
      out.push({ path: propertyPath(path), kind: "update", replace });
      return;
    }
    if (isProps(a) && isProps(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
        walk([...path, key], a[key], b[key], replace);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach((v, i) => walk([...path, i], v, b[i], replace));
      return;
    }
    if (!deepEqual(a, b)) out.push({ path: propertyPath(path), kind: "update", replace });
  };
  for (const field of fields) walk([field], current[field], desired[field], replacing.has(field));
  return out;
}
