/**
 * The data paths of one transaction, written once for both stores over the statements of
 * ./statements: the store's driver supplies only how a statement runs on its connection (see
 * Conn in ./store-driver), and the ring its secrets are opened and sealed with.
 *
 * Its rules hold on both stores alike: the key new secrets are sealed under is read in the
 * transaction, once, and only by a write that seals something; nothing runs after a write
 * marked as the transaction's last (see WriteEnd), whichever store would have let it; and
 * nothing runs through the handle once its transaction is over (see end).
 */
import type { AuditEvent } from "../../sdk/contract";
import type { AuditRecord } from "../audit";
import { encodeJson, encodeModules, encodeSamlPrivateKey, mayHoldSecrets, type Raw } from "./rows";
import { SECRETS_KEY_ID, type Secrets } from "../secrets";
import { auditInsertValues, auditList, SQL, withAuditEvent } from "./statements";
import type {
  AuditFilter,
  CreatedObject,
  CreateMark,
  EdgeKind,
  EdgeRow,
  RouteChanges,
  RouteRow,
  SqlValue,
  Statement,
  StoredIpPolicy,
  StoredModules,
  StoreTx,
  WriteEnd,
} from "./store";
import type { Conn } from "./store-driver";

export class SqlTx implements StoreTx {
  /** The ring sealing under the store's current key, once read (see sealer). */
  private sealing?: Promise<Secrets>;
  /** Why no statement may run any more, once none may (see sending). */
  private over?: string;

  constructor(
    private readonly conn: Conn,
    /** The ring that opens what the store holds. */
    private readonly ring: Secrets,
  ) {}

  /**
   * The rows of `st` with `args`, as the driver returns them; `last`: nothing follows in the
   * transaction (see WriteEnd).
   */
  private rows(st: Statement<unknown>, args: readonly SqlValue[], last = false): Raw[] | Promise<Raw[]> {
    this.sending(st, last);
    return this.conn.rows(st, args, last);
  }

  /** Runs `st` with `args`: the number of rows it changed; `last` as for rows. */
  private changes(st: Statement<unknown>, args: readonly SqlValue[], last = false): number | Promise<number> {
    this.sending(st, last);
    return this.conn.changes(st, args, last);
  }

  /**
   * Refuses a statement after the write marked as the transaction's last (PostgreSQL has
   * committed with it), or once the transaction is over (see end), on every store alike: a wrong
   * mark fails a test on either.
   */
  private sending(st: Statement<unknown>, last: boolean): void {
    if (this.over !== undefined) throw new Error(`statement ${st.name} ${this.over}: please report this`);
    if (last) this.over = `after ${st.name}, which was marked as its transaction's last write (see WriteEnd)`;
  }

  /**
   * The transaction is over: a statement sent through this handle from now on (one not awaited
   * inside it) would run outside it, in another's or in none, and is refused instead.
   */
  end(): void {
    this.over ??= "after its transaction ended (a statement not awaited inside it?)";
  }

  /**
   * The ring sealing under the key the store names now (`where` names the value, for its error),
   * read in this transaction, once: `secrets rotate` changes it for every writer at its commit,
   * and the transaction's start orders the two (SQLite's BEGIN IMMEDIATE, PostgreSQL's shared
   * lock). A key this server lacks is MissingSecretsKey (503).
   */
  private sealer(where: string): Promise<Secrets> {
    this.sealing ??= this.query(SQL.metaGet, [SECRETS_KEY_ID]).then(([keyId]) =>
      this.ring.sealingUnder(keyId, where),
    );
    return this.sealing;
  }

  /**
   * The rows of `st`, decoded. Not `async`: on SQLite the rows are there at once, and the answer
   * is one resolved promise (no extra turn of the event loop per statement).
   */
  query<Row>(st: Statement<Row>, args: readonly SqlValue[]): Promise<Row[]> {
    return this.decoded(st, args);
  }

  run(st: Statement<unknown>, args: readonly SqlValue[]): Promise<number> {
    // The executor turns a statement's throw into a rejection.
    return new Promise((resolve) => resolve(this.changes(st, args)));
  }

  /** The first row of `st`, decoded (not `async`, as for query). */
  private first<Row>(st: Statement<Row>, args: readonly SqlValue[]): Promise<Row | undefined> {
    const decode = (raw: Raw | undefined) => (raw === undefined ? undefined : st.row(raw, this.ring));
    return new Promise((resolve) => {
      this.sending(st, false);
      const raw = this.conn.first(st, args);
      resolve(raw instanceof Promise ? raw.then(decode) : decode(raw));
    });
  }

  private decoded<Row>(st: Statement<Row>, args: readonly SqlValue[], last = false): Promise<Row[]> {
    const decode = (rows: Raw[]) => rows.map((r) => st.row(r, this.ring));
    return new Promise((resolve) => {
      const raw = this.rows(st, args, last);
      resolve(Array.isArray(raw) ? decode(raw) : raw.then(decode));
    });
  }

  lockCreateKey(key: string): Promise<void> {
    return this.conn.lockCreateKey(key);
  }

  // ------------------------------------------------------------------ edges

  async insertEdge(e: Omit<EdgeRow, "seq">, made?: CreateMark): Promise<void> {
    await this.changes(SQL.edgeInsert, [
      e.id,
      e.kind,
      e.description,
      e.metadata,
      encodeJson(e.hostports),
      e.created_at,
      made?.key ?? null,
      made?.request ?? null,
    ]);
  }

  /**
   * Never locked: a route's writes lock the route's row (an edge deleted meanwhile cascades after
   * them, or leaves them nothing to find), and a route's insert locks the edge through its foreign
   * key. A lock here would write the edge's row at every PATCH of any of its routes.
   */
  getEdge(kind: EdgeKind, id: string): Promise<EdgeRow | undefined> {
    return this.first(SQL.edgeGet, [id, kind]);
  }

  /** A page of edges, newest first, strictly older than `beforeSeq` when given. */
  listEdges(kind: EdgeKind, limit: number, beforeSeq?: number): Promise<EdgeRow[]> {
    return this.query(SQL.edgeList, [kind, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit]);
  }

  async deleteEdge(kind: EdgeKind, id: string): Promise<boolean> {
    return (await this.changes(SQL.edgeDelete, [id, kind])) > 0;
  }

  // ------------------------------------------------------------------ routes

  /**
   * Inserts a route, and `event`, the change's audit event, with it; returns its seq (one more
   * than any stored: the newest sorts first).
   */
  async insertRoute(
    r: Omit<RouteRow, "seq">,
    made?: CreateMark,
    event?: AuditRecord,
    end?: WriteEnd,
  ): Promise<number> {
    const [seq] = await this.withEvent(SQL.routeInsert, event, end, [
      r.id,
      r.edge_id,
      r.match_type,
      r.match,
      r.description,
      r.metadata,
      r.created_at,
      await this.modulesColumn(r.modules, r.id),
      made?.key ?? null,
      made?.request ?? null,
    ]);
    return seq!;
  }

  /** In a write on PostgreSQL, FOR UPDATE: concurrent writers of this route take turns. */
  getRoute(edgeId: string, id: string): Promise<RouteRow | undefined> {
    return this.first(this.conn.locking ? SQL.routeGetLocked : SQL.routeGet, [id, edgeId]);
  }

  listRoutes(edgeId: string, limit: number, beforeSeq?: number): Promise<RouteRow[]> {
    return this.query(SQL.routeList, [edgeId, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit]);
  }

  /** Writes a route's fields and its whole set of modules (one row), and `event` with them. */
  async updateRoute(id: string, c: RouteChanges, event?: AuditRecord, end?: WriteEnd): Promise<void> {
    const args = [
      c.match_type,
      c.match,
      c.description,
      c.metadata,
      await this.modulesColumn(c.modules, id),
      id,
    ];
    const last = end?.last ?? false;
    if (event !== undefined && this.conn.eventsInWrites) {
      await this.rows(withAuditEvent(SQL.routeUpdate), [...args, ...auditInsertValues(event)], last);
      return;
    }
    // Run, not read for rows: libsql collects a statement's rows in JavaScript, ~8 µs for none.
    await this.changes(SQL.routeUpdate, args, event === undefined && last);
    if (event !== undefined) await this.insertAuditEvent(event, end);
  }

  /** The rows of `st`, a write of one row, with `event` written too (see withAuditEvent). */
  private async withEvent<Row>(
    st: Statement<Row>,
    event: AuditRecord | undefined,
    end: WriteEnd | undefined,
    args: SqlValue[],
  ): Promise<Row[]> {
    const last = end?.last ?? false;
    if (event === undefined) return this.decoded(st, args, last);
    if (this.conn.eventsInWrites) {
      return this.decoded(withAuditEvent(st), [...args, ...auditInsertValues(event)], last);
    }
    const rows = await this.query(st, args);
    await this.insertAuditEvent(event, end);
    return rows;
  }

  /**
   * A route's modules column. The store's sealing key is read only when a module that has secret
   * fields is there: a write with nothing to seal writes the same column under any key, and does
   * not pay for the read (a statement per write on PostgreSQL).
   */
  private async modulesColumn(modules: StoredModules, routeId: string): Promise<string> {
    const where = `route ${routeId}`;
    return mayHoldSecrets(modules)
      ? encodeModules(modules, await this.sealer(where), routeId)
      : JSON.stringify(modules);
  }

  async deleteRoute(edgeId: string, id: string): Promise<boolean> {
    return (await this.changes(SQL.routeDelete, [id, edgeId])) > 0;
  }

  // ------------------------------------------------------------------ SAML signing keys

  async getSamlCertificates(routeIds: string[]): Promise<Map<string, string>> {
    if (routeIds.length === 0) return new Map();
    return new Map(await this.query(SQL.samlGet, [routeIds]));
  }

  async putSamlKey(routeId: string, certificatePem: string, privateKeyPem: string): Promise<void> {
    await this.changes(SQL.samlPut, [
      routeId,
      certificatePem,
      encodeSamlPrivateKey(privateKeyPem, await this.sealer(`route ${routeId}`)),
    ]);
  }

  // ------------------------------------------------------------------ TLS IP restriction

  async getTlsRestrictions(edgeIds: string[]): Promise<Map<string, StoredIpPolicy>> {
    if (edgeIds.length === 0) return new Map();
    return new Map(await this.query(SQL.tlsGet, [edgeIds]));
  }

  /** An existing module keeps the mark of the create that made it. */
  async putTlsRestriction(edgeId: string, config: StoredIpPolicy, made?: CreateMark): Promise<void> {
    await this.changes(SQL.tlsPut, [edgeId, encodeJson(config), made?.key ?? null, made?.request ?? null]);
  }

  async deleteTlsRestriction(edgeId: string): Promise<boolean> {
    return (await this.changes(SQL.tlsDelete, [edgeId])) > 0;
  }

  // ------------------------------------------------------------------ keyed creates

  findCreated(key: string): Promise<CreatedObject | undefined> {
    return this.first(SQL.findCreated, [key]);
  }

  // ------------------------------------------------------------------ audit trail (./audit)

  async insertAuditEvent(e: AuditRecord, end?: WriteEnd): Promise<void> {
    await this.changes(SQL.auditInsert, auditInsertValues(e), end?.last);
  }

  listAuditEvents(f: AuditFilter): Promise<AuditEvent[]> {
    const { st, args } = auditList(f);
    return this.query(st, args);
  }
}
