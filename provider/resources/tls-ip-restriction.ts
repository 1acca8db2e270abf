import * as pulumi from "@pulumi/pulumi";
import type { TlsEdgeIpRestrictionArgs } from "./args";
import { EdgeDynamicResource } from "./glue";

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
