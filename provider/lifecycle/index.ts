/** The four resource types and their face-neutral lifecycles, by the key both faces use. */
import { httpsEdgeLifecycle, tlsEdgeLifecycle } from "./edge";
import { routeLifecycle } from "./route";
import { tlsIpRestrictionLifecycle } from "./tls-ip-restriction";
import type { Inputs, Outputs, ResourceKind } from "../model";
import type { HttpsEdge, Route, TlsEdge, TlsIpRestriction } from "../../sdk/contract";
import type { Lifecycle } from "./types";

/** What a kind's read finds on the service (see Lifecycle.readFound). */
export interface Found {
  httpsEdge: HttpsEdge | TlsEdge;
  tlsEdge: HttpsEdge | TlsEdge;
  httpsEdgeRoute: Route;
  tlsEdgeIpRestriction: TlsIpRestriction;
}

export const LIFECYCLES: { [K in ResourceKind]: Lifecycle<Inputs<K>, Outputs<K>, Found[K]> } = {
  httpsEdge: httpsEdgeLifecycle,
  tlsEdge: tlsEdgeLifecycle,
  httpsEdgeRoute: routeLifecycle,
  tlsEdgeIpRestriction: tlsIpRestrictionLifecycle,
};

export type { Lifecycle, Location, OperationContext, ResourceLog } from "./types";
export type { Inputs, Outputs, ResourceKind } from "../model";
export { kindOfType, RESOURCE_KINDS, TYPE_NAMES } from "../model";
