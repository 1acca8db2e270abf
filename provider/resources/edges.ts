import * as pulumi from "@pulumi/pulumi";
import type { HttpsEdgeArgs, TlsEdgeArgs } from "./args";
import { EdgeDynamicResource } from "./glue";
import type { HttpsEdgeOutputs, TlsEdgeOutputs } from "./outputs";

/** Inputs of an edge, HTTPS or TLS alike (see HttpsEdgeArgs and TlsEdgeArgs). */
export type EdgeArgs = HttpsEdgeArgs & TlsEdgeArgs;

/** What HTTPS and TLS edges have in common. */
abstract class Edge extends EdgeDynamicResource {
  protected constructor(
    kind: "httpsEdge" | "tlsEdge",
    name: string,
    args: EdgeArgs,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const props = { description: undefined, metadata: undefined, hostports: undefined, ...args };
    super(kind, name, { ...props, uri: undefined, createdAt: undefined }, opts);
  }
}

/**
 * An HTTPS edge, which holds routes (what it is: HttpsEdgeArgs; its outputs: HttpsEdgeOutputs,
 * both generated from the one doc source).
 */
// The generated outputs, merged as types only (like `declare readonly`): the registered
// properties are Outputs at runtime.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface HttpsEdge extends HttpsEdgeOutputs {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class HttpsEdge extends Edge {
  constructor(name: string, args: HttpsEdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super("httpsEdge", name, args, opts);
  }

  /** Looks up an existing HTTPS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): HttpsEdge {
    return new HttpsEdge(name, {}, { ...opts, id });
  }
}

/**
 * A TLS edge, which has one IP restriction module (what it is: TlsEdgeArgs; its outputs:
 * TlsEdgeOutputs, both generated from the one doc source).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface TlsEdge extends TlsEdgeOutputs {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class TlsEdge extends Edge {
  constructor(name: string, args: TlsEdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super("tlsEdge", name, args, opts);
  }

  /** Looks up an existing TLS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): TlsEdge {
    return new TlsEdge(name, {}, { ...opts, id });
  }
}
