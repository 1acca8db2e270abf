/**
 * The audit trail's index by object (auditObjectIndex in ./migrations-shared), caught up in the
 * background, off the request path: a lookup by object is complete without it, only slower.
 */
import { BatchRounds } from "./store/batch-rounds";

/** Events indexed per statement (sorted inserts into two small b-trees: a few ms). */
export const INDEX_BATCH = 2000;
/** How often the object index catches up (see auditObjectIndex): the tail a lookup scans is about this long. */
export const INDEX_EVERY_MS = 1000;
/** Batches per indexing round at most: 100,000 events, a backlog (after a load) taken over rounds. */
const INDEX_BATCHES_PER_ROUND = 50;

/** What indexing asks of a store (both stores implement it). */
export interface AuditIndexTarget {
  /** Adds up to `limit` events to the index by object, the oldest not in it first; how many it added. */
  indexAuditEvents(limit: number): Promise<number>;
}

/** Keeps the index by object caught up (see auditObjectIndex): a round every INDEX_EVERY_MS. */
export function auditIndexer(store: AuditIndexTarget, onError?: (e: unknown) => void): BatchRounds {
  return new BatchRounds(
    () => store.indexAuditEvents(INDEX_BATCH),
    INDEX_BATCH,
    INDEX_BATCHES_PER_ROUND,
    undefined,
    onError,
  );
}
