import * as pulumi from "@pulumi/pulumi";
import type { TlsEdgeIpRestrictionArgs } from "./args";
import { EdgeDynamicResource } from "./glue";
import type { TlsEdgeIpRestrictionOutputs } from "./outputs";

/**
 * The IP restriction module of a TLS edge (what it does: TlsEdgeIpRestrictionArgs; its outputs:
 * TlsEdgeIpRestrictionOutputs, both generated from the one doc source).
 */
// The generated outputs, merged as types only (like `declare readonly`): the registered
// properties are Outputs at runtime.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface TlsEdgeIpRestriction extends TlsEdgeIpRestrictionOutputs {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class TlsEdgeIpRestriction extends EdgeDynamicResource {
  constructor(name: string, args: TlsEdgeIpRestrictionArgs, opts?: pulumi.CustomResourceOptions) {
    super("tlsEdgeIpRestriction", name, { enabled: undefined, ...args }, opts);
  }

  /** Looks up the IP restriction module of a TLS edge (its id is the edge's id). */
  static get(
    name: string,
    edgeId: pulumi.Input<string>,
    opts?: pulumi.CustomResourceOptions,
  ): TlsEdgeIpRestriction {
    return new TlsEdgeIpRestriction(name, { edgeId, ipPolicyIds: [] }, { ...opts, id: edgeId });
  }
}
