/**
 * The model of the four resource types: named canonical types (./types) and, per type, the
 * pure functions `check` (program inputs → canonical inputs), `canonical` (stored state →
 * canonical inputs) and `fromResponse` (API response → outputs). No I/O, no Pulumi.
 */
import type { Checked } from "./check";
import type { ResourceKind } from "./kinds";
import { checkEdge } from "./edge";
import { type LeafPath, ROUTE_SECRET_LEAVES } from "./leaves";
import { checkRoute } from "./route";
import { checkTlsIpRestriction } from "./tls-ip-restriction";
import type {
  EdgeConfig,
  EdgeInputs,
  EdgeOutputs,
  RouteConfig,
  RouteInputs,
  RouteOutputs,
  TlsIpRestrictionConfig,
  TlsIpRestrictionInputs,
  TlsIpRestrictionOutputs,
} from "./types";

/** Per resource kind (./kinds): Pulumi's inputs and outputs (camelCase), and the brain's value (the wire's). */
export interface ResourceTypes {
  httpsEdge: { inputs: EdgeInputs; outputs: EdgeOutputs; config: EdgeConfig };
  tlsEdge: { inputs: EdgeInputs; outputs: EdgeOutputs; config: EdgeConfig };
  httpsEdgeRoute: { inputs: RouteInputs; outputs: RouteOutputs; config: RouteConfig };
  tlsEdgeIpRestriction: {
    inputs: TlsIpRestrictionInputs;
    outputs: TlsIpRestrictionOutputs;
    config: TlsIpRestrictionConfig;
  };
}
export type { ResourceKind };
export type Inputs<R extends ResourceKind> = ResourceTypes[R]["inputs"];
export type Outputs<R extends ResourceKind> = ResourceTypes[R]["outputs"];
export type Config<R extends ResourceKind> = ResourceTypes[R]["config"];

const CHECKS: { [R in ResourceKind]: (news: unknown, olds?: unknown) => Checked<Config<R>> } = {
  httpsEdge: checkEdge,
  tlsEdge: checkEdge,
  httpsEdgeRoute: checkRoute,
  tlsEdgeIpRestriction: checkTlsIpRestriction,
};

export { kindOfType, RESOURCE_KINDS, type ResourceType, TYPE_NAMES } from "./kinds";

/** Per resource type, its secret leaves (./leaves): kept secret in inputs and outputs on both faces. */
export const SECRET_LEAVES: { [R in ResourceKind]: readonly LeafPath[] } = {
  httpsEdge: [],
  tlsEdge: [],
  httpsEdgeRoute: ROUTE_SECRET_LEAVES,
  tlsEdgeIpRestriction: [],
};

/** Program inputs → the brain's value, or failures named by Pulumi property path. Never throws. */
export const check = <R extends ResourceKind>(kind: R, news: unknown, olds?: unknown): Checked<Config<R>> =>
  CHECKS[kind](news, olds);

export type { CheckFailure, Checked } from "./check";
export type { LeafPath } from "./leaves";
export * from "./types";
