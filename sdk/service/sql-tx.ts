/**
 * The data paths of a transaction, written once for both stores over the statements of
 * ./statements: a store supplies only how a statement runs on its driver (`rows`, `changes`),
 * the ring its secrets are opened and sealed with, and whether reads to change lock their rows.
 */
import type { AuditEvent } from "../contract";
import type { AuditRecord } from "./audit";
import { encodeJson, encodeModules, encodeSamlPrivateKey, mayHoldSecrets, type Raw } from "./rows";
import type { Secrets } from "./secrets";
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

export abstract class SqlTx implements StoreTx {
  /**
   * The rows of `st` with `args`, as the driver returns them; `last`: nothing follows in the
   * transaction (see WriteEnd), the store may commit with it.
   */
  protected abstract rows(
    st: Statement<unknown>,
    args: readonly SqlValue[],
    last?: boolean,
  ): Raw[] | Promise<Raw[]>;
  /** Runs `st` with `args`: the number of rows it changed; `last` as for rows. */
  protected abstract changes(
    st: Statement<unknown>,
    args: readonly SqlValue[],
    last?: boolean,
  ): number | Promise<number>;
  /** The first row of `st` (SQLite steps once instead of collecting every row). */
  protected firstRow(
    st: Statement<unknown>,
    args: readonly SqlValue[],
  ): Raw | undefined | Promise<Raw | undefined> {
    const rows = this.rows(st, args);
    return Array.isArray(rows) ? rows[0] : rows.then((r) => r[0]);
  }
  /** The ring that opens what the store holds. */
  protected abstract ring(): Secrets;
  /**
   * The ring sealing under the store's current key (`where` names the value, for its error): the
   * key is read in the transaction, once, and only by a write that seals something.
   */
  protected abstract sealer(where: string): Secrets | Promise<Secrets>;
  /** Whether a read of a row to change locks it (PostgreSQL's write transactions). */
  protected abstract locking(): boolean;
  /** Whether a write and its audit event go as one statement (see withAuditEvent). */
  protected abstract eventsInWrites(): boolean;

  abstract lockCreateKey(key: string): Promise<void>;

  /**
   * The rows of `st`, decoded. Not `async`: on SQLite the rows are there at once, and the answer
   * is one resolved promise (no extra turn of the event loop per statement).
   */
  query<Row>(st: Statement<Row>, args: readonly SqlValue[]): Promise<Row[]> {
    return this.decoded(st, args, (rows) => rows);
  }

  run(st: Statement<unknown>, args: readonly SqlValue[]): Promise<number> {
    // The executor turns a statement's throw into a rejection.
    return new Promise((resolve) => resolve(this.changes(st, args)));
  }

  private first<Row>(st: Statement<Row>, args: readonly SqlValue[]): Promise<Row | undefined> {
    const decode = (raw: Raw | undefined) => (raw === undefined ? undefined : st.row(raw, this.ring()));
    return new Promise((resolve) => {
      const raw = this.firstRow(st, args);
      resolve(raw instanceof Promise ? raw.then(decode) : decode(raw));
    });
  }

  private decoded<Row, T>(
    st: Statement<Row>,
    args: readonly SqlValue[],
    pick: (rows: Row[]) => T,
    last = false,
  ): Promise<T> {
    const decode = (rows: Raw[]) => {
      const ring = this.ring();
      return pick(rows.map((r) => st.row(r, ring)));
    };
    return new Promise((resolve) => {
      const raw = this.rows(st, args, last);
      resolve(Array.isArray(raw) ? decode(raw) : raw.then(decode));
    });
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
    return this.first(this.locking() ? SQL.routeGetLocked : SQL.routeGet, [id, edgeId]);
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
    if (event !== undefined && this.eventsInWrites()) {
      await this.rows(withAuditEvent(SQL.routeUpdate), [...args, ...auditInsertValues(event)], end?.last);
      return;
    }
    if (event === undefined) {
      await this.changes(SQL.routeUpdate, args, end?.last);
      return;
    }
    await this.changes(SQL.routeUpdate, args);
    await this.insertAuditEvent(event);
  }

  /** The rows of `st`, a write of one row, with `event` written too (see withAuditEvent). */
  private async withEvent<Row>(
    st: Statement<Row>,
    event: AuditRecord | undefined,
    end: WriteEnd | undefined,
    args: SqlValue[],
  ): Promise<Row[]> {
    const all = (rows: Row[]) => rows;
    if (event === undefined) return this.decoded(st, args, all, end?.last);
    if (this.eventsInWrites()) {
      return this.decoded(withAuditEvent(st), [...args, ...auditInsertValues(event)], all, end?.last);
    }
    const rows = await this.query(st, args);
    await this.insertAuditEvent(event);
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

  async rekeyCreated(found: CreatedObject, from: string, to: string): Promise<void> {
    const rekey = {
      edges: SQL.rekeyEdge,
      routes: SQL.rekeyRoute,
      tls_ip_restrictions: SQL.rekeyTlsRestriction,
    };
    await this.changes(rekey[found.table], [to, from]);
  }

  // ------------------------------------------------------------------ audit trail (./audit)

  async insertAuditEvent(e: AuditRecord): Promise<void> {
    await this.changes(SQL.auditInsert, auditInsertValues(e));
  }

  listAuditEvents(f: AuditFilter): Promise<AuditEvent[]> {
    const { st, args } = auditList(f);
    return this.query(st, args);
  }
}
