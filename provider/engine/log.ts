/**
 * The engine's log, as both faces write to it: messages tied to a resource's URN, shown by the
 * CLI in that resource's row and its diagnostics (`pulumi up` prints them; `--non-interactive`
 * too). The faces learn the engine's address when the engine starts them; until then, or when
 * the engine cannot take a message, it goes to stderr, which the engine shows as well.
 */
import type { ResourceLog } from "../lifecycle";
import { fromPulumi, grpc } from "./pulumi-internals";

type Severity = "info" | "warn";

interface EngineProto {
  LogRequest: new () => {
    setSeverity(v: number): void;
    setMessage(v: string): void;
    setUrn(v: string): void;
  };
  LogSeverity: { INFO: number; WARNING: number };
}
interface EngineClient {
  log(request: unknown, callback: (error: unknown) => void): void;
}

let engine: { client: EngineClient; proto: EngineProto } | undefined;

/** Sends the log to the engine at `address` (host:port), from now on. */
export function connectEngineLog(address: string): void {
  const proto = fromPulumi<EngineProto>("@pulumi/pulumi/proto/engine_pb");
  const { EngineClient } = fromPulumi<{ EngineClient: new (a: string, c: unknown) => EngineClient }>(
    "@pulumi/pulumi/proto/engine_grpc_pb",
  );
  engine = { client: new EngineClient(address, grpc().credentials.createInsecure()), proto };
}

function write(severity: Severity, message: string, urn?: string): void {
  const toStderr = () => process.stderr.write(`${severity === "warn" ? "warning: " : ""}${message}\n`);
  if (!engine) return void toStderr();
  const request = new engine.proto.LogRequest();
  request.setSeverity(severity === "warn" ? engine.proto.LogSeverity.WARNING : engine.proto.LogSeverity.INFO);
  request.setMessage(message);
  if (urn) request.setUrn(urn);
  engine.client.log(request, (error) => {
    if (error) toStderr();
  });
}

/** The log of the resource `urn` (or of the provider, when the face does not know the URN). */
export function resourceLog(urn?: string): ResourceLog {
  return {
    info: (message) => write("info", message, urn),
    warn: (message) => write("warn", message, urn),
  };
}
