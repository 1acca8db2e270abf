import { sameTlsIpRestriction, tlsIpRestrictionRequest } from "../model/tls-ip-restriction";
import { toCamel } from "../model/case";
import type { TlsIpRestrictionConfig } from "../model/types";
import { containsUnknown } from "../model/unknown";
import { propertyChanges } from "./detail";
import type { TlsIpRestrictionPlan } from "./types";

/** Another edge is another module (replace); otherwise one PUT replaces the module whole. */
export function planTlsIpRestriction(
  current: TlsIpRestrictionConfig,
  desired: TlsIpRestrictionConfig,
): TlsIpRestrictionPlan {
  if (current.edge_id !== desired.edge_id || containsUnknown(desired.edge_id)) {
    const changes = propertyChanges(current, desired, ["edge_id"], new Set(["edge_id"]));
    return { replaces: ["edgeId"], changed: ["edgeId"], changes, steps: [] };
  }
  const differ = (["enabled", "ip_policy_ids"] as const).filter(
    (f) => !sameTlsIpRestriction(current, { ...current, [f]: desired[f] }),
  );
  const changed = differ.map(toCamel);
  const changes = propertyChanges(current, desired, differ);
  if (changed.length === 0) return { replaces: [], changed, changes, steps: [] };
  return {
    replaces: [],
    changed,
    changes,
    steps: [
      {
        op: "put",
        body: tlsIpRestrictionRequest(desired),
        why: `${changed.join(", ")} changed: replace the module whole`,
      },
    ],
  };
}
