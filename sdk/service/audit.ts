/**
 * The audit trail: what one change writes (kind, ids, who, the changed fields), the diff that
 * says which fields changed with the secret leaves redacted, and the background pruning of
 * events past the retention. The store writes an event in the change's own transaction
 * (StoreTx.insertAuditEvent), so a change is never stored without its event, nor an event
 * without its change (a rejected request, a rolled-back transaction: nothing).
 */
import { setImmediate as yieldToRequests } from "node:timers/promises";
import {
  AUDIT_EVENT_MAX_BYTES,
  AUDIT_TRUNCATED,
  type AuditChange,
  type AuditEvent,
  type AuditObjectKind,
  auditEventSchema,
} from "../contract";
import type { AuditFilter, AuditRecord } from "./store";

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

/**
 * The changes bounded to AUDIT_EVENT_MAX_BYTES of JSON: values that do not fit read
 * AUDIT_TRUNCATED (their paths still show), and paths that do not fit are left out.
 */
export function boundChanges(changes: Record<string, AuditChange>): {
  changes: Record<string, AuditChange>;
  truncated: boolean;
} {
  if (Buffer.byteLength(JSON.stringify(changes)) <= AUDIT_EVENT_MAX_BYTES)
    return { changes, truncated: false };
  const out: Record<string, AuditChange> = {};
  const bytes = (path: string, change: AuditChange) =>
    Buffer.byteLength(JSON.stringify(path)) + Buffer.byteLength(JSON.stringify(change)) + 2;
  let size = 2;
  for (const [path, change] of Object.entries(changes)) {
    // The change as it fits when its values do not: the path kept, the values marked truncated.
    const elided: AuditChange = {
      ...("before" in change ? { before: AUDIT_TRUNCATED } : {}),
      ...("after" in change ? { after: AUDIT_TRUNCATED } : {}),
    };
    // Whole changes leave 256 bytes so that the paths after this one can still be listed elided.
    if (size + bytes(path, change) <= AUDIT_EVENT_MAX_BYTES - 256) {
      out[path] = change;
      size += bytes(path, change);
    } else if (size + bytes(path, elided) <= AUDIT_EVENT_MAX_BYTES) {
      out[path] = elided;
      size += bytes(path, elided);
    } else break;
  }
  return { changes: out, truncated: true };
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
/** Batches per round at most (the next round takes the rest). */
const PRUNE_BATCHES_PER_ROUND = 200;

export interface AuditPruneTarget {
  /** Deletes up to `limit` of the oldest events older than `before` (RFC 3339); how many it deleted. */
  pruneAuditEvents(before: string, limit: number): Promise<number>;
}

/**
 * Deletes the events older than the retention, in the background: a round every
 * `min(retention / 4, 60 s)` (at least 1 s), each a series of small batches with the event loop
 * given back to requests between them. The timer never holds the process open.
 */
export class AuditPruner {
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly store: AuditPruneTarget,
    private readonly retentionMs: number,
    private readonly onPruned: (n: number) => void = () => undefined,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  start(): this {
    const every = Math.max(1000, Math.min(60_000, Math.floor(this.retentionMs / 4)));
    this.timer = setInterval(() => void this.round(), every);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round: batches until fewer than a batch is left (bounded). */
  async round(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    let total = 0;
    try {
      const before = new Date(Date.now() - this.retentionMs).toISOString();
      for (let i = 0; i < PRUNE_BATCHES_PER_ROUND; i++) {
        const n = await this.store.pruneAuditEvents(before, PRUNE_BATCH);
        total += n;
        if (n > 0) this.onPruned(n);
        if (n < PRUNE_BATCH) break;
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

// ---------------------------------------------------------------- the table, on both stores

/**
 * One index only, by object (what a refresh's attribution asks): each index is pages more per
 * write; with indexes by key and by time too, an event cost a POST 1.5× its CPU (BENCHMARKS.md,
 * "Audit trail"). Pruning walks the oldest seqs instead (see AUDIT_PRUNE), and a `key` filter
 * scans newest first.
 *
 * The audit table, one statement for both stores (the seq column's type is each store's: SQLite's
 * AUTOINCREMENT never reuses a pruned id, PostgreSQL's BIGSERIAL neither). A migration of its own
 * on each store, self-contained, so it can be renumbered after another one.
 */
export function auditTable(seq: string): string {
  return `CREATE TABLE audit_events (
     seq ${seq},
     time TEXT NOT NULL,
     operation TEXT NOT NULL,
     object_kind TEXT NOT NULL,
     object_id TEXT NOT NULL,
     edge_id TEXT,
     key_name TEXT,
     request_id TEXT,
     changes TEXT NOT NULL,
     truncated INTEGER NOT NULL
   );
   CREATE INDEX audit_events_by_object ON audit_events (object_id, seq);`;
}

/**
 * Deletes the oldest events past the retention, a bounded batch: the `limit` lowest seqs, those
 * of them older than the cutoff (seq follows time, so the old ones are the lowest; a batch never
 * scans more than `limit` rows, with or without anything to delete). Placeholders: cutoff, limit.
 */
export const auditPruneStatement = (cutoff: string, limit: string) =>
  `DELETE FROM audit_events WHERE seq IN (SELECT seq FROM audit_events ORDER BY seq LIMIT ${limit}) AND time < ${cutoff}`;

/** The columns of an insert, in order, with their values. */
export const AUDIT_INSERT_COLUMNS =
  "time, operation, object_kind, object_id, edge_id, key_name, request_id, changes, truncated";
export const auditInsertValues = (e: AuditRecord): Array<string | number | null> => [
  e.time,
  e.operation,
  e.object_kind,
  e.object_id,
  e.edge_id,
  e.key,
  e.request_id,
  JSON.stringify(e.changes),
  e.truncated ? 1 : 0,
];

/**
 * The statement of a page of the trail: its text (the placeholders each store's, `?` or `$n`), a
 * name that differs when the text does (PostgreSQL prepares each once per connection), the values.
 */
export function auditListQuery(
  f: AuditFilter,
  placeholder: (n: number) => string,
): { name: string; text: string; values: Array<string | number> } {
  const where: string[] = [];
  const values: Array<string | number> = [];
  const add = (sql: string, value: string | number) => {
    values.push(value);
    where.push(sql.replace("?", placeholder(values.length)));
  };
  let name = "audit_list";
  if (f.objectId !== undefined) {
    add("object_id = ?", f.objectId);
    name += "_o";
  }
  if (f.key !== undefined) {
    add("key_name = ?", f.key);
    name += "_k";
  }
  if (f.since !== undefined) {
    // Stored times are toISOString's: the filter compares as text in the same form.
    add("time >= ?", new Date(f.since).toISOString());
    name += "_s";
  }
  add("seq < ?", f.beforeSeq ?? Number.MAX_SAFE_INTEGER);
  values.push(f.limit);
  return {
    name,
    text: `SELECT * FROM audit_events WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT ${placeholder(values.length)}`,
    values,
  };
}

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
