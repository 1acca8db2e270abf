/**
 * Modules that `@pulumi/pulumi` depends on and exposes no API for (grpc-js, its generated protos),
 * resolved from its own directory: the versions it speaks to the engine with.
 */
import { dirname } from "node:path";

const resolved = new Map<string, unknown>();

/**
 * Resolved once per module and process: a `require.resolve` with `paths` is not cached by Node
 * (about 0.1 ms of CPU each), and serve.ts asks for the provider protos on every Diff.
 */
export function fromPulumi<T>(module: string): T {
  if (!resolved.has(module)) {
    const paths = [dirname(require.resolve("@pulumi/pulumi/package.json"))];
    resolved.set(module, require(require.resolve(module, { paths })));
  }
  return resolved.get(module) as T;
}

/** The parts of @grpc/grpc-js used here. */
export interface Grpc {
  credentials: { createInsecure(): unknown };
  status: { UNAVAILABLE: number };
  Client: new (address: string, credentials: unknown, options?: object) => GrpcClient;
}
export interface GrpcClient {
  makeUnaryRequest(
    method: string,
    serialize: (value: Buffer) => Buffer,
    deserialize: (value: Buffer) => Buffer,
    argument: Buffer,
    options: { deadline: number },
    callback: (error: { code: number } | null) => void,
  ): void;
  close(): void;
}
export const grpc = (): Grpc => fromPulumi<Grpc>("@grpc/grpc-js");
