/**
 * Ends the provider process when its engine is gone. The engine stops its plugins when it ends
 * normally; a killed CLI (`kill -9`, a CI timeout) or a broken pipe (`pulumi preview | head`)
 * leaves them running for good, holding the embedded database open. Like Pulumi's Go plugins, we
 * ask the engine's gRPC health service every few seconds and exit once it is unreachable.
 */
import { grpc } from "./pulumi-internals";

const CHECK_EVERY_MS = 2_000;
/** Consecutive unreachable checks before exiting (one may meet a busy engine). */
const MISSES = 2;

/** Called once, where the process starts and learns its engine's address. */
export function exitWhenEngineGone(address: string, exit: () => void = () => process.exit(0)): void {
  const g = grpc();
  const client = new g.Client(address, g.credentials.createInsecure());
  let misses = 0;
  const check = () => {
    // grpc.health.v1.Health/Check with an empty HealthCheckRequest (the whole server's health).
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (b) => b,
      (b) => b,
      Buffer.alloc(0),
      { deadline: Date.now() + CHECK_EVERY_MS },
      (error) => {
        misses = error?.code === g.status.UNAVAILABLE ? misses + 1 : 0;
        if (misses >= MISSES) {
          process.stderr.write(`the Pulumi engine at ${address} is gone; this provider exits\n`);
          client.close();
          exit();
        }
      },
    );
  };
  setInterval(check, CHECK_EVERY_MS).unref();
}
