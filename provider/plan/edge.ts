import { deepEqual } from "../model/canonical";
import { EDGE_FIELDS } from "../model/edge";
import type { EdgeConfig } from "../model/types";
import { containsUnknown } from "../model/unknown";
import { propertyChanges } from "./detail";
import type { EdgePlan } from "./types";

/**
 * The API has no update operation for edges: any change replaces the edge (its routes or
 * module follow, since they name its id). A hostport belongs to one edge at a time, so a
 * replacement that keeps one of the old edge's hostports is made after the old edge is deleted.
 */
export function planEdge(current: EdgeConfig, desired: EdgeConfig): EdgePlan {
  const changed: string[] = EDGE_FIELDS.filter(
    (f) => containsUnknown(desired[f]) || !deepEqual(current[f], desired[f]),
  );
  return {
    replaces: [...changed],
    deleteBeforeReplace: changed.length > 0 && keepsHostport(current.hostports, desired.hostports),
    changed,
    changes: propertyChanges(current, desired, changed, new Set(changed)),
    steps: [],
  };
}

/** Whether `desired` names a hostport of `current` (hosts compare without regard to case), or may. */
function keepsHostport(current: readonly string[] | undefined, desired: unknown): boolean {
  if (containsUnknown(desired)) return (current ?? []).length > 0;
  const held = new Set((current ?? []).map((h) => h.toLowerCase()));
  return Array.isArray(desired) && desired.some((h) => typeof h === "string" && held.has(h.toLowerCase()));
}
