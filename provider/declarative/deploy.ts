/** Turns a validated edge configuration into resources: one per edge, route and module. */
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, TlsEdge } from "../resources/edges";
import { HttpsEdgeRoute, type HttpsEdgeRouteArgs } from "../resources/route";
import { TlsEdgeIpRestriction, type TlsEdgeIpRestrictionArgs } from "../resources/tls-ip-restriction";
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
  const resolve = (value: unknown): any => {
    if (value instanceof SecretRef) return secret(value.name);
    if (Array.isArray(value)) return value.map(resolve);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
    }
    return value;
  };
  const opts = options.resourceOptions;

  const deployed: DeployedEdges = { httpsEdges: {}, tlsEdges: {} };
  for (const [name, { routes, ...fields }] of Object.entries(config.httpsEdges)) {
    const edge = new HttpsEdge(name, resolve(fields), opts);
    const made: Record<string, HttpsEdgeRoute> = {};
    for (const [routeName, route] of Object.entries(routes)) {
      const args = { ...resolve(route), edgeId: edge.id } as HttpsEdgeRouteArgs;
      made[routeName] = new HttpsEdgeRoute(`${name}.${routeName}`, args, opts);
    }
    deployed.httpsEdges[name] = { edge, routes: made };
  }
  for (const [name, { ipRestriction, ...fields }] of Object.entries(config.tlsEdges)) {
    const edge = new TlsEdge(name, resolve(fields), opts);
    const args =
      ipRestriction && ({ ...resolve(ipRestriction), edgeId: edge.id } as TlsEdgeIpRestrictionArgs);
    deployed.tlsEdges[name] = {
      edge,
      ...(args ? { ipRestriction: new TlsEdgeIpRestriction(`${name}.ipRestriction`, args, opts) } : {}),
    };
  }
  return deployed;
}
