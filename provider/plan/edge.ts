import { deepEqual } from "../model/canonical";
import { EDGE_FIELDS } from "../model/edge";
import type { EdgeConfig } from "../model/types";
import { containsUnknown } from "../model/unknown";
import { propertyChanges } from "./detail";
import type { EdgePlan } from "./types";

/**
 * The API has no update operation for edges: any change replaces the edge (its routes or
 * module follow, since they name its id).
 */
export function planEdge(current: EdgeConfig, desired: EdgeConfig): EdgePlan {
  const changed: string[] = EDGE_FIELDS.filter(
    (f) => containsUnknown(desired[f]) || !deepEqual(current[f], desired[f]),
  );
  return {
    replaces: [...changed],
    changed,
    changes: propertyChanges(current, desired, changed, new Set(changed)),
    steps: [],
  };
}
