import { deepEqual } from "../model/canonical";
import { EDGE_FIELDS } from "../model/edge";
import type { EdgeConfig } from "../model/types";
import { containsUnknown } from "../model/unknown";
import { propertyChanges } from "./detail";
import type { EdgePlan } from "./types";

/**
 * The API has no update operation for edges: any change replaces the edge (its routes or
 * module follow, since they name its id). A hostport belongs to one edge at a time, so an edge
 * holding hostports is deleted before its replacement is made: the replacement may keep one, and
 * another resource of the same update may take one it gives up (which then waits for the delete:
 * `releases`). The engine deletes a replaced object only at the update's end otherwise, after
 * every create, so such a move could never converge.
 */
export function planEdge(current: EdgeConfig, desired: EdgeConfig): EdgePlan {
  const changed: string[] = EDGE_FIELDS.filter(
    (f) => containsUnknown(desired[f]) || !deepEqual(current[f], desired[f]),
  );
  const holdsHostports = (current.hostports ?? []).length > 0;
  return {
    replaces: [...changed],
    deleteBeforeReplace: changed.length > 0 && holdsHostports,
    releases: changed.length > 0 && holdsHostports,
    changed,
    changes: propertyChanges(current, desired, changed, new Set(changed)),
    steps: [],
  };
}
