/**
 * A server's record of itself in its store (table `servers`): that it is alive, where, since
 * when, and which secrets keys it was given. `edge-service secrets rotate` reads it to know the
 * live servers, and refuses to move the store to a key one of them lacks (it would answer 503 to
 * every request that seals or opens a secret until restarted); PostgreSQL replicas alike, since
 * the record is in the database they share.
 *
 * Alive means heard of lately: a server writes its row at start and every `beatMs` (a few
 * seconds), by the database's clock, and deletes it on a clean stop; a server that crashed stops
 * being counted three beats later, and its row is pruned by the next server to start. A beat is a
 * write: on SQLite it invalidates the GET answer cache once per beat (a re-render per distinct
 * GET every few seconds, nothing beside a request's cost).
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { errorMessage } from "../../sdk/contract";
import { SQL } from "./statements";
import type { Store } from "./store";

/** How often a server says it is alive, by default. */
export const HEARTBEAT_MS = 5000;

/** Rows of servers not heard of for this long are pruned (a crashed server's). */
const PRUNE_AFTER_MS = 24 * 3600 * 1000;

export interface PresenceOptions {
  /** Where the server listens. */
  url: string;
  /** The ids of the secrets keys it was given. */
  keyIds: readonly string[];
  beatMs?: number;
  /** Told once when beats start failing (the database unreachable, the disk full), and once when they succeed again. */
  log?: (level: "info" | "warn", line: string) => void;
}

export class Presence {
  private readonly id = randomUUID();
  private readonly startedAt = new Date().toISOString();
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;
  private failing = false;
  private stopped = false;

  private constructor(
    private readonly store: Store,
    private readonly opts: PresenceOptions,
    private readonly beatMs: number,
  ) {}

  /**
   * Records the server (its first beat done before it resolves, so a rotation run right after the
   * server started sees it), then beats every `beatMs`.
   */
  static async start(store: Store, opts: PresenceOptions): Promise<Presence> {
    const p = new Presence(store, opts, opts.beatMs ?? HEARTBEAT_MS);
    await store.write((tx) => tx.run(SQL.serversPrune, [PRUNE_AFTER_MS])).catch(() => undefined);
    await p.beat();
    p.schedule();
    return p;
  }

  /** Stops beating and deletes the row: this server is no longer counted. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
    // Best-effort: a row left behind (the database gone) stops counting three beats later.
    await this.store.write((tx) => tx.run(SQL.serverGone, [this.id])).catch(() => undefined);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => this.schedule());
    }, this.beatMs);
    // Beats never keep a process alive that has nothing else to do.
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    const { url, keyIds } = this.opts;
    try {
      await this.store.write((tx) =>
        tx.run(SQL.serverBeat, [
          this.id,
          hostname(),
          process.pid,
          url,
          this.startedAt,
          keyIds.join(","),
          this.beatMs,
        ]),
      );
      if (this.failing) this.opts.log?.("info", "this server's record in the store is written again");
      this.failing = false;
    } catch (e) {
      if (!this.failing) {
        this.opts.log?.(
          "warn",
          `this server's record in the store could not be written (${errorMessage(e)}); secrets rotate does not count it as alive until a beat succeeds (retried every ${this.beatMs / 1000} s)`,
        );
      }
      this.failing = true;
    }
  }
}
