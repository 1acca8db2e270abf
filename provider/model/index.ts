/**
 * The model of the four resource types: named canonical types (./types) and, per type, the
 * pure functions `check` (program inputs → canonical inputs), `canonical` (stored state →
 * canonical inputs) and `fromResponse` (API response → outputs). No I/O, no Pulumi.
 */
import type { HttpsEdge, Route, TlsEdge, TlsIpRestriction } from "../../sdk/contract";
import type { Checked } from "./check";
import { checkEdge, edgeCanonical, edgeFromResponse } from "./edge";
import { checkRoute, routeCanonical, routeFromResponse } from "./route";
import {
  checkTlsIpRestriction,
  tlsIpRestrictionCanonical,
  tlsIpRestrictionFromResponse,
} from "./tls-ip-restriction";
import type {
  EdgeInputs,
  EdgeOutputs,
  RouteInputs,
  RouteOutputs,
  TlsIpRestrictionInputs,
  TlsIpRestrictionOutputs,
} from "./types";

export interface ResourceTypes {
  httpsEdge: { inputs: EdgeInputs; outputs: EdgeOutputs; response: HttpsEdge };
  tlsEdge: { inputs: EdgeInputs; outputs: EdgeOutputs; response: TlsEdge };
  httpsEdgeRoute: { inputs: RouteInputs; outputs: RouteOutputs; response: Route };
  tlsEdgeIpRestriction: {
    inputs: TlsIpRestrictionInputs;
    outputs: TlsIpRestrictionOutputs;
    response: { edgeId: string; module: TlsIpRestriction };
  };
}
export type ResourceKind = keyof ResourceTypes;
export type Inputs<R extends ResourceKind> = ResourceTypes[R]["inputs"];
export type Outputs<R extends ResourceKind> = ResourceTypes[R]["outputs"];
export type ApiResponse<R extends ResourceKind> = ResourceTypes[R]["response"];

interface Model<R extends ResourceKind> {
  check(news: unknown, olds?: unknown): Checked<Inputs<R>>;
  canonical(stored: unknown, id?: string): Inputs<R>;
  fromResponse(response: ApiResponse<R>): Outputs<R>;
}

const edgeModel = { check: checkEdge, canonical: edgeCanonical, fromResponse: edgeFromResponse };
const MODELS: { [R in ResourceKind]: Model<R> } = {
  httpsEdge: edgeModel,
  tlsEdge: edgeModel,
  httpsEdgeRoute: { check: checkRoute, canonical: routeCanonical, fromResponse: routeFromResponse },
  tlsEdgeIpRestriction: {
    check: checkTlsIpRestriction,
    canonical: tlsIpRestrictionCanonical,
    fromResponse: (r) => tlsIpRestrictionFromResponse(r.edgeId, r.module),
  },
};

export const RESOURCE_KINDS = Object.keys(MODELS) as ResourceKind[];

/** Program inputs → canonical inputs, or failures named by Pulumi property path. Never throws. */
export const check = <R extends ResourceKind>(kind: R, news: unknown, olds?: unknown): Checked<Inputs<R>> =>
  MODELS[kind].check(news, olds);

/** Stored state (outputs, or inputs of any earlier version) → the canonical inputs it stands for. */
export const canonical = <R extends ResourceKind>(kind: R, stored: unknown, id?: string): Inputs<R> =>
  MODELS[kind].canonical(stored, id);

/** An API response → the resource's outputs. */
export const fromResponse = <R extends ResourceKind>(kind: R, response: ApiResponse<R>): Outputs<R> =>
  MODELS[kind].fromResponse(response);

export type { CheckFailure, Checked } from "./check";
export * from "./types";
