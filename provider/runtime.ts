/**
 * What the serialized dynamic providers load by package name (`pulumi-edge/runtime`) inside the
 * engine's provider process. Keeping the logic here, not in the serialized closure, keeps the
 * state small and lets state written from one checkout run from another.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { configureFromStack } from "./config";
import { httpsEdgeProvider, tlsEdgeProvider } from "./dynamic/edges";
import { routeProvider } from "./dynamic/route";
import { tlsIpRestrictionProvider } from "./dynamic/tls-ip-restriction";

export const providers = {
  httpsEdge: httpsEdgeProvider,
  tlsEdge: tlsEdgeProvider,
  httpsEdgeRoute: routeProvider,
  tlsEdgeIpRestriction: tlsIpRestrictionProvider,
} satisfies Record<string, dynamic.ResourceProvider>;

export type ProviderKind = keyof typeof providers;

export async function configure(req: dynamic.ConfigureRequest): Promise<void> {
  configureFromStack(req.config);
}
