/**
 * HTTPS edge routes on the Pulumi side: check (program inputs → canonical inputs), the canonical
 * form of stored state, response → outputs, canonical inputs → the smallest wire bodies. Every
 * default comes from the contract's schemas; the rules stated here are stated nowhere else.
 */
import {
  byModule,
  type ModuleRequest,
  type ModuleRequestInput,
  moduleRequestOf,
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
import type { ModuleProperty, RouteConfig, RouteInputs, RouteOutputs } from "./types";
import { containsUnknown } from "./unknown";

/** Pulumi property name of each route module (`ip_restriction` → `ipRestriction`). */
export const MODULE_PROPERTY = byModule<{ [M in RouteModuleName]: ModuleProperty<M> }>(toCamel);

/** Output-only fields of a route and of its SAML module. */
export const ROUTE_OUTPUT_ONLY = ["uri", "createdAt", "routeId"] as const;
export const SAML_OUTPUT_ONLY = Object.keys(samlComputedSchema.shape).map(toCamel);

/** The route fields besides modules that a PATCH may carry. */
export const ROUTE_FIELDS = ["match_type", "match", "description", "metadata"] as const;

// ---------------------------------------------------------------- decode: program and state → the brain

/**
 * Validates a program's inputs (the contract's create schema, which also states the
 * one-auth-module rule) and returns the brain's value. `olds` are the previous inputs, if any.
 */
export function checkRoute(news: unknown, olds?: unknown): Checked<RouteConfig> {
  return checkAgainst<RouteConfig>(routeCreateSchema, withoutLegacyUnsetBuckets(news, keptFromOlds(olds)), {
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
  if (!when || !isProps(value)) return value;
  const cb = value[MODULE_PROPERTY.circuit_breaker];
  if (!isProps(cb) || cb.numBuckets !== NUM_BUCKETS_UNSET) return value;
  const { numBuckets: _unset, ...rest } = cb;
  return { ...value, [MODULE_PROPERTY.circuit_breaker]: rest };
}

const keptFromOlds = (olds: unknown): boolean => withoutLegacyUnsetBuckets(olds) !== olds; // the old inputs hold the 0.1 unset value

/**
 * The brain's value that stored state (outputs, or inputs of any earlier version) stands for: the
 * "current" side of every diff. One conversion, one pass of the contract's schema.
 */
export function decodeRoute(stored: unknown): RouteConfig {
  const { edgeId, ...rest } = (withoutLegacyUnsetBuckets(stored) as Props | undefined) ?? {};
  const value: Props = {};
  for (const [key, v] of Object.entries(rest)) {
    if (key.startsWith("__") || key === "adopt" || ROUTE_OUTPUT_ONLY.some((k) => k === key)) continue;
    if (v === null || v === undefined) continue;
    if (key === MODULE_PROPERTY.saml && isProps(v)) {
      value[key] = Object.fromEntries(Object.entries(v).filter(([k]) => !SAML_OUTPUT_ONLY.includes(k)));
    } else value[key] = v;
  }
  return canonicalAgainst<RouteConfig>(routeCreateSchema, value, {
    edge_id: typeof edgeId === "string" ? edgeId : undefined,
  });
}

/** Canonical inputs (a check's, already valid) → the brain's value: one conversion, no validation. */
export const routeConfigOf = (inputs: RouteInputs): RouteConfig => toWire<RouteConfig>(inputs);

/** The configuration a route resource has (each module's request shape): what `read` reports as inputs. */
export function routeConfigOfResponse(route: Route): RouteConfig {
  const config: RouteConfig = {
    edge_id: route.edge_id,
    match_type: route.match_type,
    match: route.match,
    description: route.description,
    metadata: route.metadata,
  };
  for (const name of ROUTE_MODULE_NAMES) {
    const value = route[name];
    if (value !== null) setModule(config, name, moduleRequestOf(name, value));
  }
  return config;
}

const setModule = <M extends RouteModuleName>(config: RouteConfig, name: M, value: ModuleRequest<M>) => {
  (config as Partial<Record<RouteModuleName, unknown>>)[name] = value;
};

// ---------------------------------------------------------------- encode: the brain → Pulumi

/** The brain's value → Pulumi inputs (camelCase): one conversion. */
export const routeInputsOf = (config: RouteConfig): RouteInputs => fromWire<RouteInputs>(config);

/**
 * Outputs of an HttpsEdgeRoute from the route resource: one conversion of the whole. Unconfigured
 * modules are absent (absent reads the same as unset, and keeps thirteen nulls out of every
 * route's state); SAML's carry what the service computes, besides the request shape.
 */
export function routeOutputsOf(route: Route): RouteOutputs {
  const wire: Props = {
    edge_id: route.edge_id,
    route_id: route.id,
    match_type: route.match_type,
    match: route.match,
    description: route.description,
    metadata: route.metadata,
    uri: route.uri,
    created_at: route.created_at,
  };
  for (const name of ROUTE_MODULE_NAMES) {
    const value = route[name];
    if (value !== null) wire[name] = name === "saml" ? value : moduleRequestOf(name, value);
  }
  return fromWire<RouteOutputs>(wire);
}

// ---------------------------------------------------------------- compare and build requests

/** Two values of one module mean the same configuration (an unknown desired value never does). */
export function sameModule(name: RouteModuleName, current: unknown, desired: unknown): boolean {
  if (containsUnknown(desired)) return false;
  const comparable = name === "ip_restriction" ? comparableIpRestriction : (v: unknown) => v;
  return deepEqual(comparable(current ?? null), comparable(desired ?? null));
}

/** A module's canonical value → the smallest request body with the same meaning. */
export function moduleRequest<M extends RouteModuleName>(
  name: M,
  value: ModuleRequest<M>,
): ModuleRequestInput<M> {
  return minimize(ROUTE_MODULES[name].request, value) as ModuleRequestInput<M>;
}

/** The body of a create: every configured module, each minimal. */
export function routeCreateRequest(desired: RouteConfig): RouteCreate {
  const body: Props = { match_type: desired.match_type, match: desired.match };
  if (desired.description) body.description = desired.description;
  if (desired.metadata) body.metadata = desired.metadata;
  for (const name of ROUTE_MODULE_NAMES) {
    const value = desired[name];
    if (value != null) body[name] = moduleRequest(name, value);
  }
  return body as RouteCreate;
}
