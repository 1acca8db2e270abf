/**
 * Modules that `@pulumi/pulumi` depends on and exposes no API for (grpc-js, its generated protos),
 * resolved from its own directory: the versions it speaks to the engine with.
 */
import { dirname } from "node:path";

export const fromPulumi = <T>(module: string): T =>
  require(require.resolve(module, { paths: [dirname(require.resolve("@pulumi/pulumi/package.json"))] })) as T;

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
