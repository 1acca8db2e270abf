/** HTTPS edge routes on the Pulumi side: response → outputs, outputs → canonical inputs. */
import { type Route, ROUTE_MODULE_NAMES, type RouteModuleName, samlComputedSchema } from "../../sdk/contract";
import { fromWire, toCamel } from "./case";

/** Pulumi property name of each route module (`ip_restriction` → `ipRestriction`). */
export const MODULE_PROPERTY: Record<RouteModuleName, string> = Object.fromEntries(
  ROUTE_MODULE_NAMES.map((m) => [m, toCamel(m)]),
) as Record<RouteModuleName, string>;

/** Output-only fields of a route and of its SAML module. */
export const ROUTE_OUTPUT_ONLY = ["uri", "createdAt", "routeId"] as const;
export const SAML_OUTPUT_ONLY = Object.keys(samlComputedSchema.shape).map(toCamel);

/** A module's response shape in Pulumi terms: the input shape, plus read-only fields for SAML. */
function moduleOutput(name: RouteModuleName, value: Record<string, unknown>): Record<string, unknown> {
  switch (name) {
    case "backend":
      return { enabled: value.enabled, backendId: (value.backend as { id: string }).id };
    case "ip_restriction":
      return {
        enabled: value.enabled,
        ipPolicyIds: (value.ip_policies as { id: string }[]).map((r) => r.id),
      };
    default:
      return fromWire(value, [name]);
  }
}

/** Outputs of an HttpsEdgeRoute from the route resource. Unconfigured modules are absent. */
export function routeOutputs(route: Route): Record<string, unknown> {
  const out: Record<string, unknown> = {
    edgeId: route.edge_id,
    routeId: route.id,
    matchType: route.match_type,
    match: route.match,
    description: route.description,
    metadata: route.metadata,
    uri: route.uri,
    createdAt: route.created_at,
  };
  for (const name of ROUTE_MODULE_NAMES) {
    const value = route[name] as Record<string, unknown> | null;
    // Unconfigured modules are left out, not null: a null of a secret module would be
    // encrypted into every route's state (see BENCHMARKS.md), and absent reads the same as unset.
    if (value !== null) out[MODULE_PROPERTY[name]] = moduleOutput(name, value);
  }
  return out;
}

/**
 * The canonical inputs that would produce these outputs: what `read` reports as inputs, and
 * the "current" side of every diff.
 */
export function routeInputsFromOutputs(outputs: Record<string, unknown>): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(outputs)) {
    if (key.startsWith("__") || (ROUTE_OUTPUT_ONLY as readonly string[]).includes(key)) continue;
    if (value === null || value === undefined) continue;
    if (key === MODULE_PROPERTY.saml) {
      const saml = { ...(value as Record<string, unknown>) };
      for (const k of SAML_OUTPUT_ONLY) delete saml[k];
      inputs[key] = saml;
    } else inputs[key] = value;
  }
  return inputs;
}
