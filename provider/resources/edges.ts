import * as pulumi from "@pulumi/pulumi";
import { glueProviders } from "./glue";

/** Inputs of an edge. The API has no update for edges: changing any of them replaces the edge. */
export interface EdgeArgs {
  /** Human-readable text. At most 255 bytes. */
  description?: pulumi.Input<string>;
  /** Arbitrary machine-readable user data. At most 4096 bytes. */
  metadata?: pulumi.Input<string>;
  /** Host and port pairs the edge listens on, e.g. `"example.com:443"`. */
  hostports?: pulumi.Input<pulumi.Input<string>[]>;
}

const outputOnly = { uri: undefined, createdAt: undefined };

/** An HTTPS edge: holds routes (see HttpsEdgeRoute). */
export class HttpsEdge extends pulumi.dynamic.Resource {
  declare readonly description: pulumi.Output<string>;
  declare readonly metadata: pulumi.Output<string>;
  declare readonly hostports: pulumi.Output<string[]>;
  /** URI of the edge as an API resource. */
  declare readonly uri: pulumi.Output<string>;
  /** RFC 3339 creation time. */
  declare readonly createdAt: pulumi.Output<string>;

  constructor(name: string, args: EdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super(
      glueProviders.httpsEdge,
      name,
      { description: undefined, metadata: undefined, hostports: undefined, ...args, ...outputOnly },
      opts,
      "edge",
      "HttpsEdge",
    );
  }

  /** Looks up an existing HTTPS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): HttpsEdge {
    return new HttpsEdge(name, {}, { ...opts, id });
  }
}

/** A TLS edge: has one IP restriction module (see TlsEdgeIpRestriction). */
export class TlsEdge extends pulumi.dynamic.Resource {
  declare readonly description: pulumi.Output<string>;
  declare readonly metadata: pulumi.Output<string>;
  declare readonly hostports: pulumi.Output<string[]>;
  declare readonly uri: pulumi.Output<string>;
  declare readonly createdAt: pulumi.Output<string>;

  constructor(name: string, args: EdgeArgs = {}, opts?: pulumi.CustomResourceOptions) {
    super(
      glueProviders.tlsEdge,
      name,
      { description: undefined, metadata: undefined, hostports: undefined, ...args, ...outputOnly },
      opts,
      "edge",
      "TlsEdge",
    );
  }

  /** Looks up an existing TLS edge by id (read-only in this stack). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): TlsEdge {
    return new TlsEdge(name, {}, { ...opts, id });
  }
}
