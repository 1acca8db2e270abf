/**
 * What the dynamic resources' serialized providers load by package name (`pulumi-edge/runtime`)
 * inside the engine's dynamic provider host. Keeping the logic here, not in the state, keeps the
 * state small and lets state written from one checkout run from another.
 *
 * The host loads this module once: it makes the process's one ProviderProcess (engine/process),
 * which every provider below is handed. `handlers[kind]` is what `__provider` (see
 * resources/glue) returns; `providers` and `configure` are what the closures serialized by
 * pulumi-edge 0.1 call, kept for their state.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { dynamicProvider, stackAnchorProvider } from "./dynamic";
import { ProviderProcess } from "./engine/process";
import { exitWhenEngineGone } from "./engine/watchdog";
import type { ResourceKind } from "./lifecycle";

export type ProviderKind = ResourceKind;

const host = new ProviderProcess();

export const providers: { [K in ResourceKind]: ReturnType<typeof dynamicProvider<K>> } = {
  httpsEdge: dynamicProvider("httpsEdge", host),
  tlsEdge: dynamicProvider("tlsEdge", host),
  httpsEdgeRoute: dynamicProvider("httpsEdgeRoute", host),
  tlsEdgeIpRestriction: dynamicProvider("tlsEdgeIpRestriction", host),
};

export async function configure(req: dynamic.ConfigureRequest): Promise<void> {
  host.configure(req.config);
}

const withConfigure = <P extends object>(provider: P) => ({ ...provider, configure });

/** The providers as the host gets them from `__provider`: configured by the host itself. */
export const handlers = {
  httpsEdge: withConfigure(providers.httpsEdge),
  tlsEdge: withConfigure(providers.tlsEdge),
  httpsEdgeRoute: withConfigure(providers.httpsEdgeRoute),
  tlsEdgeIpRestriction: withConfigure(providers.tlsEdgeIpRestriction),
  stackAnchor: stackAnchorProvider(host),
};

/**
 * Inside the dynamic provider host (`node .../cmd/dynamic-provider <engine address>`): tell the
 * engine's log, and end with the engine.
 */
const inHost = /[\\/]cmd[\\/]dynamic-provider[\\/]index\.js$/.test(require.main?.filename ?? "");
const engineAddress = process.argv[2];
if (inHost && engineAddress) {
  host.connectEngine(engineAddress);
  exitWhenEngineGone(engineAddress);
}
