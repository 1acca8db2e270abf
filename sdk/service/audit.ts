/**
 * The audit trail: what one change writes (kind, ids, who, the changed fields), the diff that
 * says which fields changed with the secret leaves redacted, and the background pruning of
 * events past the retention. The store writes an event in the change's own transaction
 * (StoreTx.insertAuditEvent), so a change is never stored without its event, nor an event
 * without its change (a rejected request, a rolled-back transaction: nothing).
 */
import { BatchRounds } from "./batch-rounds";
import {
  AUDIT_EVENT_MAX_BYTES,
  AUDIT_TRUNCATED,
  type AuditChange,
  type AuditEvent,
  type AuditObjectKind,
  auditEventSchema,
} from "../contract";
import type { AuditRecord } from "./store";

/** An event as the store writes it (its id and seq are the store's). */
export type { AuditRecord };

/** Who asks for a change: the request's key name and `Request-Id` (none for `edge-service keys`). */
export interface AuditActor {
  key?: string;
  requestId?: string;
}

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

export { diffChanges } from "../contract";

/** The JSON of changes already serialized to measure them, so that the insert does not do it again. */
const changesJson = new WeakMap<object, string>();

/** The changes as the audit table stores them (JSON text). */
export const changesText = (changes: Record<string, AuditChange>): string =>
  changesJson.get(changes) ?? JSON.stringify(changes);

/**
 * The changes bounded to AUDIT_EVENT_MAX_BYTES of JSON. Every changed path is kept as long as the
 * paths alone fit: values are elided first (they read AUDIT_TRUNCATED), the largest first, so that
 * "which fields did this change touch?" stays answerable, which is what attribution asks. Only
 * when the paths alone do not fit are some left out, and the event says so (`truncated`): an
 * event that may have touched any field, which attribution never looks past.
 */
export function boundChanges(changes: Record<string, AuditChange>): {
  changes: Record<string, AuditChange>;
  truncated: boolean;
} {
  const json = JSON.stringify(changes);
  // A UTF-16 unit is at most 3 bytes of UTF-8: most events are counted without encoding them.
  if (json.length * 3 <= AUDIT_EVENT_MAX_BYTES || Buffer.byteLength(json) <= AUDIT_EVENT_MAX_BYTES) {
    changesJson.set(changes, json);
    return { changes, truncated: false };
  }
  const bytes = (path: string, change: AuditChange) =>
    Buffer.byteLength(JSON.stringify(path)) + Buffer.byteLength(JSON.stringify(change)) + 2;
  const elide = (change: AuditChange): AuditChange => ({
    ...("before" in change ? { before: AUDIT_TRUNCATED } : {}),
    ...("after" in change ? { after: AUDIT_TRUNCATED } : {}),
  });
  const entries = Object.entries(changes);
  // Every path with its values elided: what must fit for the event to name every field.
  let size = 2;
  const out: Record<string, AuditChange> = {};
  let dropped = false;
  for (const [path, change] of entries) {
    const elided = elide(change);
    if (size + bytes(path, elided) <= AUDIT_EVENT_MAX_BYTES) {
      out[path] = elided;
      size += bytes(path, elided);
    } else dropped = true;
  }
  // Then the values back, the smallest first (the most of them fit), while they fit.
  const kept = entries.filter(([path]) => path in out).sort(([a, x], [b, y]) => bytes(a, x) - bytes(b, y));
  for (const [path, change] of kept) {
    const grow = bytes(path, change) - bytes(path, out[path]!);
    if (size + grow > AUDIT_EVENT_MAX_BYTES) break;
    out[path] = change;
    size += grow;
  }
  // In the change's own order of paths.
  const ordered = Object.fromEntries(
    entries.filter(([path]) => path in out).map(([path]) => [path, out[path]!]),
  );
  return { changes: ordered, truncated: dropped };
}

/** The event of one change, its changes bounded. */
export function auditRecord(
  operation: string,
  object: { kind: AuditObjectKind; id: string; edgeId?: string },
  actor: AuditActor | undefined,
  changes: Record<string, AuditChange>,
): AuditRecord {
  const bounded = boundChanges(changes);
  return {
    time: new Date().toISOString(),
    operation,
    object_kind: object.kind,
    object_id: object.id,
    edge_id: object.edgeId ?? null,
    key: actor?.key ?? null,
    request_id: actor?.requestId ?? null,
    changes: bounded.changes,
    truncated: bounded.truncated,
  };
}

/** Events deleted per statement: small, so a prune never holds the database for long. */
export const PRUNE_BATCH = 500;
/** Batches per pruning round at most (the next round takes the rest). */
const PRUNE_BATCHES_PER_ROUND = 200;
/** Events indexed per statement (sorted inserts into two small b-trees: a few ms). */
export const INDEX_BATCH = 2000;
/** How often the object index catches up (see auditObjectIndex): the tail a lookup scans is about this long. */
export const INDEX_EVERY_MS = 1000;
/** Batches per indexing round at most: 100,000 events, a backlog (after a load) taken over rounds. */
const INDEX_BATCHES_PER_ROUND = 50;

/** What the background tasks ask of a store (both stores implement it). */
export interface AuditMaintenanceTarget {
  /** Deletes up to `limit` of the oldest events older than `before` (RFC 3339); how many it deleted. */
  pruneAuditEvents(before: string, limit: number): Promise<number>;
  /** Adds up to `limit` events to the index by object, the oldest not in it first; how many it added. */
  indexAuditEvents(limit: number): Promise<number>;
}

/**
 * Deletes the events older than the retention (and their rows of the object index), in the
 * background: a round every `min(retention / 4, 60 s)` (at least 1 s), each a series of small
 * batches, the oldest first.
 */
export function startAuditPruner(
  store: AuditMaintenanceTarget,
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

/** Keeps the index by object caught up (see auditObjectIndex): a round every INDEX_EVERY_MS. */
export function auditIndexer(store: AuditMaintenanceTarget, onError?: (e: unknown) => void): BatchRounds {
  return new BatchRounds(
    () => store.indexAuditEvents(INDEX_BATCH),
    INDEX_BATCH,
    INDEX_BATCHES_PER_ROUND,
    undefined,
    onError,
  );
}

/** The meta key of the highest seq a SQLite store has numbered or pruned (see SQL.auditInsert). */
export const AUDIT_SEQ_FLOOR = "audit_seq_floor";

/** A row of the audit table → the event on the wire (checked against the contract: a broken row is an error). */
export function auditEventOf(raw: object): AuditEvent {
  const col = (name: string): unknown => Reflect.get(raw, name);
  const changes = col("changes");
  return auditEventSchema.parse({
    id: `aud_${String(col("seq"))}`,
    time: col("time"),
    operation: col("operation"),
    object_kind: col("object_kind"),
    object_id: col("object_id"),
    edge_id: col("edge_id") ?? null,
    key: col("key_name") ?? null,
    request_id: col("request_id") ?? null,
    changes: typeof changes === "string" ? (JSON.parse(changes) as unknown) : changes,
    truncated: Number(col("truncated")) === 1,
  });
}
