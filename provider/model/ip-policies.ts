import { isProps } from "./check";

/**
 * The order of IP policy ids carries no meaning: the contract lists "all IP policies used to
 * check whether a source IP may access". A route's `ip_restriction` and a TLS edge's module share
 * the one request shape (EndpointIPPolicyMutate), so this is the one place the rule lives:
 * values are compared in this form, never stored or sent in it.
 */
export function comparableIpRestriction(value: unknown): unknown {
  const ids: unknown = isProps(value) ? value.ip_policy_ids : undefined;
  if (!isProps(value) || !Array.isArray(ids)) return value;
  return { ...value, ip_policy_ids: ids.map(String).sort() };
}
