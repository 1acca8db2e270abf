/** A background task done in rounds (the audit trail's pruning and its index by object). */
import { setImmediate as yieldToRequests } from "node:timers/promises";

/**
 * A background task done in rounds: each round calls `batch` until it does less than `full`
 * (at most `maxBatches`), giving the event loop back to requests between batches. The timer never
 * holds the process open; a round never overlaps the previous one.
 */
export class BatchRounds {
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly batch: () => Promise<number>,
    private readonly full: number,
    private readonly maxBatches: number,
    private readonly onBatch: (n: number) => void = () => undefined,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  start(everyMs: number): this {
    this.timer = setInterval(() => void this.round(), everyMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round: batches until fewer than a full one is done (bounded); how many rows in all. */
  async round(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    let total = 0;
    try {
      for (let i = 0; i < this.maxBatches; i++) {
        const n = await this.batch();
        total += n;
        if (n > 0) this.onBatch(n);
        if (n < this.full) break;
        await yieldToRequests();
      }
    } catch (e) {
      this.onError(e);
    } finally {
      this.running = false;
    }
    return total;
  }
}
