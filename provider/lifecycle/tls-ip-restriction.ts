import { ID_PATTERN, type TlsIpRestriction } from "../../sdk/contract";
import { isProps } from "../model/check";
import {
  checkTlsIpRestriction,
  decodeTlsIpRestriction,
  tlsIpRestrictionConfigOf,
  tlsIpRestrictionInputsOf,
  tlsIpRestrictionOutputsOf,
  tlsIpRestrictionRequest,
} from "../model/tls-ip-restriction";
import type { TlsIpRestrictionInputs, TlsIpRestrictionOutputs } from "../model/types";
import { applyTlsIpRestrictionPlan, deleteIgnoringNotFound } from "../plan/execute";
import { planTlsIpRestriction } from "../plan/tls-ip-restriction";
import { attributeDeletion, attributeDrift } from "./attribution";
import type { AuthorLabel } from "./authorship";
import { BadIdError, isConflict, keyReused, readOrGone } from "./errors";
import {
  createOptions,
  heldByCreate,
  notByThisIdentity,
  noteAdopted,
  noteCreated,
  takeItOnPurpose,
  type TakeOnPurpose,
} from "./held";
import { encodeChecked, type Lifecycle } from "./types";

const LABEL: AuthorLabel = "IP restriction of TLS edge";
const TAKE = (edgeId: string): TakeOnPurpose => ({
  importType: "edge:index:TlsEdgeIpRestriction",
  importId: edgeId,
  dynamic:
    "set `adopt: true` on the resource (dynamic resources; its configuration then replaces the module's)",
});

/** The module's id is its TLS edge's id. */
function edgeIdOf(id: string, stored: unknown): string {
  const edgeId = isProps(stored) && typeof stored.edgeId === "string" && stored.edgeId ? stored.edgeId : id;
  if (!ID_PATTERN.test(edgeId))
    throw new BadIdError("TLS edge IP restriction", id, "the TLS edge's id (edgtls_...)");
  return edgeId;
}

export const tlsIpRestrictionLifecycle: Lifecycle<
  TlsIpRestrictionInputs,
  TlsIpRestrictionOutputs,
  TlsIpRestriction
> = {
  check: (news) => encodeChecked(checkTlsIpRestriction(news), news, tlsIpRestrictionInputsOf),
  diff: (stored, news, id) =>
    planTlsIpRestriction(decodeTlsIpRestriction(stored, id), tlsIpRestrictionConfigOf(news)),

  async create(client, inputs, ctx) {
    const request = tlsIpRestrictionRequest(tlsIpRestrictionConfigOf(inputs));
    if (inputs.adopt === true) {
      // Adoption: whatever is configured is replaced by this configuration.
      noteAdopted(LABEL, inputs.edgeId, ctx);
      const module = await client.putTlsIpRestriction(inputs.edgeId, request);
      return { id: inputs.edgeId, outs: tlsIpRestrictionOutputsOf(inputs.edgeId, module) };
    }
    let module;
    try {
      // A keyed PUT creates the module only where none is configured, once per identity; keyed on
      // the edge alone, so that the module an earlier run made is found again whatever its inputs.
      const keys = createOptions(ctx, {});
      module = await client.putTlsIpRestriction(inputs.edgeId, request, {
        ...keys,
        identity: keys.identity ?? `unnamed ${inputs.edgeId}`,
      });
      noteCreated(LABEL, inputs.edgeId, module, ctx);
    } catch (e) {
      if (keyReused(e)) {
        // Made for this resource by an earlier create, with other inputs: replaced by these.
        noteAdopted(
          LABEL,
          inputs.edgeId,
          ctx,
          "made by an earlier create for this resource with other inputs, found by this stack's identity for it",
        );
        module = await client.putTlsIpRestriction(inputs.edgeId, request);
      } else {
        if (!isConflict(e)) throw e;
        const existing = await readOrGone(() => client.getTlsIpRestriction(inputs.edgeId));
        throw new Error(
          `TLS edge ${inputs.edgeId} already has an IP restriction module${existing ? ` (policies: ${existing.ip_policies.map((r) => r.id).join(", ")})` : ""} (a TLS edge has one): ` +
            `${notByThisIdentity({ name: `a TlsEdgeIpRestriction of ${inputs.edgeId}`, grep: inputs.edgeId }, "this edge's IP restriction")}, ${takeItOnPurpose(TAKE(inputs.edgeId), ctx?.name)}. Otherwise remove it first.`,
        );
      }
    }
    return { id: inputs.edgeId, outs: tlsIpRestrictionOutputsOf(inputs.edgeId, module) };
  },

  locate: (id, stored) => ({ edge: "tls", edgeId: edgeIdOf(id, stored) }),

  async read(client, id, stored, ctx) {
    const edgeId = edgeIdOf(id, stored);
    return this.readFound(
      client,
      id,
      stored,
      await readOrGone(() => client.getTlsIpRestriction(edgeId)),
      ctx,
    );
  },

  async readFound(client, id, stored, module, ctx) {
    const edgeId = edgeIdOf(id, stored);
    // A refresh (state to compare with; an import has none) says who made the drift it finds.
    const refresh = isProps(stored) && Object.keys(stored).length > 0;
    const what = { label: LABEL, id: edgeId, objectId: edgeId };
    if (!module) {
      if (refresh) await attributeDeletion(client, ctx, what);
      return undefined;
    }
    const outs = tlsIpRestrictionOutputsOf(edgeId, module);
    if (refresh) {
      await attributeDrift(
        client,
        ctx,
        what,
        { ...decodeTlsIpRestriction(stored, edgeId) },
        { ...decodeTlsIpRestriction(outs, edgeId) },
      );
    }
    return { id, outs, inputs: outs };
  },

  async update(client, id, stored, news, ctx) {
    const plan = planTlsIpRestriction(decodeTlsIpRestriction(stored, id), tlsIpRestrictionConfigOf(news));
    return tlsIpRestrictionOutputsOf(
      news.edgeId,
      await applyTlsIpRestrictionPlan(client, news.edgeId, plan, ctx?.log),
    );
  },

  async delete(client, id, stored, ctx) {
    const edgeId = edgeIdOf(id, stored);
    if (heldByCreate(LABEL, edgeId, ctx)) return;
    await deleteIgnoringNotFound(() => client.deleteTlsIpRestriction(edgeId));
  },
};
