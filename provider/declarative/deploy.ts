/** Turns a validated edge configuration into resources: one per edge, route and module. */
import * as pulumi from "@pulumi/pulumi";
import type { HttpsEdgeRouteArgs, TlsEdgeIpRestrictionArgs } from "../resources/args";
import { type EdgeArgs, HttpsEdge, TlsEdge } from "../resources/edges";
import { HttpsEdgeRoute } from "../resources/route";
import { TlsEdgeIpRestriction } from "../resources/tls-ip-restriction";
import { type EdgeConfig, SecretRef } from "./load";

/**
 * The four resource classes a configuration is declared with: this package's dynamic resources
 * (the default), or the packaged provider's (`import * as edge from "pulumi-edge/packaged"`,
 * then `{ resources: edge }`), which `pulumi import` can adopt existing objects into.
 */
export interface EdgeResourceClasses {
  HttpsEdge: new (name: string, args: EdgeArgs, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;
  TlsEdge: new (name: string, args: EdgeArgs, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;
  HttpsEdgeRoute: new (
    name: string,
    args: HttpsEdgeRouteArgs,
    opts?: pulumi.CustomResourceOptions,
  ) => pulumi.CustomResource;
  TlsEdgeIpRestriction: new (
    name: string,
    args: TlsEdgeIpRestrictionArgs,
    opts?: pulumi.CustomResourceOptions,
  ) => pulumi.CustomResource;
}

/** The dynamic resources of this package. */
const DYNAMIC = { HttpsEdge, TlsEdge, HttpsEdgeRoute, TlsEdgeIpRestriction } satisfies EdgeResourceClasses;
type DynamicClasses = typeof DYNAMIC;

export interface DeployEdgeConfigOptions {
  /** Resolves `!secret name` values. Default: the stack's secret config `name`. */
  secret?: (name: string) => pulumi.Input<string>;
  /** Options applied to every resource (provider, protect, ...). */
  resourceOptions?: pulumi.CustomResourceOptions;
}

/** The resources declared, by entry name, as instances of the classes deployed with. */
export interface DeployedEdges<S extends EdgeResourceClasses = DynamicClasses> {
  httpsEdges: Record<
    string,
    { edge: InstanceType<S["HttpsEdge"]>; routes: Record<string, InstanceType<S["HttpsEdgeRoute"]>> }
  >;
  tlsEdges: Record<
    string,
    { edge: InstanceType<S["TlsEdge"]>; ipRestriction?: InstanceType<S["TlsEdgeIpRestriction"]> }
  >;
}

/**
 * Declares the resources of a configuration. Resource names are the file's entry names
 * (`web`, `web.api`, `postgres.ipRestriction`), so renaming an entry replaces it and editing one
 * changes only it; `pulumi-edge export` writes the import file of an existing fleet in these names.
 */
export function deployEdgeConfig(config: EdgeConfig, options?: DeployEdgeConfigOptions): DeployedEdges;
export function deployEdgeConfig<S extends EdgeResourceClasses>(
  config: EdgeConfig,
  options: DeployEdgeConfigOptions & { resources: S },
): DeployedEdges<S>;
export function deployEdgeConfig(
  config: EdgeConfig,
  options: DeployEdgeConfigOptions & { resources?: EdgeResourceClasses } = {},
): DeployedEdges<EdgeResourceClasses> {
  const classes = options.resources ?? DYNAMIC;
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

  const deployed: DeployedEdges<EdgeResourceClasses> = { httpsEdges: {}, tlsEdges: {} };
  for (const [name, { routes, ...fields }] of Object.entries(config.httpsEdges)) {
    const edge = new classes.HttpsEdge(name, resolve<EdgeArgs>(fields), opts);
    const made: Record<string, pulumi.CustomResource> = {};
    for (const [routeName, route] of Object.entries(routes)) {
      const args: HttpsEdgeRouteArgs = {
        ...resolve<Omit<HttpsEdgeRouteArgs, "edgeId">>(route),
        edgeId: edge.id,
      };
      made[routeName] = new classes.HttpsEdgeRoute(`${name}.${routeName}`, args, opts);
    }
    deployed.httpsEdges[name] = { edge, routes: made };
  }
  for (const [name, { ipRestriction, ...fields }] of Object.entries(config.tlsEdges)) {
    const edge = new classes.TlsEdge(name, resolve<EdgeArgs>(fields), opts);
    const args =
      ipRestriction &&
      ({
        ...resolve<Omit<TlsEdgeIpRestrictionArgs, "edgeId">>(ipRestriction),
        edgeId: edge.id,
      } as TlsEdgeIpRestrictionArgs);
    deployed.tlsEdges[name] = {
      edge,
      ...(args
        ? { ipRestriction: new classes.TlsEdgeIpRestriction(`${name}.ipRestriction`, args, opts) }
        : {}),
    };
  }
  return deployed;
}
