/**
 * Serves EdgeProvider over Pulumi's provider protocol with `@pulumi/pulumi/provider`'s `main`,
 * mending five gaps of its server in 3.259.0 (see ../../../shared notes, packaged-provider-facts):
 * - its Configure answers without handing the configuration to the provider: we read the
 *   request's args, variables and provider name first, then let it answer (accepting secrets);
 * - its CheckConfig is unimplemented, so the engine keeps provider inputs as typed: we answer
 *   them with the schema's secret inputs (`apiKey`) wrapped, so the state keeps those encrypted,
 *   and with the stack's anchor (../identity) among them; its DiffConfig too: we answer that the
 *   anchor alone is no change;
 * - its Read calls `getProperties().toJavaScript()`, and an import sends no properties: we give
 *   such a request an empty property set, so `pulumi import` reaches `read` with `{}`;
 * - its DiffResult has no detailed diff: we put the plan's, property path by path, on the answer,
 *   so a preview shows exactly what will change and whether it replaces.
 * Each by wrapping the service implementation handed to grpc-js, nothing else.
 */
import * as pulumiProvider from "@pulumi/pulumi/provider";
import { connectEngineLog } from "../engine/log";
import { fromPulumi } from "../engine/pulumi-internals";
import { exitWhenEngineGone } from "../engine/watchdog";
import type { PropertyChange } from "../plan/detail";
import type { EdgeProvider } from "./provider";

type Call = { request: Record<string, (...a: unknown[]) => unknown> };
type Callback = (err: unknown, value?: unknown) => void;
type Handler = (call: Call, callback: Callback) => void;

function mendServer(edge: EdgeProvider): void {
  type AddService = (this: unknown, service: object, impl: object) => void;
  const grpc = fromPulumi<{ Server: { prototype: { addService: AddService } } }>("@grpc/grpc-js");
  const { Struct } = fromPulumi<{ Struct: (new () => unknown) & { fromJavaScript(v: object): unknown } }>(
    "google-protobuf/google/protobuf/struct_pb",
  );
  const addService = grpc.Server.prototype.addService;
  grpc.Server.prototype.addService = function (service: object, impl: object) {
    const original = impl as Record<string, Handler | undefined>;
    const handlers: Record<string, Handler> = {};
    for (const name of Object.keys(service)) {
      const h = original[name];
      if (typeof h === "function") handlers[name] = h.bind(impl);
    }
    const configure = handlers.configure;
    const read = handlers.read;
    const diff = handlers.diff;
    if (configure) {
      handlers.configure = (call, callback) => {
        try {
          const variables: Record<string, string> = {};
          const map = call.request.getVariablesMap!() as { forEach(f: (v: string, k: string) => void): void };
          map.forEach((v, k) => (variables[k] = v));
          const args = call.request.getArgs!() as { toJavaScript(): Record<string, unknown> } | undefined;
          const name = call.request.getName?.() as string | undefined;
          edge.configure({ args: args?.toJavaScript() ?? {}, variables, name: name || undefined });
        } catch (e) {
          callback(e);
          return;
        }
        configure(call, callback);
      };
    }
    type Props = { toJavaScript(): Record<string, unknown> } | undefined;
    const props = (value: unknown) => (value as Props)?.toJavaScript() ?? {};
    handlers.checkConfig = (call, callback) => {
      try {
        const { CheckResponse } = fromPulumi<ProviderProto>("@pulumi/pulumi/proto/provider_pb");
        const r = call.request;
        const urn = r.getUrn?.();
        const inputs = edge.checkConfig(
          typeof urn === "string" ? urn : "",
          props(r.getOlds?.()),
          props(r.getNews?.()),
        );
        const response = new CheckResponse();
        response.setInputs(Struct.fromJavaScript(inputs));
        callback(undefined, response);
      } catch (e) {
        callback(e);
      }
    };
    handlers.diffConfig = (call, callback) => {
      try {
        const { DiffResponse } = fromPulumi<ProviderProto>("@pulumi/pulumi/proto/provider_pb");
        const r = call.request;
        const changed = edge.diffConfig(props(r.getOldInputs?.() ?? r.getOlds?.()), props(r.getNews?.()));
        const response = new DiffResponse();
        response.setChanges(DiffResponse.DiffChanges[changed ? "DIFF_SOME" : "DIFF_NONE"]);
        callback(undefined, response);
      } catch (e) {
        callback(e);
      }
    };
    if (read) {
      handlers.read = (call, callback) => {
        if (!call.request.getProperties!()) call.request.setProperties!(new Struct());
        read(call, callback);
      };
    }
    if (diff) {
      handlers.diff = (call, callback) => {
        const urn = call.request.getUrn!() as string;
        diff(call, (err, answer) => {
          const changes = edge.takeDetailedDiff(urn);
          if (!err && changes && answer) withDetailedDiff(answer, changes);
          callback(err, answer);
        });
      };
    }
    addService.call(this, service, handlers);
  };
}

interface ProviderProto {
  PropertyDiff: new () => { setKind(k: number): void; setInputdiff(v: boolean): void };
  CheckResponse: new () => { setInputs(inputs: unknown): void };
  DiffResponse: (new () => { setChanges(c: number): void }) & {
    DiffChanges: { DIFF_NONE: number; DIFF_SOME: number };
  };
}
interface DiffAnswer {
  getDetaileddiffMap(): { set(key: string, value: unknown): void };
  setHasdetaileddiff(v: boolean): void;
}

/** Puts `changes` on a DiffResponse as its detailed diff (input paths, replacing or not). */
function withDetailedDiff(answer: unknown, changes: PropertyChange[]): void {
  const { PropertyDiff } = fromPulumi<ProviderProto>("@pulumi/pulumi/proto/provider_pb");
  // PropertyDiff.Kind: ADD, ADD_REPLACE, DELETE, DELETE_REPLACE, UPDATE, UPDATE_REPLACE.
  const KIND = { add: 0, delete: 2, update: 4 } as const;
  const response = answer as DiffAnswer;
  const map = response.getDetaileddiffMap();
  for (const change of changes) {
    const diff = new PropertyDiff();
    diff.setKind(KIND[change.kind] + (change.replace ? 1 : 0));
    diff.setInputdiff(true);
    map.set(change.path, diff);
  }
  response.setHasdetaileddiff(true);
}

/** The engine's address among the plugin's arguments (`host:port`; flags may come first). */
const engineAddress = (args: string[]) => args.find((a) => /^[^-].*:\d+$/.test(a));

export function serve(edge: EdgeProvider, args: string[]): Promise<void> {
  mendServer(edge);
  const engine = engineAddress(args);
  if (engine) {
    connectEngineLog(engine);
    exitWhenEngineGone(engine);
  }
  return pulumiProvider.main(edge, args);
}
