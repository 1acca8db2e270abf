/** The IP restriction module of a TLS edge on the Pulumi side; its id is the edge's id. */
import {
  type TlsIpRestriction,
  type TlsIpRestrictionMutate,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";
import { deepEqual, minimize } from "./canonical";
import { toWire } from "./case";
import { canonicalAgainst, type Checked, checkAgainst, isProps } from "./check";
import { comparableIpRestriction } from "./ip-policies";
import type { TlsIpRestrictionInputs, TlsIpRestrictionOutputs } from "./types";
import { containsUnknown } from "./unknown";

export function checkTlsIpRestriction(news: unknown): Checked<TlsIpRestrictionInputs> {
  return checkAgainst<TlsIpRestrictionInputs>(tlsIpRestrictionMutateSchema, news, {
    edgeId: true,
    adopt: true,
  });
}

export function tlsIpRestrictionFromResponse(
  edgeId: string,
  module: TlsIpRestriction,
): TlsIpRestrictionOutputs {
  return { edgeId, enabled: module.enabled, ipPolicyIds: module.ip_policies.map((r) => r.id) };
}

/** The canonical inputs that stored state stands for (`fallbackEdgeId`: the resource id). */
export function tlsIpRestrictionCanonical(stored: unknown, fallbackEdgeId?: string): TlsIpRestrictionInputs {
  const { edgeId, enabled, ipPolicyIds } = isProps(stored) ? stored : {};
  return canonicalAgainst<TlsIpRestrictionInputs>(
    tlsIpRestrictionMutateSchema,
    { ...(enabled !== undefined ? { enabled } : {}), ipPolicyIds },
    { edgeId: edgeId ?? fallbackEdgeId },
  );
}

/** The module's settings (not its edge) mean the same (an unknown desired value never does). */
export function sameTlsIpRestriction(
  current: TlsIpRestrictionInputs,
  desired: TlsIpRestrictionInputs,
): boolean {
  const settings = (v: TlsIpRestrictionInputs) =>
    comparableIpRestriction({ enabled: v.enabled, ipPolicyIds: v.ipPolicyIds });
  return !containsUnknown(desired) && deepEqual(settings(current), settings(desired));
}

/** The smallest PUT body with the same meaning. */
export function tlsIpRestrictionRequest(desired: TlsIpRestrictionInputs): TlsIpRestrictionMutate {
  return minimize(
    tlsIpRestrictionMutateSchema,
    toWire({ enabled: desired.enabled, ipPolicyIds: desired.ipPolicyIds }),
  ) as TlsIpRestrictionMutate;
}
