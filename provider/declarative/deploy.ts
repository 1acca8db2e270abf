/** Turns a validated edge configuration into resources: one per edge, route and module. */
import * as pulumi from "@pulumi/pulumi";
import type { HttpsEdgeRouteArgs, TlsEdgeIpRestrictionArgs } from "../resources/args";
import { type EdgeArgs, HttpsEdge, TlsEdge } from "../resources/edges";
import { HttpsEdgeRoute } from "../resources/route";
import { TlsEdgeIpRestriction } from "../resources/tls-ip-restriction";
import { type EdgeConfig, SecretRef } from "./load";

export interface DeployEdgeConfigOptions {
  /** Resolves `!secret name` values. Default: the stack's secret config `name`. */
  secret?: (name: string) => pulumi.Input<string>;
  /** Options applied to every resource (provider, protect, ...). */
  resourceOptions?: pulumi.CustomResourceOptions;
}

export interface DeployedEdges {
  httpsEdges: Record<string, { edge: HttpsEdge; routes: Record<string, HttpsEdgeRoute> }>;
  tlsEdges: Record<string, { edge: TlsEdge; ipRestriction?: TlsEdgeIpRestriction }>;
}

/**
 * Declares the resources of a configuration. Resource names are the file's entry names
 * (`web`, `web.api`), so renaming an entry replaces it and editing one changes only it.
 */
export function deployEdgeConfig(config: EdgeConfig, options: DeployEdgeConfigOptions = {}): DeployedEdges {
  const secret = options.secret ?? ((name: string) => new pulumi.Config().requireSecret(name));
  /** Every `!secret name` replaced by the secret it names; the shapes were checked when loaded. */
  const resolve = <T>(value: unknown): T => resolveValue(value) as T;
  const resolveValue = (value: unknown): unknown => {
    if (value instanceof SecretRef) return secret(value.name);
    if (Array.isArray(value)) return value.map(resolveValue);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveValue(v)]));
    }
    return value;
  };
  const opts = options.resourceOptions;

  const deployed: DeployedEdges = { httpsEdges: {}, tlsEdges: {} };
  for (const [name, { routes, ...fields }] of Object.entries(config.httpsEdges)) {
    const edge = new HttpsEdge(name, resolve<EdgeArgs>(fields), opts);
    const made: Record<string, HttpsEdgeRoute> = {};
    for (const [routeName, route] of Object.entries(routes)) {
      const args: HttpsEdgeRouteArgs = {
        ...resolve<Omit<HttpsEdgeRouteArgs, "edgeId">>(route),
        edgeId: edge.id,
      };
      made[routeName] = new HttpsEdgeRoute(`${name}.${routeName}`, args, opts);
    }
    deployed.httpsEdges[name] = { edge, routes: made };
  }
  for (const [name, { ipRestriction, ...fields }] of Object.entries(config.tlsEdges)) {
    const edge = new TlsEdge(name, resolve<EdgeArgs>(fields), opts);
    const args =
      ipRestriction &&
      ({
        ...resolve<Omit<TlsEdgeIpRestrictionArgs, "edgeId">>(ipRestriction),
        edgeId: edge.id,
      } as TlsEdgeIpRestrictionArgs);
    deployed.tlsEdges[name] = {
      edge,
      ...(args ? { ipRestriction: new TlsEdgeIpRestriction(`${name}.ipRestriction`, args, opts) } : {}),
    };
  }
  return deployed;
}
