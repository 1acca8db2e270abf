/**
 * What the serialized dynamic providers load by package name (`pulumi-edge/runtime`) inside the
 * engine's provider process. Keeping the logic here, not in the serialized closure, keeps the
 * state small and lets state written from one checkout run from another.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { configureFromStack } from "./config";
import { dynamicProvider } from "./dynamic";
import type { ResourceKind } from "./lifecycle";

export const providers: { [K in ResourceKind]: ReturnType<typeof dynamicProvider<K>> } = {
  httpsEdge: dynamicProvider("httpsEdge"),
  tlsEdge: dynamicProvider("tlsEdge"),
  httpsEdgeRoute: dynamicProvider("httpsEdgeRoute"),
  tlsEdgeIpRestriction: dynamicProvider("tlsEdgeIpRestriction"),
};

export type ProviderKind = ResourceKind;

export async function configure(req: dynamic.ConfigureRequest): Promise<void> {
  configureFromStack(req.config);
}
