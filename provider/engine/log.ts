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

/** The engine's log as one provider process writes to it (held by its ProviderProcess). */
export class EngineLog {
  private engine: { client: EngineClient; proto: EngineProto } | undefined;

  /** Sends the log to the engine at `address` (host:port), from now on. */
  connect(address: string): void {
    const proto = fromPulumi<EngineProto>("@pulumi/pulumi/proto/engine_pb");
    const { EngineClient } = fromPulumi<{ EngineClient: new (a: string, c: unknown) => EngineClient }>(
      "@pulumi/pulumi/proto/engine_grpc_pb",
    );
    this.engine = { client: new EngineClient(address, grpc().credentials.createInsecure()), proto };
  }

  /** The log of the resource `urn` (or of the provider, when the face does not know the URN). */
  of(urn?: string): ResourceLog {
    return {
      info: (message) => this.write("info", message, urn),
      warn: (message) => this.write("warn", message, urn),
    };
  }

  private write(severity: Severity, message: string, urn?: string): void {
    const toStderr = () => process.stderr.write(`${severity === "warn" ? "warning: " : ""}${message}\n`);
    const engine = this.engine;
    if (!engine) return void toStderr();
    const request = new engine.proto.LogRequest();
    request.setSeverity(
      severity === "warn" ? engine.proto.LogSeverity.WARNING : engine.proto.LogSeverity.INFO,
    );
    request.setMessage(message);
    if (urn) request.setUrn(urn);
    engine.client.log(request, (error) => {
      if (error) toStderr();
    });
  }
}
