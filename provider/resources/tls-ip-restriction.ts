import * as pulumi from "@pulumi/pulumi";
import { EdgeDynamicResource } from "./glue";

export interface TlsEdgeIpRestrictionArgs {
  /** The TLS edge whose IP restriction module this is. Changing it replaces the resource. */
  edgeId: pulumi.Input<string>;
  /** True applies the module to traffic, false disables it. Default true. */
  enabled?: pulumi.Input<boolean>;
  /** All IP policies used to check whether a source IP may reach the edge. At least one. Order does not matter. */
  ipPolicyIds: pulumi.Input<pulumi.Input<string>[]>;
  /**
   * Take over a module that already exists on the edge (its configuration is replaced by this
   * one). Without it, creating over an existing module fails rather than overwrite it.
   */
  adopt?: pulumi.Input<boolean>;
}

/** The IP restriction module of a TLS edge. Create and update replace it whole (PUT); delete removes it. */
export class TlsEdgeIpRestriction extends EdgeDynamicResource {
  declare readonly edgeId: pulumi.Output<string>;
  declare readonly enabled: pulumi.Output<boolean>;
  declare readonly ipPolicyIds: pulumi.Output<string[]>;

  constructor(name: string, args: TlsEdgeIpRestrictionArgs, opts?: pulumi.CustomResourceOptions) {
    super("tlsEdgeIpRestriction", "TlsEdgeIpRestriction", name, { enabled: undefined, ...args }, opts);
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
