/**
 * The Store of both stores, written once over a driver (./store-driver): transactions hand the
 * service a SqlTx (./sql-tx), the procedures (./store-steps) run in the transactions the driver
 * opens, and readiness, the probe write, the audit trail's upkeep and the create fingerprints
 * follow one rule each. ./store-sqlite and ./store-postgres add only how each opens.
 */
import { auditIndexer, INDEX_EVERY_MS } from "../audit-index";
import type { BatchRounds } from "./batch-rounds";
import { type CreateFingerprints, fingerprintWith } from "./fingerprints";
import { SECRETS_KEY_ID, SECRETS_KEY_IDS, Secrets, type SecretsKey } from "../secrets";
import { SqlTx } from "./sql-tx";
import { SQL } from "./statements";
import type { Deadline, Dialect, LiveServer, Resealed, Store, StoreDump, StoreTx } from "./store";
import { runSteps, type StoreDriver, type TxMode } from "./store-driver";
import { dump, encodingProblem, load, reseal } from "./store-steps";

export abstract class SqlStore implements Store {
  readonly kind: Dialect;
  readonly location: string;
  /** Keyed creates' fingerprints under the store's key (none: opened by edge-service keys). */
  private fingerprints?: CreateFingerprints;
  /** The audit trail's index by object, caught up in the background (see ./audit). */
  private indexer?: BatchRounds;

  protected constructor(
    protected readonly driver: StoreDriver,
    /** Seals the secrets written, opens those read; `secrets rotate` gives it the new key. */
    private secrets: Secrets,
  ) {
    this.kind = driver.dialect;
    this.location = driver.location;
  }

  /**
   * The store is open, its schema current (see migrate in ./store-steps): `fingerprints` is the
   * key it opened, and the index by object is kept up every `auditIndexEveryMs` (0: never; a
   * lookup is complete without it). A round's error is left to the next round.
   */
  protected opened(
    fingerprints: CreateFingerprints | undefined,
    auditIndexEveryMs = INDEX_EVERY_MS,
    onIndexError?: (e: unknown) => void,
  ): void {
    this.fingerprints = fingerprints;
    if (auditIndexEveryMs > 0) this.indexer = auditIndexer(this, onIndexError).start(auditIndexEveryMs);
  }

  /** The ring the store opens secrets with, for a driver's open. */
  protected get ring(): Secrets {
    return this.secrets;
  }

  write<T>(fn: (tx: StoreTx) => Promise<T>, within?: Deadline): Promise<T> {
    return this.transaction("write", fn, within);
  }

  read<T>(fn: (tx: StoreTx) => Promise<T>, within?: Deadline): Promise<T> {
    return this.transaction("read", fn, within);
  }

  /** `fn` in a transaction of `mode`, through a handle that refuses statements once it is over. */
  private transaction<T>(mode: TxMode, fn: (tx: StoreTx) => Promise<T>, within?: Deadline): Promise<T> {
    return this.driver.transaction(
      mode,
      (conn) => {
        const tx = new SqlTx(conn, this.secrets);
        const done = fn(tx);
        // Ended before the driver's own continuation (registered after this one) commits; not in
        // the chain the driver awaits, which stays as short as `fn`'s (a turn per await counts).
        const end = () => tx.end();
        done.then(end, end);
        return done;
      },
      within,
    );
  }

  createFingerprint(request: string): string {
    return fingerprintWith(this.fingerprints, request);
  }

  changeCounter(within?: Deadline): number | string | Promise<number | string> {
    return this.driver.changeCounter(within);
  }

  requestDeadline(receivedAt: number): Deadline | undefined {
    return this.driver.requestDeadline?.(receivedAt);
  }

  /**
   * Ready when the storage is usable (the driver's own checks: a database file replaced, a
   * database gone), its text encoding keeps every character, it holds the schema this code
   * expects (a newer edge-service sharing it may have upgraded it), and this server holds every
   * key its secrets are sealed under. One statement (readiness is asked often).
   */
  async whyNotReady(): Promise<string | undefined> {
    const fault = await this.driver.whyNotUsable(() => this.probeWrite());
    if (fault !== undefined) return fault;
    let meta: Map<string, string>;
    try {
      const rows = await this.driver.alone(SQL.metaReadiness, []);
      meta = new Map(rows.map((r) => SQL.metaReadiness.row(r, this.secrets)));
    } catch (e) {
      return this.driver.unreachable(e);
    }
    const { place } = this.driver;
    const notUtf8 = encodingProblem(meta, place);
    if (notUtf8 !== undefined) return notUtf8;
    const version = Number(meta.get("schema_version") ?? 0);
    const latest = this.driver.schema.migrations.length;
    // Every request that seals or opens a secret would answer 503.
    if (version === latest)
      return this.secrets.whyCannotServe(meta.get(SECRETS_KEY_ID), meta.get(SECRETS_KEY_IDS));
    return version > latest
      ? `${place} was upgraded to schema ${version} by a newer edge-service (this one runs schema ${latest}): upgrade this one`
      : `${place} holds schema ${version}, this edge-service runs ${latest}: restart it to migrate the store`;
  }

  unavailableSeen(): number {
    return this.driver.unavailableSeen?.() ?? 0;
  }

  /**
   * Rewrites one row of the store's metadata (see Store.probeWrite), once there is room for the
   * largest request's write (a full disk keeps some room in SQLite's WAL, where a one-row write
   * may succeed while a request's would not); bounded like readiness' read.
   */
  async probeWrite(): Promise<void> {
    this.driver.checkRoomToWrite();
    await this.driver.alone(SQL.metaSet, ["write_probe", new Date().toISOString()]);
  }

  dump(): Promise<StoreDump> {
    return this.driver.transaction("read", (conn) => runSteps(dump(), conn));
  }

  async load(copy: StoreDump): Promise<void> {
    const { place, dialect } = this.driver;
    const fingerprints = await this.driver.transaction("write", (conn) =>
      runSteps(load(copy, this.secrets, place, dialect), conn),
    );
    this.fingerprints = fingerprints ?? this.fingerprints;
  }

  /**
   * Re-seals every secret under `to` (see Store.resealSecrets) in one transaction that holds
   * every other writer off, then erases what the old values left, as far as the store can.
   */
  async resealSecrets(to: SecretsKey, check?: (live: LiveServer[]) => void): Promise<Resealed> {
    const ring = new Secrets([...this.secrets.keys, to], to);
    const { secrets, servers } = await this.driver.transaction("rotate", (conn) =>
      runSteps(reseal(ring, to, this.driver.place, check), conn),
    );
    this.secrets = ring;
    return { secrets, servers, purge: await this.driver.purgeFreedBytes() };
  }

  /**
   * A bounded batch of the oldest events past the retention, and the index's rows below the
   * oldest event left: three short statements, requests run between batches. The highest seq so
   * far is kept first: SQLite numbers a new event after it once pruning emptied the table
   * (PostgreSQL's sequence never goes back).
   */
  pruneAuditEvents(before: string, limit: number): Promise<number> {
    return this.write(async (tx) => {
      await tx.run(SQL.auditSeqFloor, []);
      const pruned = await tx.run(SQL.auditPrune, [before, limit]);
      await tx.run(SQL.auditPruneIndex, [limit]);
      return pruned;
    });
  }

  /** Up to `limit` events into the index by object, none past what the driver says is settled. */
  async indexAuditEvents(limit: number): Promise<number> {
    const upTo = await this.driver.auditIndexBound();
    if (upTo === undefined) return 0;
    const n = await this.write((tx) => tx.run(SQL.auditIndex, [upTo, limit]));
    if (n < limit) await this.driver.auditIndexedThrough(upTo);
    return n;
  }

  async close(): Promise<void> {
    this.indexer?.stop();
    await this.driver.close();
  }
}
