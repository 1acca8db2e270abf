/** The IP restriction module of a TLS edge on the Pulumi side; its id is the edge's id. */
import {
  type TlsIpRestriction,
  type TlsIpRestrictionMutate,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";
import { deepEqual, minimize } from "./canonical";
import { fromWire, toWire } from "./case";
import { canonicalAgainst, type Checked, checkAgainst, isProps } from "./check";
import { comparableIpRestriction } from "./ip-policies";
import type { TlsIpRestrictionConfig, TlsIpRestrictionInputs, TlsIpRestrictionOutputs } from "./types";
import { containsUnknown } from "./unknown";

export function checkTlsIpRestriction(news: unknown): Checked<TlsIpRestrictionConfig> {
  return checkAgainst<TlsIpRestrictionConfig>(tlsIpRestrictionMutateSchema, news, {
    edgeId: true,
    adopt: true,
  });
}

/** Outputs of the module from the service's answer. */
export function tlsIpRestrictionOutputsOf(edgeId: string, module: TlsIpRestriction): TlsIpRestrictionOutputs {
  return { edgeId, enabled: module.enabled, ipPolicyIds: module.ip_policies.map((r) => r.id) };
}

/** The brain's value that stored state stands for (`fallbackEdgeId`: the resource id). */
export function decodeTlsIpRestriction(stored: unknown, fallbackEdgeId?: string): TlsIpRestrictionConfig {
  const { edgeId, enabled, ipPolicyIds } = isProps(stored) ? stored : {};
  return canonicalAgainst<TlsIpRestrictionConfig>(
    tlsIpRestrictionMutateSchema,
    { ...(enabled !== undefined ? { enabled } : {}), ipPolicyIds },
    { edge_id: typeof edgeId === "string" ? edgeId : fallbackEdgeId },
  );
}

/** Canonical inputs (a check's) → the brain's value; the brain's value → Pulumi inputs. */
export const tlsIpRestrictionConfigOf = (inputs: TlsIpRestrictionInputs): TlsIpRestrictionConfig =>
  toWire<TlsIpRestrictionConfig>(inputs);
export const tlsIpRestrictionInputsOf = (config: TlsIpRestrictionConfig): TlsIpRestrictionInputs =>
  fromWire<TlsIpRestrictionInputs>(config);

/** The module's settings (not its edge) mean the same (an unknown desired value never does). */
export function sameTlsIpRestriction(
  current: TlsIpRestrictionConfig,
  desired: TlsIpRestrictionConfig,
): boolean {
  const settings = (v: TlsIpRestrictionConfig) =>
    comparableIpRestriction({ enabled: v.enabled, ip_policy_ids: v.ip_policy_ids });
  return !containsUnknown(desired) && deepEqual(settings(current), settings(desired));
}

/** The smallest PUT body with the same meaning. */
export function tlsIpRestrictionRequest(desired: TlsIpRestrictionConfig): TlsIpRestrictionMutate {
  return minimize(tlsIpRestrictionMutateSchema, {
    enabled: desired.enabled,
    ip_policy_ids: desired.ip_policy_ids,
  }) as TlsIpRestrictionMutate;
}
