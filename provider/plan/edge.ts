import { deepEqual } from "../model/canonical";
import { EDGE_FIELDS } from "../model/edge";
import type { EdgeInputs } from "../model/types";
import { containsUnknown } from "../model/unknown";
import type { EdgePlan } from "./types";

/**
 * The API has no update operation for edges: any change replaces the edge (its routes or
 * module follow, since they name its id).
 */
export function planEdge(current: EdgeInputs, desired: EdgeInputs): EdgePlan {
  const changed = EDGE_FIELDS.filter(
    (f) => containsUnknown(desired[f]) || !deepEqual(current[f], desired[f]),
  ) as string[];
  return { replaces: [...changed], changed, steps: [] };
}
