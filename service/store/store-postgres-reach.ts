/**
 * Whether PostgreSQL answers, asked on a connection of its own, and what the PostgreSQL store
 * does with the answer: once a check has found the database out of reach, a request is answered
 * 503 at once (StoreUnavailable) instead of waiting for its deadline, the requests already
 * waiting on it are given up (the store's `onLost`), and the check is made again each second, by
 * itself, until one passes. The connection is not the pool's: requests held by a silent database
 * hold every pooled one, and a check behind them would say "busy", not "gone".
 *
 * A check is bounded by half the store's deadline (2 s at most), and the store asks for one when
 * a request has waited a quarter of it (see PgDriver): a replica finds a silent database before
 * the requests it holds reach their deadline, and so, for a partition of every replica, do the
 * replicas a balancer repeats those requests on.
 *
 * A partition answers nothing and closes nothing (docs/operating.md, "A partition between the
 * replicas and PostgreSQL"): every wait here is bounded, and a connection given up is reset
 * (`cut`), never closed in order, so that what it had not delivered yet is dropped, not
 * delivered after the partition heals.
 */
import { Socket } from "node:net";
import pg from "pg";
import { errorMessage } from "../../sdk/contract";

/** A check's bound, from its start (a connection opened included) to its answer, at most. */
export const CHECK_MS = 2000;

/** A check's bound under a store `deadlineMs`: half of it, CHECK_MS at most. */
export const checkMsFor = (deadlineMs: number | undefined): number =>
  deadlineMs === undefined ? CHECK_MS : Math.min(CHECK_MS, Math.floor(deadlineMs / 2));
/** While the database is out of reach, how often the check is made again without being asked. */
const AGAIN_MS = 1000;

/**
 * Ends a connection at once with a reset (RST): the kernel drops what it had not delivered yet,
 * so a statement sent into a partition never reaches the server after it heals, and the server
 * is told (when the reset gets through) to roll back what the connection had begun. An orderly
 * close would send its Terminate behind the statement still in flight.
 */
export function cut(client: pg.Client): void {
  const stream: unknown = Reflect.get(client, "connection")?.stream;
  if (stream instanceof Socket) {
    if (!stream.destroyed) stream.resetAndDestroy();
  } else if (typeof stream === "object" && stream !== null) {
    // A TLS stream: destroyed, its socket with it.
    const destroy: unknown = Reflect.get(stream, "destroy");
    if (typeof destroy === "function") Reflect.apply(destroy, stream, []);
  }
}

/** What a check found: the database's `transaction_read_only` setting, or why it got no answer. */
export type CheckAnswer = { answered: true; readOnly: boolean } | { answered: false; error: unknown };

export class Reach {
  private client?: pg.Client;
  private running?: Promise<CheckAnswer>;
  /** Why the database is out of reach, from a check that failed until one passes. */
  private down?: string;
  private again?: NodeJS.Timeout;
  private closed = false;

  constructor(
    /** The pool's connection settings: the check connects as a request would. */
    private readonly config: pg.ClientConfig,
    private readonly location: string,
    private readonly log?: (line: string) => void,
    /** A check's bound (see checkMsFor). */
    private readonly checkMs = CHECK_MS,
    /** Told, with why, when a check finds the database out of reach after it answered. */
    private readonly onLost?: (why: string) => void,
  ) {}

  /** Why a request must not wait for the database now (the last check failed), or undefined. */
  get outOfReach(): string | undefined {
    return this.down;
  }

  /** One check, shared by whoever asks while it runs (readiness, a request that met a sign). */
  check(): Promise<CheckAnswer> {
    if (this.closed) return Promise.resolve({ answered: false, error: new Error("the store is closed") });
    this.running ??= this.ask().finally(() => (this.running = undefined));
    return this.running;
  }

  /** A sign that the database may be gone (a deadline passed, a connection lost): check now. */
  suspect(): void {
    void this.check();
  }

  private async ask(): Promise<CheckAnswer> {
    const bound = this.checkMs;
    const until = performance.now() + bound;
    let client = this.client;
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = new Promise<pg.QueryResult<{ v: string }>>((resolve, reject) => {
        timer = setTimeout(() => {
          if (client) cut(client);
          reject(new Error(`no answer within ${bound / 1000} s`));
        }, bound);
        const asked = async () => {
          if (client === undefined) {
            client = new pg.Client({ ...this.config, connectionTimeoutMillis: bound });
            // A connection lost between checks is found by the next one.
            client.on("error", () => undefined);
            this.client = client;
            await client.connect();
          }
          if (performance.now() > until) throw new Error(`no answer within ${bound / 1000} s`);
          return client.query<{ v: string }>("SELECT current_setting('transaction_read_only') AS v");
        };
        asked().then(resolve, reject);
      });
      const { rows } = await answer;
      this.reached();
      return { answered: true, readOnly: rows[0]?.v === "on" };
    } catch (e) {
      if (client) cut(client);
      if (this.client === client) this.client = undefined;
      this.lost(e);
      return { answered: false, error: e };
    } finally {
      clearTimeout(timer);
    }
  }

  private reached(): void {
    if (this.down === undefined) return;
    this.down = undefined;
    clearInterval(this.again);
    this.again = undefined;
    this.log?.(`postgres: ${this.location} answers again; requests go to it again`);
  }

  private lost(e: unknown): void {
    if (this.closed) return;
    const first = this.down === undefined;
    this.down = `PostgreSQL at ${this.location} did not answer the service's last check (${errorMessage(e)}); the request was answered at once, without waiting for it`;
    if (first) {
      this.log?.(
        `postgres: ${this.location} did not answer a check (${errorMessage(e)}): the requests waiting on it are given up, and requests are answered 503 at once until a check, made each second, passes`,
      );
      this.again = setInterval(() => this.suspect(), AGAIN_MS);
      this.again.unref();
      this.onLost?.(
        `PostgreSQL at ${this.location} did not answer the service's check (${errorMessage(e)}) while the request waited on it; the request was given up before its deadline`,
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.again);
    const client = this.client;
    this.client = undefined;
    await this.running?.catch(() => undefined);
    if (client) {
      await Promise.race([
        client.end().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, CHECK_MS).unref()),
      ]);
      cut(client);
    }
  }
}
