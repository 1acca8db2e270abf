/**
 * The API's behaviour, independent of HTTP: validation against the contract, the rules of
 * docs/decisions.md, each mutation in one transaction, rendering of stored rows into response
 * shapes.
 */
import type { z } from "zod";
import {
  type AuditChange,
  type AuditEventList,
  type AuditObjectKind,
  type AuditQuery,
  authModuleProblem,
  edgeCreateSchema,
  type HttpsEdge,
  IDEMPOTENCY_KEY_HEADER,
  type HttpsEdgeList,
  isRouteModuleName,
  ipPolicyMapping,
  issuesToProblems,
  type ModuleRequest,
  renderModule,
  PAGE_LIMIT_DEFAULT,
  type ModuleBodySchema,
  moduleBodyForm,
  type Operation,
  OPERATIONS,
  type PageQuery,
  type PathParams,
  type QueryOf,
  type PathIds,
  pathEchoProblems,
  ROUTE_MODULE_BODIES,
  ROUTE_MODULE_NAMES,
  type Route,
  type RouteList,
  type RouteModuleName,
  routeCreateBodySchema,
  routeCreateSchema,
  routeUpdateSchema,
  type TlsEdge,
  type TlsEdgeList,
  type TlsIpRestriction,
  tlsIpRestrictionBodySchema,
  unwrapModule,
  ROUTE_SECRET_PATHS,
  redactedSecretProblems,
  redactSecrets,
  camel,
  queryString,
  canonicalHostport,
} from "../sdk/contract";
import { type AuditActor, type AuditRecord, auditRecord, diffChanges } from "./audit";
import { ApiError } from "./errors";
import { newId } from "./ids";
import {
  type Deadline,
  type EdgeKind,
  type EdgeRow,
  type ModuleConfigs,
  type CreatedObject,
  type CreatedTable,
  type CreateMark,
  type RouteRow,
  auditSeqOf,
  type Store,
  ParentMissing,
  type StoreTx,
  type StoredIpPolicy,
  UniqueViolation,
  type WriteEnd,
} from "./store/store";
import { createSelfSignedCertificate } from "./x509";

type RoutesQuery = QueryOf<typeof OPERATIONS.routes.list>;

/** Where the caller reached the service: every Ref and uri is built from it. */
export interface RequestContext {
  baseUrl: string;
  /**
   * `Idempotency-Key` of a create: a create repeated with the same key and request (a client
   * retrying after a lost answer, in this call or a later run) answers the object the first one
   * made, as it is now, for as long as that object exists; it creates nothing more.
   */
  idempotencyKey?: string;
  /** Told when a keyed create answers with what an earlier create with its key made. */
  onReplay?: () => void;
  /** Who asks (the key's name, the `Request-Id`): what the change's audit event names. */
  actor?: AuditActor;
  /** The asker may not read secrets (a `read` key): routes are answered with them redacted. */
  redactSecrets?: boolean;
  /**
   * When the request's database work must be over, if the request says (a load balancer's
   * receipt of it: see Store.requestDeadline); else each transaction has the store's own.
   */
  deadline?: Deadline;
}

type AuditedObject = { kind: AuditObjectKind; id: string; edgeId?: string };

/** The audit event of the change being made: its operation, its object, the changed fields. */
interface Audit {
  /** Writes it now, in the change's transaction. */
  write(operation: string, object: AuditedObject, changes: Record<string, AuditChange>): Promise<void>;
  /**
   * The event, for the write that stores it with the change (StoreTx.insertRoute, updateRoute:
   * one statement on PostgreSQL); undefined when nothing changed.
   */
  event(
    operation: string,
    object: AuditedObject,
    changes: Record<string, AuditChange>,
  ): AuditRecord | undefined;
}

/** What an audit event compares of an edge (its fields, wire names). */
const edgeImage = (e: Pick<EdgeRow, "description" | "metadata" | "hostports">) => ({
  description: e.description,
  metadata: e.metadata,
  hostports: e.hostports,
});
/** What an audit event compares of a route: its fields and its modules, as on the wire. */
const routeImage = (r: Pick<RouteRow, "match_type" | "match" | "description" | "metadata" | "modules">) => ({
  match_type: r.match_type,
  match: r.match,
  description: r.description,
  metadata: r.metadata,
  ...r.modules,
});
type RouteImaged = Parameters<typeof routeImage>[0];
const routeChanges = (before?: RouteImaged, after?: RouteImaged) =>
  diffChanges(before && routeImage(before), after && routeImage(after), ROUTE_SECRET_PATHS);
/**
 * A route's write as its transaction's end: the last statement unless a SAML module makes or reads
 * the route's signing key after it (ensureSamlKey, renderOne); the answer is rendered from what the
 * request holds.
 */
const routeWriteEnd = (written: Pick<RouteRow, "modules">): WriteEnd => ({
  last: written.modules.saml === undefined,
});
/**
 * A list's links: `uri` is the list as asked (its filters, not its page) and `next_page_uri` the
 * page after `last` (undefined on the last page), both spelled by `queryString` from the
 * operation's own query schema, so a filter added to the table is carried from page to page.
 */
function pageLinks(
  op: Pick<Operation, "query">,
  base: string,
  query: Record<string, unknown>,
  page: { limit: number; last: string | undefined },
): { uri: string; next_page_uri: string | null } {
  const asked = Object.fromEntries(
    Object.entries(query)
      .filter(([k]) => k !== "limit" && k !== "before_id")
      .map(([k, v]) => [camel(k), v]),
  );
  return {
    uri: base + queryString(op, asked),
    next_page_uri:
      page.last === undefined
        ? null
        : base + queryString(op, { ...asked, limit: page.limit, beforeId: page.last }),
  };
}

const EDGE_AUDIT_KIND: Record<EdgeKind, AuditObjectKind> = { https: "https_edge", tls: "tls_edge" };

/**
 * Parses a request body with its contract schema; identifiers of the path that the body repeats
 * (docs/decisions.md#compatibility) must equal the path's.
 */
function parse<S extends z.ZodType>(schema: S, body: unknown, path: PathIds = {}): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw ApiError.invalid(issuesToProblems(result.error.issues));
  assertPathEcho(result.data, path);
  return result.data;
}

/** A write never stores SECRET_REDACTED as a secret (see redactedSecretProblems); `skip` leading path parts. */
function assertNoRedactedSecret(modules: unknown, skip = 0): void {
  const problems = redactedSecretProblems(modules).map((p) => ({
    ...p,
    field: p.field?.split(".").slice(skip).join("."),
  }));
  if (problems.length > 0) throw ApiError.invalid(problems);
}

function assertPathEcho(body: unknown, path: PathIds): void {
  const problems = pathEchoProblems(body, path);
  if (problems.length > 0) throw ApiError.invalid(problems);
}

/** A module PUT body, bare or wrapped (`{"edge_id"?, "id"?, "module"}`): the module it carries. */
function parseModule(schema: ModuleBodySchema, body: unknown, path: PathIds): unknown {
  const { module, wrapper } = unwrapModule(parse(moduleBodyForm(schema, body), body));
  if (wrapper) assertPathEcho(wrapper, path);
  return module;
}

const EDGE_LABEL: Record<EdgeKind, string> = { https: "HTTPS edge", tls: "TLS edge" };

/** The row a route create writes: a new id, its fields, its modules (one auth module at most: the schema's rule). */
function newRouteRow(edgeId: string, input: z.output<typeof routeCreateSchema>) {
  const { match_type, match, description, metadata } = input;
  return {
    id: newId("route"),
    edge_id: edgeId,
    match_type,
    match,
    description,
    metadata,
    created_at: now(),
    modules: pickModules(input),
  };
}

export class EdgeService {
  /** `onAudit`: told how many audit events each committed change wrote (the metrics). */
  constructor(
    readonly store: Store,
    private readonly onAudit?: (events: number) => void,
  ) {}

  /**
   * Runs a change in one write transaction, with the means to write its audit event in that same
   * transaction (see ./audit): the event commits with the change, or neither does.
   */
  private async change<T>(ctx: RequestContext | undefined, fn: (tx: StoreTx, audit: Audit) => Promise<T>) {
    let written = 0;
    const result = await this.store.write((tx) => {
      written = 0; // a transaction retried whole (PostgreSQL's deadlock) writes its events again
      const event: Audit["event"] = (operation, object, changes) => {
        // A request that changed nothing (`PATCH {}`, a module PUT of what is there) is no event:
        // an author is never buried under empty ones.
        if (Object.keys(changes).length === 0) return undefined;
        written++; // reported once the transaction commits
        return auditRecord(operation, object, ctx?.actor, changes);
      };
      return fn(tx, {
        event,
        write: async (operation, object, changes) => {
          const record = event(operation, object, changes);
          if (record !== undefined) await tx.insertAuditEvent(record);
        },
      });
    }, ctx?.deadline);
    if (written > 0) this.onAudit?.(written);
    return result;
  }

  /** Runs a read against one snapshot, within the request's deadline. */
  private read<T>(ctx: RequestContext, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.store.read(fn, ctx.deadline);
  }

  // ------------------------------------------------------------------ audit trail

  /** `GET /audit_events`: newest first, filtered, a page at a time (`before_id`). */
  listAuditEvents(q: AuditQuery, ctx: RequestContext): Promise<AuditEventList> {
    const limit = q.limit ?? PAGE_LIMIT_DEFAULT;
    let beforeSeq: number | undefined;
    if (q.before_id !== undefined) {
      beforeSeq = auditSeqOf(q.before_id);
      if (beforeSeq === undefined)
        throw ApiError.invalid([{ field: "before_id", msg: "is not an id of this list (aud_...)" }]);
    }
    return this.read(ctx, async (tx) => {
      const events = await tx.listAuditEvents({
        objectId: q.object_id,
        key: q.key,
        since: q.since,
        limit: limit + 1,
        beforeSeq,
      });
      const page = events.slice(0, limit);
      const links = pageLinks(OPERATIONS.audit.list, `${ctx.baseUrl}/audit_events`, q, {
        limit,
        last: events.length > limit ? page.at(-1)?.id : undefined,
      });
      return { audit_events: page, ...links };
    });
  }

  // ------------------------------------------------------------------ edges

  createEdge(kind: "https", body: unknown, ctx: RequestContext): Promise<HttpsEdge>;
  createEdge(kind: "tls", body: unknown, ctx: RequestContext): Promise<TlsEdge>;
  createEdge(kind: EdgeKind, body: unknown, ctx: RequestContext): Promise<HttpsEdge | TlsEdge>;
  createEdge(kind: EdgeKind, body: unknown, ctx: RequestContext): Promise<HttpsEdge | TlsEdge> {
    const input = parse(edgeCreateSchema, body);
    const row = { id: newId(kind === "https" ? "httpsEdge" : "tlsEdge"), kind, created_at: now(), ...input };
    return this.change(ctx, (tx, audit) =>
      this.once(tx, ctx, "edges", `POST /edges/${kind} ${JSON.stringify(body)}`, {
        create: async (made) => {
          await this.assertHostportsFree(tx, row.hostports);
          await tx.insertEdge(row, made);
          await audit.write(
            OPERATIONS[kind].create.id,
            { kind: EDGE_AUDIT_KIND[kind], id: row.id },
            diffChanges(undefined, edgeImage(row)),
          );
          return this.renderEdge(tx, await this.requireEdge(tx, kind, row.id), ctx);
        },
        // The request (its fingerprint) names the kind: the edge found is of this kind.
        existing: async (found) => this.renderEdge(tx, await this.requireEdge(tx, kind, found.id), ctx),
      }),
    );
  }

  /**
   * A hostport is served by one edge at a time (of either kind): an edge's natural key, so that a
   * create repeated without its idempotency key conflicts, naming the edge, instead of making a
   * second one. Each hostport is locked first (in one order: no deadlock), so of two creates naming
   * one hostport on two replicas, the second waits and sees the first's edge.
   */
  private async assertHostportsFree(tx: StoreTx, hostports: readonly string[]): Promise<void> {
    if (hostports.length === 0) return;
    const wanted = [...new Set(hostports.map(hostportKey))].sort();
    for (const h of wanted) await tx.lockCreateKey(`hostport ${h}`);
    for (const kind of ["https", "tls"] as const) {
      for (let beforeSeq: number | undefined; ;) {
        const rows = await tx.listEdges(kind, 500, beforeSeq);
        for (const edge of rows) {
          const taken = edge.hostports.filter((h) => wanted.includes(hostportKey(h)));
          if (taken.length > 0) throw hostportTaken(taken, EDGE_LABEL[kind], edge.id);
        }
        if (rows.length < 500) break;
        beforeSeq = rows.at(-1)?.seq;
      }
    }
  }

  getEdge(kind: "https", id: string, ctx: RequestContext): Promise<HttpsEdge>;
  getEdge(kind: "tls", id: string, ctx: RequestContext): Promise<TlsEdge>;
  getEdge(kind: EdgeKind, id: string, ctx: RequestContext): Promise<HttpsEdge | TlsEdge>;
  getEdge(kind: EdgeKind, id: string, ctx: RequestContext): Promise<HttpsEdge | TlsEdge> {
    return this.read(ctx, async (tx) => this.renderEdge(tx, await this.requireEdge(tx, kind, id), ctx));
  }

  listEdges(kind: "https", q: PageQuery, ctx: RequestContext): Promise<HttpsEdgeList>;
  listEdges(kind: "tls", q: PageQuery, ctx: RequestContext): Promise<TlsEdgeList>;
  listEdges(kind: EdgeKind, q: PageQuery, ctx: RequestContext): Promise<HttpsEdgeList | TlsEdgeList>;
  listEdges(kind: EdgeKind, q: PageQuery, ctx: RequestContext): Promise<HttpsEdgeList | TlsEdgeList> {
    return this.read(ctx, async (tx) => {
      const { limit, beforeSeq } = await this.page(q, async (id) => (await tx.getEdge(kind, id))?.seq);
      const rows = await tx.listEdges(kind, limit + 1, beforeSeq);
      const items: Array<HttpsEdge | TlsEdge> = [];
      for (const r of rows.slice(0, limit)) items.push(await this.renderEdge(tx, r, ctx));
      const links = pageLinks(OPERATIONS[kind].list, `${ctx.baseUrl}/edges/${kind}`, q, {
        limit,
        last: rows.length > limit ? items.at(-1)?.id : undefined,
      });
      return kind === "https"
        ? { https_edges: items as HttpsEdge[], ...links }
        : { tls_edges: items as TlsEdge[], ...links };
    });
  }

  async deleteEdge(kind: EdgeKind, id: string, ctx?: RequestContext): Promise<void> {
    await this.change(ctx, async (tx, audit) => {
      const edge = await this.requireEdge(tx, kind, id);
      if (!(await tx.deleteEdge(kind, id))) throw ApiError.notFound(`${EDGE_LABEL[kind]} ${id}`);
      await audit.write(
        OPERATIONS[kind].delete.id,
        { kind: EDGE_AUDIT_KIND[kind], id },
        diffChanges(edgeImage(edge), undefined),
      );
    });
  }

  // ------------------------------------------------------------------ routes

  createRoute(edgeId: string, body: unknown, ctx: RequestContext): Promise<Route> {
    const row = newRouteRow(edgeId, parse(routeCreateBodySchema, body, { edge_id: edgeId }));
    assertNoRedactedSecret(row.modules);
    return this.change(ctx, (tx, audit) =>
      this.once(tx, ctx, "routes", `POST /edges/https/${edgeId}/routes ${JSON.stringify(body)}`, {
        create: async (made) => {
          await this.requireEdge(tx, "https", edgeId);
          const event = audit.event(
            OPERATIONS.routes.create.id,
            { kind: "route", id: row.id, edgeId },
            routeChanges(undefined, row),
          );
          const seq = await uniqueMatch(row, () =>
            edgeStillThere(edgeId, () => tx.insertRoute(row, made, event, routeWriteEnd(row))),
          );
          await this.ensureSamlKey(tx, row.id, row.modules);
          // Rendered from what was just written: the same transaction, nothing to read back.
          return await this.renderOne(tx, { seq, ...row }, ctx);
        },
        // The request (its fingerprint) names the edge: the route found is under edgeId.
        existing: async (found) =>
          await this.renderOne(tx, await this.requireRoute(tx, edgeId, found.id), ctx),
      }),
    );
  }

  /**
   * Creates many routes of one edge in one transaction, each checked as a POST would be (the bulk
   * seeding of benchmarks and load tests; not part of the HTTP API). Returns the new ids.
   */
  async createRoutes(edgeId: string, bodies: unknown[]): Promise<string[]> {
    const rows = bodies.map((body) => newRouteRow(edgeId, parse(routeCreateSchema, body)));
    return this.store.write(async (tx) => {
      await this.requireEdge(tx, "https", edgeId);
      for (const row of rows) {
        await uniqueMatch(row, () => tx.insertRoute(row));
        await this.ensureSamlKey(tx, row.id, row.modules);
      }
      return rows.map((r) => r.id);
    });
  }

  getRoute(edgeId: string, id: string, ctx: RequestContext): Promise<Route> {
    return this.read(
      ctx,
      async (tx) => await this.renderOne(tx, await this.requireRoute(tx, edgeId, id), ctx),
    );
  }

  /** The whole query of the operation (its table entry's schema): a filter added there is in `q`, and in its links. */
  listRoutes(edgeId: string, q: RoutesQuery, ctx: RequestContext): Promise<RouteList> {
    return this.read(ctx, async (tx) => {
      const { limit, beforeSeq } = await this.page(q, async (id) => (await tx.getRoute(edgeId, id))?.seq);
      await this.requireEdge(tx, "https", edgeId);
      const rows = await tx.listRoutes(edgeId, limit + 1, beforeSeq);
      const routes = await this.renderRoutes(tx, rows.slice(0, limit), ctx);
      const links = pageLinks(OPERATIONS.routes.list, `${ctx.baseUrl}/edges/https/${edgeId}/routes`, q, {
        limit,
        last: rows.length > limit ? routes.at(-1)?.id : undefined,
      });
      return { routes, ...links };
    });
  }

  /**
   * PATCH: present fields replace, a present module replaces that module whole, absent or
   * null modules are untouched. The route is read (and locked) and written in one write
   * transaction, so concurrent PATCHes of different modules of one route never lose each other's
   * change.
   */
  updateRoute(edgeId: string, id: string, body: unknown, ctx: RequestContext): Promise<Route> {
    const patch = parse(routeUpdateSchema, body, { edge_id: edgeId, id });
    assertNoRedactedSecret(patch);
    const modules = pickModules(patch);
    return this.change(ctx, async (tx, audit) => {
      const row = await this.requireRoute(tx, edgeId, id);
      const next: RouteRow = {
        ...row,
        match_type: patch.match_type ?? row.match_type,
        match: patch.match ?? row.match,
        description: patch.description ?? row.description,
        metadata: patch.metadata ?? row.metadata,
        modules: { ...row.modules, ...modules },
      };
      assertOneAuthModule(next.modules, modules);
      const event = audit.event(
        OPERATIONS.routes.update.id,
        { kind: "route", id, edgeId },
        routeChanges(row, next),
      );
      await uniqueMatch(next, () => tx.updateRoute(id, next, event, routeWriteEnd(next)));
      await this.ensureSamlKey(tx, id, modules);
      return await this.renderOne(tx, next, ctx);
    });
  }

  async deleteRoute(edgeId: string, id: string, ctx?: RequestContext): Promise<void> {
    await this.change(ctx, async (tx, audit) => {
      const row = await this.requireRoute(tx, edgeId, id);
      await tx.deleteRoute(edgeId, id);
      await audit.write(
        OPERATIONS.routes.delete.id,
        { kind: "route", id, edgeId },
        routeChanges(row, undefined),
      );
    });
  }

  // ------------------------------------------------------------------ route module sub-resources

  putModule(edgeId: string, id: string, name: string, body: unknown, ctx: RequestContext): Promise<unknown> {
    const module = this.requireModuleName(name);
    const config = parseModule(ROUTE_MODULE_BODIES[module], body, { edge_id: edgeId, id });
    // The problem's path is the module's own (the body is the module).
    assertNoRedactedSecret({ [module]: config }, 1);
    return this.change(ctx, async (tx, audit) => {
      const row = await this.requireRoute(tx, edgeId, id);
      const next: RouteRow = { ...row, modules: { ...row.modules, [module]: config } };
      assertOneAuthModule(next.modules, { [module]: config });
      const event = audit.event(
        OPERATIONS.modules[module].put.id,
        { kind: "route", id, edgeId },
        routeChanges(row, next),
      );
      // Only modules change: no unique key is touched.
      await tx.updateRoute(id, next, event, routeWriteEnd(next));
      await this.ensureSamlKey(tx, id, { [module]: config });
      return (await this.renderOne(tx, next, ctx))[module];
    });
  }

  getModule(edgeId: string, id: string, name: string, ctx: RequestContext): Promise<unknown> {
    const module = this.requireModuleName(name);
    return this.read(ctx, async (tx) => {
      const route = await this.renderOne(tx, await this.requireRoute(tx, edgeId, id), ctx);
      if (route[module] === null)
        throw ApiError.notFound(`module ${module} of route ${id} (it is not configured)`);
      return route[module];
    });
  }

  async deleteModule(edgeId: string, id: string, name: string, ctx?: RequestContext): Promise<void> {
    const module = this.requireModuleName(name);
    await this.change(ctx, async (tx, audit) => {
      const row = await this.requireRoute(tx, edgeId, id);
      if (row.modules[module] === undefined) {
        throw ApiError.notFound(`module ${module} of route ${id} (it is not configured)`);
      }
      const { [module]: _deleted, ...rest } = row.modules;
      const next: RouteRow = { ...row, modules: rest };
      await tx.updateRoute(
        id,
        next,
        audit.event(
          OPERATIONS.modules[module].delete.id,
          { kind: "route", id, edgeId },
          routeChanges(row, next),
        ),
        { last: true },
      );
    });
  }

  // ------------------------------------------------------------------ TLS IP restriction

  /**
   * Replaces the module. With an `Idempotency-Key` it is a create instead: it sets a module only
   * where none is configured (else 409, nothing changed), exactly once per key (a repeat answers
   * the module that key made, as it is now).
   */
  putTlsIpRestriction(edgeId: string, body: unknown, ctx: RequestContext): Promise<TlsIpRestriction> {
    const config = parseModule(tlsIpRestrictionBodySchema, body, { id: edgeId }) as StoredIpPolicy;
    const put = async (tx: StoreTx, audit: Audit, made?: CreateMark) => {
      const before = (await tx.getTlsRestrictions([edgeId])).get(edgeId);
      await edgeStillThere(edgeId, () => tx.putTlsRestriction(edgeId, config, made), "TLS edge");
      await audit.write(
        OPERATIONS.tlsIpRestriction.put.id,
        { kind: "tls_ip_restriction", id: edgeId },
        diffChanges(before, config),
      );
      return renderIpPolicy(config, ctx);
    };
    return this.change(ctx, async (tx, audit) => {
      await this.requireEdge(tx, "tls", edgeId);
      if (ctx.idempotencyKey === undefined) return put(tx, audit);
      return this.once(
        tx,
        ctx,
        "tls_ip_restrictions",
        `PUT /edges/tls/${edgeId}/ip_restriction ${JSON.stringify(body)}`,
        {
          create: async (made) => {
            if ((await tx.getTlsRestrictions([edgeId])).has(edgeId)) {
              throw new ApiError(
                "conflict",
                `TLS edge ${edgeId} already has an IP restriction module, made by another request: a PUT with an Idempotency-Key only creates one; PUT without the key to replace it`,
              );
            }
            return put(tx, audit, made);
          },
          existing: () => this.getTlsIpRestrictionIn(tx, edgeId, ctx),
        },
      );
    });
  }

  getTlsIpRestriction(edgeId: string, ctx: RequestContext): Promise<TlsIpRestriction> {
    return this.read(ctx, async (tx) => {
      await this.requireEdge(tx, "tls", edgeId);
      return this.getTlsIpRestrictionIn(tx, edgeId, ctx);
    });
  }

  private async getTlsIpRestrictionIn(tx: StoreTx, edgeId: string, ctx: RequestContext) {
    const config = (await tx.getTlsRestrictions([edgeId])).get(edgeId);
    if (config === undefined)
      throw ApiError.notFound(`IP restriction of TLS edge ${edgeId} (it is not configured)`);
    return renderIpPolicy(config, ctx);
  }

  async deleteTlsIpRestriction(edgeId: string, ctx?: RequestContext): Promise<void> {
    await this.change(ctx, async (tx, audit) => {
      await this.requireEdge(tx, "tls", edgeId);
      const before = (await tx.getTlsRestrictions([edgeId])).get(edgeId);
      if (before === undefined || !(await tx.deleteTlsRestriction(edgeId))) {
        throw ApiError.notFound(`IP restriction of TLS edge ${edgeId} (it is not configured)`);
      }
      await audit.write(
        OPERATIONS.tlsIpRestriction.delete.id,
        { kind: "tls_ip_restriction", id: edgeId },
        diffChanges(before, undefined),
      );
    });
  }

  // ------------------------------------------------------------------ internals

  /**
   * Runs a create once per `Idempotency-Key`, inside the caller's write transaction, so that the
   * object and the key it was made with commit together. The key is kept on the object's own row:
   * a repeat with the same key and request finds the object and answers it as it is now, for as
   * long as it exists (no time limit; deleting the object forgets the key); the same key with
   * another request is refused. The request is kept as its fingerprint (./fingerprints). The key is locked first, so that of two concurrent creates with
   * one key (two replicas), the second waits and finds what the first made.
   */
  private async once<T>(
    tx: StoreTx,
    ctx: RequestContext,
    table: CreatedTable,
    request: string,
    run: { create: (made?: CreateMark) => Promise<T>; existing: (found: CreatedObject) => Promise<T> },
  ): Promise<T> {
    const key = ctx.idempotencyKey;
    if (key === undefined) return run.create();
    // Keyed under the store's key: the request's body holds its secrets in plaintext, and what is
    // kept for the object's life must answer no guess of them (./fingerprints).
    const fingerprint = this.store.createFingerprint(request);
    await tx.lockCreateKey(key);
    const found = await tx.findCreated(key);
    if (!found) return run.create({ key, request: fingerprint });
    if (found.table !== table || found.request !== fingerprint) {
      throw ApiError.invalid(
        [
          {
            field: IDEMPOTENCY_KEY_HEADER,
            msg: `was already used for a different request (it made ${found.id}): send a new key with a new request`,
          },
        ],
        found.id,
      );
    }
    ctx.onReplay?.();
    return run.existing(found);
  }

  private async requireEdge(tx: StoreTx, kind: EdgeKind, id: string): Promise<EdgeRow> {
    const edge = await tx.getEdge(kind, id);
    if (!edge) throw ApiError.notFound(`${EDGE_LABEL[kind]} ${id}`);
    return edge;
  }

  /**
   * The route, found by its edge and id in one statement: a route exists only under an HTTPS edge
   * that exists (created under one, deleted with it), so the edge is looked up only to say which
   * of the two is missing.
   */
  private async requireRoute(tx: StoreTx, edgeId: string, id: string): Promise<RouteRow> {
    const row = await tx.getRoute(edgeId, id);
    if (row) return row;
    await this.requireEdge(tx, "https", edgeId);
    throw ApiError.notFound(`route ${id} of HTTPS edge ${edgeId}`);
  }

  private requireModuleName(name: string): RouteModuleName {
    if (!isRouteModuleName(name)) throw ApiError.notFound(`route module "${name}"`);
    return name;
  }

  /** `before_id` must name an item of the same list (same edge kind, same edge). */
  private async page(
    q: PageQuery,
    seqOf: (id: string) => Promise<number | undefined>,
  ): Promise<{ limit: number; beforeSeq?: number }> {
    const limit = q.limit ?? PAGE_LIMIT_DEFAULT; // checked by pageQuerySchema
    if (q.before_id === undefined) return { limit };
    const beforeSeq = await seqOf(q.before_id);
    if (beforeSeq === undefined)
      throw ApiError.invalid([{ field: "before_id", msg: "is not an id of this list" }]);
    return { limit, beforeSeq };
  }

  /** One signing key pair per route, made the first time SAML is configured, kept for its life. */
  private async ensureSamlKey(tx: StoreTx, routeId: string, modules: ModuleConfigs): Promise<void> {
    if (modules.saml === undefined || (await tx.getSamlCertificates([routeId])).has(routeId)) return;
    const cert = createSelfSignedCertificate({ commonName: `edge-route-${routeId}` });
    await tx.putSamlKey(routeId, cert.certificatePem, cert.privateKeyPem);
  }

  private async renderEdge(tx: StoreTx, row: EdgeRow, ctx: RequestContext): Promise<HttpsEdge | TlsEdge> {
    const base = {
      id: row.id,
      uri: `${ctx.baseUrl}/edges/${row.kind}/${row.id}`,
      created_at: row.created_at,
      description: row.description,
      metadata: row.metadata,
      hostports: row.hostports,
    };
    if (row.kind === "https") {
      // Every route of the edge, oldest first (pages of routes are available from the routes list).
      const routes: RouteRow[] = [];
      for (let before: number | undefined; ;) {
        const batch = await tx.listRoutes(row.id, 500, before);
        routes.push(...batch);
        const last = batch.at(-1);
        if (batch.length < 500 || last === undefined) break;
        before = last.seq;
      }
      return { ...base, routes: await this.renderRoutes(tx, routes.reverse(), ctx) };
    }
    const restriction = (await tx.getTlsRestrictions([row.id])).get(row.id);
    return {
      ...base,
      ip_restriction: restriction ? renderIpPolicy(restriction, ctx) : null,
    };
  }

  private async renderRoutes(tx: StoreTx, rows: RouteRow[], ctx: RequestContext): Promise<Route[]> {
    const certs = await tx.getSamlCertificates(
      rows.filter((r) => r.modules.saml !== undefined).map((r) => r.id),
    );
    return rows.map((row) => renderRoute(row, certs.get(row.id) ?? "", ctx));
  }

  private async renderOne(tx: StoreTx, row: RouteRow, ctx: RequestContext): Promise<Route> {
    const certs = row.modules.saml === undefined ? undefined : await tx.getSamlCertificates([row.id]);
    return renderRoute(row, certs?.get(row.id) ?? "", ctx);
  }
}

/** What an operation's handler gets: the path's identifiers (checked), the body, the page, the context. */
export interface Call<O extends Operation> {
  params: Record<PathParams<O["path"]>, string>;
  /** The JSON body as sent (the service parses it against the contract). */
  body: unknown;
  /** `?limit=` and `?before_id=`, for the list operations. */
  page: PageQuery;
  /** The whole query, as the operation's schema parsed it (the audit trail's filters). */
  query: QueryOf<O>;
  ctx: RequestContext;
}

/** An operation of the table and what answers it (the app serves each over HTTP). */
export interface OperationHandler {
  op: Operation;
  answer(call: Call<Operation>): unknown;
}

/** `op` answered by `answer`, typed by the operation (its path parameters, its query). */
function on<O extends Operation>(op: O, answer: (call: Call<O>) => unknown): OperationHandler {
  // `answer` is a method of OperationHandler, so checked bivariantly: the app builds each call from
  // `op` itself, which makes it a Call<O>.
  return { op, answer };
}

/**
 * Each operation of the contract's table (but the service's own: its description, probes and
 * metrics) and the method of `service` that answers it. An operation added to the table is served
 * once its line is here; the app refuses to start while one is missing.
 */
export function operationHandlers(service: EdgeService): OperationHandler[] {
  const { https, tls, routes, modules, tlsIpRestriction, audit } = OPERATIONS;
  const edges = (
    [
      ["https", https],
      ["tls", tls],
    ] as const
  ).flatMap(([kind, ops]) => [
    on(ops.create, ({ body, ctx }) => service.createEdge(kind, body, ctx)),
    on(ops.list, ({ page, ctx }) => service.listEdges(kind, page, ctx)),
    on(ops.get, ({ params, ctx }) => service.getEdge(kind, params.id, ctx)),
    on(ops.delete, ({ params, ctx }) => service.deleteEdge(kind, params.id, ctx)),
  ]);
  const routeModules = ROUTE_MODULE_NAMES.flatMap((m) => [
    on(modules[m].put, ({ params, body, ctx }) => service.putModule(params.edge_id, params.id, m, body, ctx)),
    on(modules[m].get, ({ params, ctx }) => service.getModule(params.edge_id, params.id, m, ctx)),
    on(modules[m].delete, ({ params, ctx }) => service.deleteModule(params.edge_id, params.id, m, ctx)),
  ]);
  return [
    ...edges,
    on(routes.create, ({ params, body, ctx }) => service.createRoute(params.edge_id, body, ctx)),
    on(routes.list, ({ params, query, ctx }) => service.listRoutes(params.edge_id, query, ctx)),
    on(routes.get, ({ params, ctx }) => service.getRoute(params.edge_id, params.id, ctx)),
    on(routes.update, ({ params, body, ctx }) => service.updateRoute(params.edge_id, params.id, body, ctx)),
    on(routes.delete, ({ params, ctx }) => service.deleteRoute(params.edge_id, params.id, ctx)),
    ...routeModules,
    on(tlsIpRestriction.put, ({ params, body, ctx }) => service.putTlsIpRestriction(params.id, body, ctx)),
    on(tlsIpRestriction.get, ({ params, ctx }) => service.getTlsIpRestriction(params.id, ctx)),
    on(tlsIpRestriction.delete, ({ params, ctx }) => service.deleteTlsIpRestriction(params.id, ctx)),
    on(audit.list, ({ query, ctx }) => service.listAuditEvents(query, ctx)),
  ];
}

// ---------------------------------------------------------------- rendering and rules

function renderIpPolicy(c: StoredIpPolicy, ctx: RequestContext) {
  return ipPolicyMapping.render(c, { baseUrl: ctx.baseUrl, routeId: "", samlCertificatePem: "" });
}

/**
 * The route resource of a stored route: its fields, each module rendered (null when unconfigured),
 * its secrets redacted for an asker that may not read them.
 */
function renderRoute(row: RouteRow, samlCertificatePem: string, ctx: RequestContext): Route {
  const route = renderRouteWhole(row, samlCertificatePem, ctx);
  return ctx.redactSecrets ? redactSecrets(route) : route;
}

function renderRouteWhole(row: RouteRow, samlCertificatePem: string, ctx: RequestContext): Route {
  const render = { baseUrl: ctx.baseUrl, routeId: row.id, samlCertificatePem };
  const module = <M extends RouteModuleName>(name: M) => {
    const config = row.modules[name];
    return config === undefined ? null : renderModule(name, config, render);
  };
  return {
    id: row.id,
    edge_id: row.edge_id,
    created_at: row.created_at,
    uri: `${ctx.baseUrl}/edges/https/${row.edge_id}/routes/${row.id}`,
    match_type: row.match_type,
    match: row.match,
    description: row.description,
    metadata: row.metadata,
    backend: module("backend"),
    ip_restriction: module("ip_restriction"),
    circuit_breaker: module("circuit_breaker"),
    compression: module("compression"),
    request_headers: module("request_headers"),
    response_headers: module("response_headers"),
    webhook_verification: module("webhook_verification"),
    oauth: module("oauth"),
    saml: module("saml"),
    oidc: module("oidc"),
    websocket_tcp_converter: module("websocket_tcp_converter"),
    user_agent_filter: module("user_agent_filter"),
    traffic_policy: module("traffic_policy"),
  };
}

/** Module fields of a parsed create or update body. */
type ModuleFields = { [M in RouteModuleName]?: ModuleRequest<M> | null };

/** The non-null module objects of a create or update body. */
function pickModules(body: ModuleFields): ModuleConfigs {
  return Object.fromEntries(ROUTE_MODULE_NAMES.flatMap((n) => (body[n] != null ? [[n, body[n]]] : [])));
}

/** The contract's one-auth-module rule, on the modules a write leaves the route with. */
function assertOneAuthModule(resulting: ModuleConfigs, written: ModuleConfigs): void {
  const problem = authModuleProblem(Object.keys(resulting), Object.keys(written));
  if (problem) throw ApiError.invalid([problem]);
}

/** Runs a write of `route`; a clash with another route's (match_type, match) becomes the API's 409. */
async function uniqueMatch<T>(
  route: Pick<RouteRow, "match_type" | "match">,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (e) {
    throw e instanceof UniqueViolation ? duplicateMatch(route.match_type, route.match) : e;
  }
}

/** Runs an insert under an edge; the edge deleted meanwhile (another replica) is the API's 404. */
async function edgeStillThere<T>(edgeId: string, write: () => Promise<T>, label = "HTTPS edge"): Promise<T> {
  try {
    return await write();
  } catch (e) {
    throw e instanceof ParentMissing ? ApiError.notFound(`${label} ${edgeId}`) : e;
  }
}

/** Hostports compare in their one spelling (the contract's canonicalHostport). */
const hostportKey = canonicalHostport;

function hostportTaken(hostports: string[], edgeLabel: string, edgeId: string): ApiError {
  return new ApiError(
    "conflict",
    `hostport ${hostports.join(", ")} already belongs to ${edgeLabel} ${edgeId} (a hostport is served by one edge at a time)`,
    {
      problems: [{ field: "hostports", msg: `already belongs to ${edgeLabel} ${edgeId}` }],
      objectId: edgeId,
    },
  );
}

function duplicateMatch(matchType: string, match: string): ApiError {
  return new ApiError(
    "conflict",
    `the edge already has a route with match_type "${matchType}" and match "${match}"`,
    {
      problems: [{ field: "match", msg: "duplicates another route of this edge" }],
    },
  );
}

const now = () => new Date().toISOString();
