/**
 * The audit trail's events: what one change writes (kind, ids, who, the changed fields), the
 * diff that says which fields changed with the secret leaves redacted, bounded in size. The
 * store writes an event in the change's own transaction (StoreTx.insertAuditEvent), so a change
 * is never stored without its event, nor an event without its change (a rejected request, a
 * rolled-back transaction: nothing). How long events are kept: ./audit-retention; their index by
 * object: ./audit-index; how a stored one reads: auditEventOf in ./rows.
 */
import {
  AUDIT_EVENT_MAX_BYTES,
  AUDIT_TRUNCATED,
  type AuditChange,
  type AuditObjectKind,
} from "../sdk/contract";
import type { AuditRecord } from "./store/store";

/** An event as the store writes it (its id and seq are the store's). */
export type { AuditRecord };

/** Who asks for a change: the request's key name and `Request-Id` (none for `edge-service keys`). */
export interface AuditActor {
  key?: string;
  requestId?: string;
}

export { diffChanges } from "../sdk/contract";

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
