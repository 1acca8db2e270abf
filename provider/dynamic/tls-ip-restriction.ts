/** ResourceProvider of TlsEdgeIpRestriction: PUT to create and update, GET, DELETE. */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { type TlsIpRestriction, tlsIpRestrictionMutateSchema } from "../../sdk/contract";
import { edgeClient } from "../config";
import { deepEqual, minimize } from "../model/canonical";
import { toWire } from "../model/case";
import { checkAgainst } from "../model/check";
import { containsUnknown } from "../model/unknown";
import { deleteIgnoringNotFound, gone, readOrGone } from "./errors";

type Props = Record<string, any>;

const outputs = (edgeId: string, m: TlsIpRestriction) => ({
  edgeId,
  enabled: m.enabled,
  ipPolicyIds: m.ip_policies.map((r) => r.id),
});
const body = (inputs: Props) =>
  minimize(
    tlsIpRestrictionMutateSchema,
    toWire({ enabled: inputs.enabled, ipPolicyIds: inputs.ipPolicyIds }),
  ) as {
    ip_policy_ids: string[];
  };
/** Order of policy ids carries no meaning. */
const comparable = (p: Props) => ({
  enabled: p.enabled ?? true,
  ids: [...((p.ipPolicyIds as string[]) ?? [])].sort(),
});

export const tlsIpRestrictionProvider: dynamic.ResourceProvider = {
  async check(_olds: Props, news: Props) {
    return checkAgainst(tlsIpRestrictionMutateSchema, news, { edgeId: true, adopt: true });
  },

  async diff(_id: string, olds: Props, news: Props) {
    const replaces = olds.edgeId !== news.edgeId || containsUnknown(news.edgeId) ? ["edgeId"] : [];
    const changed =
      replaces.length > 0 || containsUnknown(news) || !deepEqual(comparable(olds), comparable(news));
    return { changes: changed, replaces, deleteBeforeReplace: false };
  },

  async create(inputs: Props) {
    const client = edgeClient();
    if (inputs.adopt !== true) {
      const existing = await readOrGone(() => client.getTlsIpRestriction(inputs.edgeId));
      if (existing) {
        throw new Error(
          `TLS edge ${inputs.edgeId} already has an IP restriction module (policies: ${existing.ip_policies.map((r) => r.id).join(", ")}). ` +
            "Set `adopt: true` to manage it with this resource (its configuration will be replaced by this one), or remove it first.",
        );
      }
    }
    const module = await client.putTlsIpRestriction(inputs.edgeId, body(inputs));
    return { id: inputs.edgeId, outs: outputs(inputs.edgeId, module) };
  },

  async read(id: string, props: Props) {
    const edgeId = props.edgeId ?? id;
    const module = await readOrGone(() => edgeClient().getTlsIpRestriction(edgeId));
    if (!module) return gone();
    const outs = outputs(edgeId, module);
    return { id, props: outs, inputs: outs };
  },

  async update(_id: string, _olds: Props, news: Props) {
    const module = await edgeClient().putTlsIpRestriction(news.edgeId, body(news));
    return { outs: outputs(news.edgeId, module) };
  },

  async delete(id: string, props: Props) {
    await deleteIgnoringNotFound(() => edgeClient().deleteTlsIpRestriction(props.edgeId ?? id));
  },
};
