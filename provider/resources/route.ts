import * as pulumi from "@pulumi/pulumi";
import { isProps, type Props } from "../model/check";
import { mapLeaves, ROUTE_SECRET_LEAVES } from "../model/leaves";
import { MODULE_PROPERTY } from "../model/route";
import type { RouteOutputs } from "../model/types";
import type { HttpsEdgeRouteArgs, MatchType } from "./args";
import { EdgeDynamicResource } from "./glue";

/** Outputs of a route's modules: canonical (every default filled), absent when not configured. */
type Out<P extends keyof RouteOutputs> = pulumi.Output<RouteOutputs[P]>;

const MODULES = Object.values(MODULE_PROPERTY);

/** A plain object of the program's inputs: a leaf inside it can be marked alone (not in an Output or a Promise). */
const plain = (v: unknown): v is Props =>
  isProps(v) && !pulumi.Output.isInstance(v) && !(v instanceof Promise);

/**
 * A route of an HTTPS edge. A module given here is managed whole: changing any field of it
 * replaces that module on the service (PATCH), removing it deletes it with its own DELETE, and
 * modules never given are left alone. Credentials (`oidc.clientSecret`, `oauth.provider.*.clientSecret`,
 * `webhookVerification.secret`) are secret in the state and in previews whether or not the
 * program marked them; the rest of their module stays readable.
 */
export class HttpsEdgeRoute extends EdgeDynamicResource {
  declare readonly edgeId: pulumi.Output<string>;
  /** The route's id on the service (also the resource id). */
  declare readonly routeId: pulumi.Output<string>;
  declare readonly matchType: pulumi.Output<MatchType>;
  declare readonly match: pulumi.Output<string>;
  declare readonly description: pulumi.Output<string>;
  declare readonly metadata: pulumi.Output<string>;
  /** URI of the route as an API resource. */
  declare readonly uri: pulumi.Output<string>;
  /** RFC 3339 creation time. */
  declare readonly createdAt: pulumi.Output<string>;
  declare readonly backend: Out<"backend">;
  declare readonly ipRestriction: Out<"ipRestriction">;
  declare readonly circuitBreaker: Out<"circuitBreaker">;
  declare readonly compression: Out<"compression">;
  declare readonly requestHeaders: Out<"requestHeaders">;
  declare readonly responseHeaders: Out<"responseHeaders">;
  declare readonly webhookVerification: Out<"webhookVerification">;
  declare readonly oauth: Out<"oauth">;
  declare readonly saml: Out<"saml">;
  declare readonly oidc: Out<"oidc">;
  declare readonly websocketTcpConverter: Out<"websocketTcpConverter">;
  declare readonly userAgentFilter: Out<"userAgentFilter">;
  declare readonly trafficPolicy: Out<"trafficPolicy">;

  constructor(name: string, args: HttpsEdgeRouteArgs, opts?: pulumi.CustomResourceOptions) {
    const props: Record<string, unknown> = { description: undefined, metadata: undefined };
    for (const m of MODULES) props[m] = undefined;
    Object.assign(props, args, { uri: undefined, createdAt: undefined, routeId: undefined });
    // The provider wraps the secret leaves of what it answers (the state keeps them encrypted);
    // marked here too, so that the engine never shows one (it prints inputs in check failures). A
    // module given as an Output is marked whole: its leaves cannot be reached before it resolves.
    const marked = mapLeaves(props, ROUTE_SECRET_LEAVES, (v) => pulumi.secret(v), plain);
    super("httpsEdgeRoute", "HttpsEdgeRoute", name, marked, opts);
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
