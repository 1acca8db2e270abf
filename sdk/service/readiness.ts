/**
 * `GET /readyz`: whether the store can serve requests (see Store.whyNotReady), asked at most once
 * a second whatever the number of probes (load balancers, orchestrators and anyone else may ask
 * without a key), and always answered within a bound. The reason goes to the operator's log when
 * readiness changes, never to the caller.
 */
import type { ServiceLog } from "./log";

export interface ReadinessOptions {
  /** A result is reused this long (ms). Default 1000. */
  reuseMs?: number;
  /** A check that has not answered by then counts as not ready (ms). Default 3000. */
  timeoutMs?: number;
}

export class Readiness {
  private last?: { at: number; reason: string | undefined };
  private running?: Promise<string | undefined>;
  private readonly reuseMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly check: () => Promise<string | undefined>,
    private readonly log: ServiceLog | undefined,
    opts: ReadinessOptions = {},
  ) {
    this.reuseMs = opts.reuseMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 3000;
  }

  /** Why the service is not ready, or undefined when it is. Concurrent callers share one check. */
  whyNot(): Promise<string | undefined> {
    if (this.last && performance.now() - this.last.at < this.reuseMs)
      return Promise.resolve(this.last.reason);
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const reason = await Promise.race([
      this.check().catch(
        (e: unknown) => `the readiness check failed: ${e instanceof Error ? e.message : String(e)}`,
      ),
      new Promise<string>((resolve) => {
        timer = setTimeout(
          () => resolve(`the store did not answer the readiness check within ${this.timeoutMs / 1000} s`),
          this.timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    const before = this.last;
    this.last = { at: performance.now(), reason };
    if (reason !== undefined && reason !== before?.reason) this.log?.event("warn", `not ready: ${reason}`);
    else if (reason === undefined && before?.reason !== undefined) this.log?.event("info", "ready again");
    return reason;
  }
}
