/**
 * Inputs as a person writes them: every value equal to the contract's default left out
 * (`enabled: true`, `rollingWindow: 0`, `metadata: ""`, an unset OAuth slot, ...). The defaults
 * are the zod schemas' own (`minimize`), never a list kept here. Omitting a default means the
 * default (check and the diff canonicalize both sides), so these inputs and the canonical ones
 * are the same configuration: what `pulumi import` stores, and what `pulumi-edge export` writes.
 */
import type { z } from "zod";
import {
  type EdgeCreate,
  edgeCreateSchema,
  type RouteCreate,
  routeCreateSchema,
  type TlsIpRestrictionMutate,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";
import { minimize } from "./canonical";
import { fromWire, toWire } from "./case";
import { isProps, type Props } from "./check";
import type { Inputs, ResourceKind } from "./index";
import type { Camelize } from "./types";

/** Per resource type: its inputs before defaults are filled (the contract's request input shapes). */
export interface WrittenTypes {
  httpsEdge: Camelize<EdgeCreate>;
  tlsEdge: Camelize<EdgeCreate>;
  httpsEdgeRoute: { edgeId: string } & Camelize<RouteCreate>;
  tlsEdgeIpRestriction: { edgeId: string } & Camelize<TlsIpRestrictionMutate>;
}
export type Written<R extends ResourceKind> = WrittenTypes[R];

/** The request schema whose defaults a resource's inputs take. */
const REQUEST_SCHEMAS: { [R in ResourceKind]: z.ZodType } = {
  httpsEdge: edgeCreateSchema,
  tlsEdge: edgeCreateSchema,
  httpsEdgeRoute: routeCreateSchema,
  tlsEdgeIpRestriction: tlsIpRestrictionMutateSchema,
};

/** Canonical inputs → the same configuration with every default left out (and no `adopt`). */
export function writtenInputs<R extends ResourceKind>(kind: R, inputs: Inputs<R>): Written<R> {
  const { edge_id: edgeId, adopt: _adopt, ...fields } = toWire<Props>(inputs);
  const minimal = minimize(REQUEST_SCHEMAS[kind], fields);
  return fromWire<Written<R>>({
    ...(edgeId === undefined ? {} : { edge_id: edgeId }),
    ...(isProps(minimal) ? minimal : {}),
  });
}
