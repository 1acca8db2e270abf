/**
 * How long the audit trail keeps an event (`serve --audit-retention`, 90 days by default), and
 * the background pruning that enforces it: small batches, the oldest events first.
 */
import { BatchRounds } from "./store/batch-rounds";

/** The retention `serve` applies by default (`--audit-retention 90d`). */
export const DEFAULT_AUDIT_RETENTION_MS = 90 * 24 * 3600 * 1000;

/** `90d`, `12h`, `30m`, `45s` → milliseconds; undefined when it is none of these. */
export function parseRetention(text: string): number | undefined {
  const m = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? ms : undefined;
}

/** Events deleted per statement: small, so a prune never holds the database for long. */
export const PRUNE_BATCH = 500;
/** Batches per pruning round at most (the next round takes the rest). */
const PRUNE_BATCHES_PER_ROUND = 200;
/** What pruning asks of a store (both stores implement it). */
export interface AuditPruneTarget {
  /** Deletes up to `limit` of the oldest events older than `before` (RFC 3339); how many it deleted. */
  pruneAuditEvents(before: string, limit: number): Promise<number>;
}

/**
 * Deletes the events older than the retention (and their rows of the object index), in the
 * background: a round every `min(retention / 4, 60 s)` (at least 1 s), each a series of small
 * batches, the oldest first.
 */
export function startAuditPruner(
  store: AuditPruneTarget,
  retentionMs: number,
  onPruned?: (n: number) => void,
  onError?: (e: unknown) => void,
): BatchRounds {
  const rounds = new BatchRounds(
    () => store.pruneAuditEvents(new Date(Date.now() - retentionMs).toISOString(), PRUNE_BATCH),
    PRUNE_BATCH,
    PRUNE_BATCHES_PER_ROUND,
    onPruned,
    onError,
  );
  return rounds.start(Math.max(1000, Math.min(60_000, Math.floor(retentionMs / 4))));
}
