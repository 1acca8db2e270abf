/**
 * `GET /readyz`: whether the store can serve requests (see Store.whyNotReady), asked at most once
 * a second whatever the number of probes (load balancers, orchestrators and anyone else may ask
 * without a key), and always answered within a bound. The reason goes to the operator's log when
 * readiness changes, never to the caller.
 *
 * A "ready" answer is reused only while the store has met no sign that its database is gone
 * (Store.unavailableSeen: a pooled connection lost, a request that could not reach it): after
 * one, the next probe asks the store again, so a database killed under a ready server shows at
 * that probe, not up to a second later.
 *
 * Readiness and writes agree: once a write failed for the storage's sake (disk full, read-only:
 * see ./write-faults), the service is not ready until a write succeeds again, a request's or the
 * probe write each check then makes; the first successful write makes it ready at once.
 */
import type { ServiceLog } from "./log";

export interface ReadinessOptions {
  /** A result is reused this long (ms). Default 1000. */
  reuseMs?: number;
  /** A check that has not answered by then counts as not ready (ms). Default 3000. */
  timeoutMs?: number;
  /**
   * Why the host cannot take requests (a server stopping): asked at each probe, before the
   * store's check and never reused, so that it shows at once; not logged (the host says it).
   */
  hostNotReady?: () => string | undefined;
  /** The store's count of signs that its database is gone (see Store.unavailableSeen). */
  unavailableSeen?: () => number;
}

/** A check's answer, and the count of signs of a lost database when the check began. */
interface Checked {
  at: number;
  reason: string | undefined;
  seen: number;
}

export class Readiness {
  private last?: Checked;
  /** The operator's line of the last write that failed for the storage's sake, until one succeeds. */
  private writeFault?: string;
  /** The check in flight, shared by the probes that may take its answer. */
  private running?: { seen: number; reason: Promise<string | undefined> };
  private readonly reuseMs: number;
  private readonly timeoutMs: number;
  private readonly hostNotReady: () => string | undefined;
  private readonly unavailableSeen: () => number;

  constructor(
    private readonly check: () => Promise<string | undefined>,
    private readonly log: ServiceLog | undefined,
    opts: ReadinessOptions = {},
    /** A write to the store: undefined when it succeeded, else the operator's line of its failure. */
    private readonly probeWrite: () => Promise<string | undefined> = () => Promise.resolve(undefined),
  ) {
    this.reuseMs = opts.reuseMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 3000;
    this.hostNotReady = opts.hostNotReady ?? (() => undefined);
    this.unavailableSeen = opts.unavailableSeen ?? (() => 0);
  }

  /**
   * Why the service is not ready, or undefined when it is. Concurrent callers share one check,
   * unless a sign of a lost database came after it began: then they ask again.
   */
  whyNot(): Promise<string | undefined> {
    const host = this.hostNotReady();
    if (host !== undefined) return Promise.resolve(host);
    const seen = this.unavailableSeen();
    const last = this.last;
    if (
      last &&
      performance.now() - last.at < this.reuseMs &&
      (last.reason !== undefined || last.seen === seen)
    )
      return Promise.resolve(last.reason);
    if (this.running?.seen !== seen) {
      const running = {
        seen,
        reason: this.run(seen).finally(() => {
          if (this.running === running) this.running = undefined;
        }),
      };
      this.running = running;
    }
    return this.running.reason;
  }

  /**
   * A write failed for the storage's sake (`line` says why, for the operator): not ready from now
   * on. Logged once, when the fault is new or another.
   */
  writeFailed(line: string): void {
    if (this.writeFault !== line) this.log?.event("error", line);
    this.writeFault = line;
    this.last = { at: performance.now(), reason: line, seen: this.unavailableSeen() };
  }

  /** A write succeeded: a fault of the storage is over. */
  writeSucceeded(): void {
    if (this.writeFault === undefined) return;
    this.writeFault = undefined;
    this.last = undefined;
    this.log?.event("info", "writes succeed again");
  }

  /** The store's check, then, after a write fault, a probe write: the fault is over when it succeeds. */
  private async checkAll(): Promise<string | undefined> {
    const reason = await this.check();
    if (reason !== undefined || this.writeFault === undefined) return reason;
    // Still failing: the fault's first line stands (told once), whatever words the probe's has.
    if ((await this.probeWrite()) !== undefined) return this.writeFault;
    this.writeSucceeded();
    return undefined;
  }

  private async run(seen: number): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const reason = await Promise.race([
      this.checkAll().catch(
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
    // A check begun before another that has answered already says something older: not kept.
    if (before !== undefined && before.seen > seen) return reason;
    this.last = { at: performance.now(), reason, seen };
    if (reason !== undefined && reason !== before?.reason) this.log?.event("warn", `not ready: ${reason}`);
    else if (reason === undefined && before?.reason !== undefined) this.log?.event("info", "ready again");
    return reason;
  }
}
