/**
 * HTTPS edge routes on the Pulumi side: check (program inputs → canonical inputs), the canonical
 * form of stored state, response → outputs, canonical inputs → the smallest wire bodies. Every
 * default comes from the contract's schemas; the rules stated here are stated nowhere else.
 */
import {
  type ModuleRequest,
  type ModuleRequestInput,
  type ModuleResponse,
  NUM_BUCKETS_UNSET,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type Route,
  type RouteCreate,
  type RouteModuleName,
  routeCreateSchema,
  samlComputedSchema,
} from "../../sdk/contract";
import { deepEqual, minimize } from "./canonical";
import { fromWire, toCamel, toWire } from "./case";
import { canonicalAgainst, type Checked, checkAgainst, isProps, type Props } from "./check";
import { comparableIpRestriction } from "./ip-policies";
import type { ModuleInputs, ModuleProperty, RouteInputs, RouteOutputs } from "./types";
import { containsUnknown } from "./unknown";

/** Pulumi property name of each route module (`ip_restriction` → `ipRestriction`). */
export const MODULE_PROPERTY = Object.fromEntries(ROUTE_MODULE_NAMES.map((m) => [m, toCamel(m)])) as {
  [M in RouteModuleName]: ModuleProperty<M>;
};

/**
 * Modules that carry a credential (webhook `secret`, OAuth and OIDC `client_secret`): their
 * values are kept secret whole, in inputs and outputs, whether or not the program marked them.
 */
export const SECRET_MODULES = [
  "webhook_verification",
  "oauth",
  "oidc",
] as const satisfies readonly RouteModuleName[];

/** Output-only fields of a route and of its SAML module. */
export const ROUTE_OUTPUT_ONLY = ["uri", "createdAt", "routeId"] as const;
export const SAML_OUTPUT_ONLY = Object.keys(samlComputedSchema.shape).map(toCamel);

/** The route fields besides modules that a PATCH may carry. */
export const ROUTE_FIELDS = ["matchType", "match", "description", "metadata"] as const;

// ---------------------------------------------------------------- check

/**
 * Validates a program's inputs (the contract's create schema, which also states the
 * one-auth-module rule) and returns them canonical. `olds` are the previous inputs, if any.
 */
export function checkRoute(news: unknown, olds?: unknown): Checked<RouteInputs> {
  return checkAgainst<RouteInputs>(routeCreateSchema, withoutLegacyUnsetBuckets(news, keptFromOlds(olds)), {
    edgeId: true,
    adopt: true,
  });
}

/**
 * State written by pulumi-edge 0.1 holds an unset `circuitBreaker.numBuckets` as 0 (what responses
 * render); today unset is absent. This reads such a 0 as unset: always in stored state, and in a
 * check's news only when the old inputs hold that same 0 (under `ignoreChanges` the engine hands
 * old inputs back as news). A 0 the program writes is still refused.
 */
function withoutLegacyUnsetBuckets(value: unknown, when = true): unknown {
  const cb = isProps(value) ? value[MODULE_PROPERTY.circuit_breaker] : undefined;
  if (!when || !isProps(cb) || cb.numBuckets !== NUM_BUCKETS_UNSET) return value;
  const { numBuckets: _unset, ...rest } = cb;
  return { ...(value as Props), [MODULE_PROPERTY.circuit_breaker]: rest };
}

const keptFromOlds = (olds: unknown): boolean => withoutLegacyUnsetBuckets(olds) !== olds; // the old inputs hold the 0.1 unset value

// ---------------------------------------------------------------- responses and state

/** A module's response shape → its request shape: the inverse of edge-api.md's "Mapping of request to response". */
export function moduleRequestOf<M extends RouteModuleName>(
  name: M,
  response: ModuleResponse<M>,
): ModuleRequest<M> {
  const r = response as ModuleResponse<RouteModuleName>;
  if (name === "backend") {
    const v = r as ModuleResponse<"backend">;
    return { enabled: v.enabled, backend_id: v.backend.id } as ModuleRequest<M>;
  }
  if (name === "ip_restriction") {
    const v = r as ModuleResponse<"ip_restriction">;
    return { enabled: v.enabled, ip_policy_ids: v.ip_policies.map((p) => p.id) } as ModuleRequest<M>;
  }
  if (name === "circuit_breaker") {
    // Responses are total; "unset" is absent on this side.
    const { num_buckets, ...rest } = r as ModuleResponse<"circuit_breaker">;
    return (num_buckets === NUM_BUCKETS_UNSET ? rest : { ...rest, num_buckets }) as ModuleRequest<M>;
  }
  if (name === "saml") {
    const v = r as ModuleResponse<"saml">;
    return Object.fromEntries(
      Object.entries(v).filter(([k]) => !(k in samlComputedSchema.shape)),
    ) as ModuleRequest<M>;
  }
  return r as ModuleRequest<M>;
}

/** Outputs of an HttpsEdgeRoute from the route resource. Unconfigured modules are absent. */
export function routeFromResponse(route: Route): RouteOutputs {
  const out: Props = {
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
    const value = route[name];
    // Unconfigured modules are left out, not null: a null of a secret module would be
    // encrypted into every route's state (see BENCHMARKS.md), and absent reads the same as unset.
    if (value === null) continue;
    const request = moduleRequestOf(name, value);
    // SAML's outputs carry what the service computes, besides the request shape.
    out[MODULE_PROPERTY[name]] = fromWire(name === "saml" ? value : request, [name]);
  }
  return out as RouteOutputs;
}

/**
 * The canonical inputs that stored state (outputs, or inputs of any earlier version) stands for:
 * the "current" side of every diff, and what `read` reports as inputs.
 */
export function routeCanonical(stored: unknown): RouteInputs {
  const { edgeId, ...rest } = (withoutLegacyUnsetBuckets(stored) as Props | undefined) ?? {};
  const value: Props = {};
  for (const [key, v] of Object.entries(rest)) {
    if (key.startsWith("__") || key === "adopt" || (ROUTE_OUTPUT_ONLY as readonly string[]).includes(key))
      continue;
    if (v === null || v === undefined) continue;
    if (key === MODULE_PROPERTY.saml && isProps(v)) {
      value[key] = Object.fromEntries(Object.entries(v).filter(([k]) => !SAML_OUTPUT_ONLY.includes(k)));
    } else value[key] = v;
  }
  return canonicalAgainst<RouteInputs>(routeCreateSchema, value, { edgeId });
}

/** Two values of one module mean the same configuration (an unknown desired value never does). */
export function sameModule(name: RouteModuleName, current: unknown, desired: unknown): boolean {
  if (containsUnknown(desired)) return false;
  const comparable = name === "ip_restriction" ? comparableIpRestriction : (v: unknown) => v;
  return deepEqual(comparable(current ?? null), comparable(desired ?? null));
}

// ---------------------------------------------------------------- requests

/** A module's canonical value → the smallest request body with the same meaning. */
export function moduleRequest<M extends RouteModuleName>(
  name: M,
  value: ModuleInputs<M>,
): ModuleRequestInput<M> {
  return minimize(ROUTE_MODULES[name].request, toWire(value, [name])) as ModuleRequestInput<M>;
}

/** The body of a create: every configured module, each minimal. */
export function routeCreateRequest(desired: RouteInputs): RouteCreate {
  const body: Props = { match_type: desired.matchType, match: desired.match };
  if (desired.description) body.description = desired.description;
  if (desired.metadata) body.metadata = desired.metadata;
  for (const name of ROUTE_MODULE_NAMES) {
    const value = desired[MODULE_PROPERTY[name]];
    if (value != null) body[name] = moduleRequest(name, value as ModuleInputs<typeof name>);
  }
  return body as RouteCreate;
}
