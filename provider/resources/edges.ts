import * as pulumi from "@pulumi/pulumi";
import type { HttpsEdgeArgs, TlsEdgeArgs } from "./args";
import { EdgeDynamicResource } from "./glue";

/** Inputs of an edge, HTTPS or TLS alike (see HttpsEdgeArgs and TlsEdgeArgs). */
export type EdgeArgs = HttpsEdgeArgs & TlsEdgeArgs;

/** What HTTPS and TLS edges have in common. */
abstract class Edge extends EdgeDynamicResource {
  declare readonly description: pulumi.Output<string>;
  declare readonly metadata: pulumi.Output<string>;
  declare readonly hostports: pulumi.Output<string[]>;
  /** URI of the edge as an API resource. */
  declare readonly uri: pulumi.Output<string>;
  /** RFC 3339 creation time. */
  declare readonly createdAt: pulumi.Output<string>;

  protected constructor(
    kind: "httpsEdge" | "tlsEdge",
    type: string,
    name: string,
    args: EdgeArgs,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const props = { description: undefined, metadata: undefined, hostports: undefined, ...args };
    super(kind, type, name, { ...props, uri: undefined, createdAt: undefined }, opts);
  }
}

/** An HTTPS edge: holds routes (see HttpsEdgeRoute). */
export class HttpsEdge extends Edge {
  constructor(name: string, args: HttpsEdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super("httpsEdge", "HttpsEdge", name, args, opts);
  }

  /** Looks up an existing HTTPS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): HttpsEdge {
    return new HttpsEdge(name, {}, { ...opts, id });
  }
}

/** A TLS edge: has one IP restriction module (see TlsEdgeIpRestriction). */
export class TlsEdge extends Edge {
  constructor(name: string, args: TlsEdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super("tlsEdge", "TlsEdge", name, args, opts);
  }

  /** Looks up an existing TLS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): TlsEdge {
    return new TlsEdge(name, {}, { ...opts, id });
  }
}
