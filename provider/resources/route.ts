import * as pulumi from "@pulumi/pulumi";
import { isProps, type Props } from "../model/check";
import { mapLeaves, ROUTE_SECRET_LEAVES } from "../model/leaves";
import { MODULE_PROPERTY } from "../model/route";
import type { HttpsEdgeRouteArgs } from "./args";
import { EdgeDynamicResource } from "./glue";
import type { HttpsEdgeRouteOutputs } from "./outputs";

const MODULES = Object.values(MODULE_PROPERTY);

/** A plain object of the program's inputs: a leaf inside it can be marked alone (not in an Output or a Promise). */
const plain = (v: unknown): v is Props =>
  isProps(v) && !pulumi.Output.isInstance(v) && !(v instanceof Promise);

/**
 * A route of an HTTPS edge (what it does: HttpsEdgeRouteArgs; its outputs: HttpsEdgeRouteOutputs,
 * both generated from the one doc source). Lookup: `HttpsEdgeRoute.get`.
 */
// The generated outputs, merged as types only (like `declare readonly`): registering the
// properties below makes each one an Output at runtime.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface HttpsEdgeRoute extends HttpsEdgeRouteOutputs {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class HttpsEdgeRoute extends EdgeDynamicResource {
  constructor(name: string, args: HttpsEdgeRouteArgs, opts?: pulumi.CustomResourceOptions) {
    const props: Record<string, unknown> = { description: undefined, metadata: undefined };
    for (const m of MODULES) props[m] = undefined;
    Object.assign(props, args, { uri: undefined, createdAt: undefined, routeId: undefined });
    // The provider wraps the secret leaves of what it answers (the state keeps them encrypted);
    // marked here too, so that the engine never shows one (it prints inputs in check failures). A
    // module given as an Output is marked whole: its leaves cannot be reached before it resolves.
    const marked = mapLeaves(props, ROUTE_SECRET_LEAVES, (v) => pulumi.secret(v), plain);
    super("httpsEdgeRoute", name, marked, opts);
  }

  /** Looks up an existing route by id (read-only in this stack). */
  static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state: { edgeId: pulumi.Input<string> },
    opts?: pulumi.CustomResourceOptions,
  ): HttpsEdgeRoute {
    return new HttpsEdgeRoute(name, { edgeId: state.edgeId } as HttpsEdgeRouteArgs, { ...opts, id });
  }
}
