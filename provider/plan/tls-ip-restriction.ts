import { sameTlsIpRestriction, tlsIpRestrictionRequest } from "../model/tls-ip-restriction";
import type { TlsIpRestrictionInputs } from "../model/types";
import { containsUnknown } from "../model/unknown";
import type { TlsIpRestrictionPlan } from "./types";

/** Another edge is another module (replace); otherwise one PUT replaces the module whole. */
export function planTlsIpRestriction(
  current: TlsIpRestrictionInputs,
  desired: TlsIpRestrictionInputs,
): TlsIpRestrictionPlan {
  if (current.edgeId !== desired.edgeId || containsUnknown(desired.edgeId)) {
    return { replaces: ["edgeId"], changed: ["edgeId"], steps: [] };
  }
  const changed: string[] = (["enabled", "ipPolicyIds"] as const).filter(
    (f) => !sameTlsIpRestriction(current, { ...current, [f]: desired[f] }),
  );
  if (changed.length === 0) return { replaces: [], changed, steps: [] };
  return {
    replaces: [],
    changed,
    steps: [
      {
        op: "put",
        body: tlsIpRestrictionRequest(desired),
        why: `${changed.join(", ")} changed: replace the module whole`,
      },
    ],
  };
}
