/**
 * The named canonical types of each resource, derived from the contract: the wire's request
 * shapes (zod `z.output`: defaults filled) under the one camelCase mapping of ./case. Both faces
 * (the dynamic resources and the packaged plugin) speak these types; nothing here is written by
 * hand that the contract already says. Descriptions are not here: the wire fields' are the
 * contract's, the rest ./docs's (the dynamic classes' outputs are generated with both).
 */
import type { z } from "zod";
import type {
  edgeCreateSchema,
  ModuleRequest,
  RouteCreateCanonical,
  RouteModuleName,
  samlComputedSchema,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";

/** `ip_policy_ids` → `ipPolicyIds`, at the type level (the runtime twin is `toCamel`). */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/**
 * A wire shape with every key camelCased, recursively. Maps keyed by data (header names) are
 * `Record<string, string>`, whose `string` keys map to themselves.
 */
export type Camelize<T> = T extends readonly (infer E)[]
  ? Camelize<E>[]
  : T extends object
    ? { [K in keyof T as K extends string ? CamelCase<K> : K]: Camelize<T[K]> }
    : T;

/** Pulumi property name of a route module: `ip_restriction` → `ipRestriction`. */
export type ModuleProperty<M extends RouteModuleName = RouteModuleName> = CamelCase<M>;

/** Canonical inputs of one route module (every default filled; `numBuckets` absent when unset). */
export type ModuleInputs<M extends RouteModuleName> = Camelize<ModuleRequest<M>>;

/** The 13 modules of a route, each absent when not configured. */
export type RouteModulesInputs = { [M in RouteModuleName as ModuleProperty<M>]?: ModuleInputs<M> };

/** Inputs that are not wire fields (described in ./docs, as is every such property below). */
interface AdoptInput {
  adopt?: boolean;
}

// ---------------------------------------------------------------- edges

/** Canonical inputs of an HTTPS or TLS edge: `description`, `metadata`, `hostports`. */
export type EdgeInputs = Camelize<z.output<typeof edgeCreateSchema>>;

/** Outputs of an edge: its inputs as stored, plus what the service assigns (./docs). */
export type EdgeOutputs = EdgeInputs & {
  uri: string;
  createdAt: string;
};

// ---------------------------------------------------------------- routes

/** Canonical inputs of an HTTPS edge route. */
export type RouteInputs = {
  /** A path parameter on the wire. */
  edgeId: string;
} & Camelize<Pick<RouteCreateCanonical, "match_type" | "match" | "description" | "metadata">> &
  RouteModulesInputs &
  AdoptInput;

/**
 * The brain's value of a route: its configuration as the wire says it (the create body's
 * canonical form, every default filled, unconfigured modules absent or null), the edge it is on,
 * and `adopt`. Programs and state are decoded into it once at a call's entry, and encoded once
 * on exit (./route).
 */
export type RouteConfig = RouteCreateCanonical & { edge_id: string; adopt?: boolean };

/** The brain's value of a TLS edge's IP restriction module. */
export type TlsIpRestrictionConfig = z.output<typeof tlsIpRestrictionMutateSchema> & {
  edge_id: string;
  adopt?: boolean;
};

/** The brain's value of an edge: its create body, canonical. */
export type EdgeConfig = z.output<typeof edgeCreateSchema>;

/** Read-only fields of a SAML module, computed by the service. */
export type SamlComputed = Camelize<z.output<typeof samlComputedSchema>>;

/** Outputs of an HTTPS edge route: canonical inputs as stored, plus what the service assigns (./docs). */
export type RouteOutputs = Omit<RouteInputs, "adopt" | "saml"> & {
  routeId: string;
  uri: string;
  createdAt: string;
  saml?: ModuleInputs<"saml"> & SamlComputed;
};

// ---------------------------------------------------------------- TLS edge IP restriction

/** Canonical inputs of the IP restriction module of a TLS edge. */
export type TlsIpRestrictionInputs = {
  /** A path parameter on the wire; also the resource id. */
  edgeId: string;
} & Camelize<z.output<typeof tlsIpRestrictionMutateSchema>> &
  AdoptInput;

export type TlsIpRestrictionOutputs = Omit<TlsIpRestrictionInputs, "adopt">;
