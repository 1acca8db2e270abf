/**
 * Serves EdgeProvider over Pulumi's provider protocol with `@pulumi/pulumi/provider`'s `main`,
 * mending five gaps of its server, each seen on 3.259.0:
 * - its Configure answers without handing the configuration to the provider: we read the
 *   request's args, variables and provider name first, then let it answer (accepting secrets);
 * - its CheckConfig is unimplemented, so the engine keeps provider inputs as typed: we answer
 *   them with the schema's secret inputs (`apiKey`) wrapped, so the state keeps those encrypted,
 *   with the stack's anchor (../identity) among them, and with a failure where a deploy would
 *   refuse the settings; its DiffConfig too: we answer that the anchor alone is no change;
 * - its Read calls `getProperties().toJavaScript()`, and an import sends no properties: we give
 *   such a request an empty property set, so `pulumi import` reaches `read` with `{}`;
 * - its DiffResult has no detailed diff: we put the plan's, property path by path, on the answer,
 *   so a preview shows exactly what will change and whether it replaces.
 * Each by wrapping the service implementation handed to grpc-js, nothing else.
 */
import * as pulumiProvider from "@pulumi/pulumi/provider";
import { fromPulumi } from "../engine/pulumi-internals";
import { exitWhenEngineGone } from "../engine/watchdog";
import type { PropertyChange } from "../plan/detail";
import type { EdgeProvider } from "./provider";

/** A protobuf Struct as the requests hand their properties. */
type JsStruct = { toJavaScript(): Record<string, unknown> };
/**
 * What the handlers below read of the requests grpc-js hands them (ConfigureRequest,
 * CheckRequest, DiffRequest, ReadRequest of provider_pb): the getters each uses; those only some
 * kinds have are optional.
 */
interface Request {
  getVariablesMap(): { forEach(f: (v: string, k: string) => void): void };
  getArgs(): JsStruct | undefined;
  getName?(): string | undefined;
  getUrn(): string;
  getOlds?(): JsStruct | undefined;
  getNews?(): JsStruct | undefined;
  getOldInputs?(): JsStruct | undefined;
  getProperties(): unknown;
  setProperties(properties: unknown): void;
}
type Call = { request: Request };
type Callback = (err: unknown, value?: unknown) => void;
type Handler = (call: Call, callback: Callback) => void;
/** A service's implementation as grpc-js takes it: a handler per method name. */
type Impl = Record<string, Handler | undefined>;

function mendServer(edge: EdgeProvider): void {
  type AddService = (this: unknown, service: object, impl: Impl) => void;
  const grpc = fromPulumi<{ Server: { prototype: { addService: AddService } } }>("@grpc/grpc-js");
  const { Struct } = fromPulumi<{ Struct: (new () => unknown) & { fromJavaScript(v: object): unknown } }>(
    "google-protobuf/google/protobuf/struct_pb",
  );
  const addService = grpc.Server.prototype.addService;
  grpc.Server.prototype.addService = function (service: object, impl: Impl) {
    const handlers: Record<string, Handler> = {};
    for (const name of Object.keys(service)) {
      const h = impl[name];
      if (typeof h === "function") handlers[name] = h.bind(impl);
    }
    const configure = handlers.configure;
    const read = handlers.read;
    const diff = handlers.diff;
    if (configure) {
      handlers.configure = (call, callback) => {
        try {
          const variables: Record<string, string> = {};
          call.request.getVariablesMap().forEach((v, k) => (variables[k] = v));
          const args = call.request.getArgs();
          const name = call.request.getName?.();
          const urn = call.request.getUrn();
          edge.configure({
            args: args?.toJavaScript() ?? {},
            variables,
            name: name || undefined,
            urn: urn || undefined,
          });
        } catch (e) {
          callback(e);
          return;
        }
        configure(call, callback);
      };
    }
    const props = (value: JsStruct | undefined) => value?.toJavaScript() ?? {};
    handlers.checkConfig = (call, callback) => {
      try {
        const { CheckResponse, CheckFailure } = fromPulumi<ProviderProto>("@pulumi/pulumi/proto/provider_pb");
        const r = call.request;
        const urn = r.getUrn?.();
        const { inputs, failures } = edge.checkConfig(
          typeof urn === "string" ? urn : "",
          props(r.getOlds?.()),
          props(r.getNews?.()),
        );
        const response = new CheckResponse();
        response.setInputs(Struct.fromJavaScript(inputs));
        response.setFailuresList(
          failures.map((f) => {
            const failure = new CheckFailure();
            failure.setProperty(f.property);
            failure.setReason(f.reason);
            return failure;
          }),
        );
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
        if (!call.request.getProperties()) call.request.setProperties(new Struct());
        read(call, callback);
      };
    }
    if (diff) {
      handlers.diff = (call, callback) => {
        const urn = call.request.getUrn();
        diff(call, (err, answer) => {
          const changes = edge.takeDetailedDiff(urn);
          if (!err && changes && isDiffAnswer(answer)) withDetailedDiff(answer, changes);
          callback(err, answer);
        });
      };
    }
    addService.call(this, service, handlers);
  };
}

interface ProviderProto {
  PropertyDiff: new () => { setKind(k: number): void; setInputdiff(v: boolean): void };
  CheckResponse: new () => { setInputs(inputs: unknown): void; setFailuresList(failures: unknown[]): void };
  CheckFailure: new () => { setProperty(p: string): void; setReason(r: string): void };
  DiffResponse: (new () => { setChanges(c: number): void }) & {
    DiffChanges: { DIFF_NONE: number; DIFF_SOME: number };
  };
}
interface DiffAnswer {
  getDetaileddiffMap(): { set(key: string, value: unknown): void };
  setHasdetaileddiff(v: boolean): void;
}
/** The answer of a Diff: a DiffResponse, which has a detailed diff to fill. */
const isDiffAnswer = (answer: unknown): answer is DiffAnswer =>
  typeof answer === "object" &&
  answer !== null &&
  "getDetaileddiffMap" in answer &&
  typeof answer.getDetaileddiffMap === "function";

/** Puts `changes` on a DiffResponse as its detailed diff (input paths, replacing or not). */
function withDetailedDiff(response: DiffAnswer, changes: PropertyChange[]): void {
  const { PropertyDiff } = fromPulumi<ProviderProto>("@pulumi/pulumi/proto/provider_pb");
  // PropertyDiff.Kind: ADD, ADD_REPLACE, DELETE, DELETE_REPLACE, UPDATE, UPDATE_REPLACE.
  const KIND = { add: 0, delete: 2, update: 4 } as const;
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
    edge.host.connectEngine(engine);
    exitWhenEngineGone(engine);
  }
  return pulumiProvider.main(edge, args);
}
