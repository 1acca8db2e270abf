import { ID_PATTERN } from "../../sdk/contract";
import { isProps } from "../model/check";
import {
  checkTlsIpRestriction,
  tlsIpRestrictionCanonical,
  tlsIpRestrictionFromResponse,
  tlsIpRestrictionRequest,
} from "../model/tls-ip-restriction";
import type { TlsIpRestrictionInputs, TlsIpRestrictionOutputs } from "../model/types";
import { applyTlsIpRestrictionPlan, deleteIgnoringNotFound } from "../plan/execute";
import { planTlsIpRestriction } from "../plan/tls-ip-restriction";
import { BadIdError, readOrGone } from "./errors";
import type { Lifecycle } from "./types";

/** The module's id is its TLS edge's id. */
function edgeIdOf(id: string, stored: unknown): string {
  const edgeId = isProps(stored) && typeof stored.edgeId === "string" && stored.edgeId ? stored.edgeId : id;
  if (!ID_PATTERN.test(edgeId))
    throw new BadIdError("TLS edge IP restriction", id, "the TLS edge's id (edgtls_...)");
  return edgeId;
}

export const tlsIpRestrictionLifecycle: Lifecycle<TlsIpRestrictionInputs, TlsIpRestrictionOutputs> = {
  check: (news) => checkTlsIpRestriction(news),
  diff: (stored, news, id) => planTlsIpRestriction(tlsIpRestrictionCanonical(stored, id), news),

  async create(client, inputs) {
    if (inputs.adopt !== true) {
      const existing = await readOrGone(() => client.getTlsIpRestriction(inputs.edgeId));
      if (existing) {
        throw new Error(
          `TLS edge ${inputs.edgeId} already has an IP restriction module (policies: ${existing.ip_policies.map((r) => r.id).join(", ")}). ` +
            "Set `adopt: true` to manage it with this resource (its configuration will be replaced by this one), or remove it first.",
        );
      }
    }
    const module = await client.putTlsIpRestriction(inputs.edgeId, tlsIpRestrictionRequest(inputs));
    return { id: inputs.edgeId, outs: tlsIpRestrictionFromResponse(inputs.edgeId, module) };
  },

  async read(client, id, stored) {
    const edgeId = edgeIdOf(id, stored);
    const module = await readOrGone(() => client.getTlsIpRestriction(edgeId));
    if (!module) return undefined;
    const outs = tlsIpRestrictionFromResponse(edgeId, module);
    return { id, outs, inputs: tlsIpRestrictionCanonical(outs) };
  },

  async update(client, id, stored, news) {
    const plan = planTlsIpRestriction(tlsIpRestrictionCanonical(stored, id), news);
    return tlsIpRestrictionFromResponse(
      news.edgeId,
      await applyTlsIpRestrictionPlan(client, news.edgeId, plan),
    );
  },

  async delete(client, id, stored) {
    const edgeId = edgeIdOf(id, stored);
    await deleteIgnoringNotFound(() => client.deleteTlsIpRestriction(edgeId));
  },
};
