/**
 * Rendered GET bodies, reused while the database is unchanged. A GET answer is a pure function
 * of its URL (Refs are built on the caller's origin) and of the stored data, so a body rendered
 * once is valid until the next committed write, by this process or any other sharing the
 * database: `Store.changeCounter()` moves on either. On SQLite reading it is one look at the WAL
 * index (a few µs); on PostgreSQL one tiny query shared by the GETs that arrive while it runs
 * (see PostgresStore.changeCounter); either against a read transaction of four queries plus JSON
 * rendering (the bulk of a GET's cost).
 */
import type { Deadline } from "../store/store";

/** Told of each lookup of a cache that is on (metrics). */
export interface CacheStats {
  hit(): void;
  miss(): void;
}

export class ResponseCache {
  private readonly bodies = new Map<string, Buffer<ArrayBuffer>>();
  private bytes = 0;
  private counter: number | string = Number.NaN;

  /**
   * @param changeCounter moves whenever committed data may have changed (never moves back); read
   *   within the request's deadline, when it has one.
   * @param maxBytes bound on the total bytes of the cached keys and bodies; 0 turns the cache off.
   * @param stats told whether each lookup hit or missed (not called while the cache is off).
   */
  constructor(
    private readonly changeCounter: (within?: Deadline) => number | string | Promise<number | string>,
    private readonly maxBytes: number,
    private readonly stats?: CacheStats,
  ) {}

  /**
   * The JSON body for `key`, UTF-8 encoded: cached when the data is unchanged since, else
   * `render()`ed and kept. Kept encoded: writing a string to a socket encodes it every time.
   * `within`: the request's deadline (see ./request-start), for the change counter's read.
   */
  async json(key: string, render: () => Promise<unknown>, within?: Deadline): Promise<Buffer<ArrayBuffer>> {
    if (this.maxBytes === 0) return Buffer.from(JSON.stringify(await render()));
    // Read before rendering: a write landing in between makes the entry stale under the old
    // counter, which the next lookup sees as changed (never the other way round).
    const read = this.changeCounter(within);
    const counter = typeof read === "object" ? await read : read;
    if (counter !== this.counter) {
      this.bodies.clear();
      this.bytes = 0;
      this.counter = counter;
    }
    const cached = this.bodies.get(key);
    if (cached !== undefined) {
      this.stats?.hit();
      return cached;
    }
    this.stats?.miss();
    const body = Buffer.from(JSON.stringify(await render()));
    // While this rendered, another request may have seen a newer counter: this body may predate
    // it, so it is not kept under the newer one.
    if (counter !== this.counter) return body;
    const cost = key.length + body.length;
    if (cost <= this.maxBytes) {
      // Oldest first out (Map keeps insertion order): bounded memory whatever the URLs asked.
      for (const [oldKey, oldBody] of this.bodies) {
        if (this.bytes + cost <= this.maxBytes) break;
        this.bodies.delete(oldKey);
        this.bytes -= oldKey.length + oldBody.length;
      }
      this.bodies.set(key, body);
      this.bytes += cost;
    }
    return body;
  }
}
