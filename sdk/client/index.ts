/**
 * Typed client of the edge API: one method per operation, responses validated against the
 * contract, failures raised as EdgeApiError. Bodies are sent exactly as given: header-map keys
 * are never case-converted.
 */
import { createHash } from "node:crypto";
import {
  type AuditEvent,
  type AuditEventList,
  type EdgeCreate,
  errorBodySchema,
  fillPath,
  type HttpsEdge,
  type HttpsEdgeList,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_PRIOR_KEY_HEADER,
  type ModuleRequestInput,
  type ModuleResponse,
  type Operation,
  OPERATION_ID_HEADER,
  OPERATIONS as OPS,
  type PathParams,
  type Problem,
  type QueryOptionsOf,
  queryString,
  REPLAYED_HEADER,
  REPLAYED_VALUES,
  type Replayed,
  type Route,
  type RouteCreate,
  type RouteList,
  type RouteModuleName,
  type RouteUpdate,
  type SuccessOf,
  type TlsEdge,
  type TlsEdgeList,
  type TlsIpRestriction,
  type TlsIpRestrictionMutate,
} from "../contract";
import type { SendOptions, Transport } from "../transport";

/** An error answered by the service (or a response that breaks the contract). */
export class EdgeApiError extends Error {
  readonly status: number;
  readonly errorCode: string;
  readonly msg: string;
  /** JSON path of the field at fault, when one is. */
  readonly field?: string;
  readonly problems: Problem[];
  readonly operationId?: string;

  constructor(init: {
    status: number;
    errorCode: string;
    msg: string;
    field?: string;
    problems?: Problem[];
    operationId?: string;
    operation: string;
  }) {
    const where = init.field ? ` (field ${init.field})` : "";
    const op = init.operationId ? ` [operation ${init.operationId}]` : "";
    super(`${init.operation} failed with ${init.status} ${init.errorCode}: ${init.msg}${where}${op}`);
    this.name = "EdgeApiError";
    this.status = init.status;
    this.errorCode = init.errorCode;
    this.msg = init.msg;
    this.field = init.field;
    this.problems = init.problems ?? (init.field ? [{ field: init.field, msg: init.msg }] : []);
    this.operationId = init.operationId;
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }
  get isConflict(): boolean {
    return this.status === 409;
  }
  get isUnauthorized(): boolean {
    return this.status === 401;
  }
  /**
   * A key of this create was used before with another body (see `CreateOptions.keyedOn`): its
   * `Idempotency-Key` (`true`), or its `Idempotency-Prior-Key` (`prior`); else undefined.
   */
  get keyReused(): Replayed | undefined {
    if (this.status !== 400) return undefined;
    if (this.field === IDEMPOTENCY_KEY_HEADER) return "true";
    return this.field === IDEMPOTENCY_PRIOR_KEY_HEADER ? "prior" : undefined;
  }
}

/** `limit` and `beforeId` of a list operation (derived from the contract's page query schema). */
export type PageOptions = QueryOptionsOf<typeof OPS.https.list>;

/**
 * The filters of the audit trail (`GET /audit_events`), and its page: `objectId` (a TLS IP
 * restriction's id is its edge's), `since` (RFC 3339), `key` (an API key's name); derived from
 * the contract's audit query schema.
 */
export type AuditFilterOptions = QueryOptionsOf<typeof OPS.audit.list>;

/** How a create is made exactly once (see the service's `Idempotency-Key`). */
export interface CreateOptions {
  /** The key, as is. */
  idempotencyKey?: string;
  /**
   * Who asks for this object, stably (a Pulumi resource: its stack and URN): the key is derived
   * from it and the request (method, path, body), so the same request from the same asker carries
   * the same key in every run, and a create whose answer was lost is answered by the object it
   * made, even by a later run.
   */
  identity?: string;
  /**
   * With `identity`: an identity an earlier create of this request may have used instead (sent as
   * `Idempotency-Prior-Key`): the object it made is answered, and takes this create's key.
   */
  priorIdentity?: string;
  /**
   * With `identity`: the part of the body that names the object (a route's match), when the key
   * should stay the same though the rest of the body changes; default the whole body. The
   * service still compares whole requests: the same key with another body is a 400 naming
   * `Idempotency-Key`, which tells the asker that its earlier create made that object.
   */
  keyedOn?: unknown;
}

/**
 * The `Idempotency-Key` of a request asked for by `identity`: the same for the same identity and
 * request, different for any other (a replacement with another body gets a new object).
 */
export function idempotencyKeyFor(identity: string, method: string, path: string, body: string): string {
  const digest = createHash("sha256").update([identity, method, path, body].join("\n")).digest("base64url");
  return `pe1.${digest}`;
}

/** Every item of a paged list: the next page is the one before the last item seen. */
async function* allPages<P extends { next_page_uri: string | null }, T extends { id: string }>(
  fetch: (beforeId: string | undefined) => Promise<P>,
  items: (page: P) => T[],
): AsyncGenerator<T> {
  let beforeId: string | undefined;
  for (;;) {
    const page = await fetch(beforeId);
    const got = items(page);
    yield* got;
    const last = got.at(-1);
    if (!page.next_page_uri || last === undefined) return;
    beforeId = last.id;
  }
}

const replayed = new WeakMap<object, Replayed>();
/**
 * Whether a create's answer is an object an earlier create made (not a new one), and by which of
 * its keys: `true`, its `Idempotency-Key`; `prior`, its `Idempotency-Prior-Key`.
 */
export const replayedBy = (answer: object): Replayed | undefined => replayed.get(answer);
export const wasReplayed = (answer: object): boolean => replayed.has(answer);

export class EdgeClient {
  constructor(
    readonly transport: Transport,
    private readonly options: SendOptions = {},
  ) {}

  private written?: string;
  /**
   * The `Request-Id` of this client's last change that the service made (its audit event names
   * it): a create answered by an earlier create's object, or a failure, leaves it as it was.
   */
  get lastWrite(): string | undefined {
    return this.written;
  }

  /** This client, its calls telling `options` about their retries. */
  with(options: SendOptions): EdgeClient {
    return new EdgeClient(this.transport, { ...this.options, ...options });
  }

  // ---------------------------------------------------------------- HTTPS edges
  createHttpsEdge(body: EdgeCreate = {}, create?: CreateOptions): Promise<HttpsEdge> {
    return this.request(OPS.https.create, {}, { body, create });
  }
  getHttpsEdge(id: string): Promise<HttpsEdge> {
    return this.request(OPS.https.get, { id });
  }
  listHttpsEdges(page?: PageOptions): Promise<HttpsEdgeList> {
    return this.request(OPS.https.list, {}, { query: page });
  }
  /** Every HTTPS edge (each with all its routes), following next_page_uri. */
  allHttpsEdges(): AsyncGenerator<HttpsEdge> {
    return allPages(
      (beforeId) => this.listHttpsEdges({ beforeId }),
      (page) => page.https_edges,
    );
  }
  deleteHttpsEdge(id: string): Promise<void> {
    return this.request(OPS.https.delete, { id });
  }

  // ---------------------------------------------------------------- TLS edges
  createTlsEdge(body: EdgeCreate = {}, create?: CreateOptions): Promise<TlsEdge> {
    return this.request(OPS.tls.create, {}, { body, create });
  }
  getTlsEdge(id: string): Promise<TlsEdge> {
    return this.request(OPS.tls.get, { id });
  }
  listTlsEdges(page?: PageOptions): Promise<TlsEdgeList> {
    return this.request(OPS.tls.list, {}, { query: page });
  }
  /** Every TLS edge (each with its IP restriction), following next_page_uri. */
  allTlsEdges(): AsyncGenerator<TlsEdge> {
    return allPages(
      (beforeId) => this.listTlsEdges({ beforeId }),
      (page) => page.tls_edges,
    );
  }
  deleteTlsEdge(id: string): Promise<void> {
    return this.request(OPS.tls.delete, { id });
  }

  // ---------------------------------------------------------------- routes
  createRoute(edgeId: string, body: RouteCreate, create?: CreateOptions): Promise<Route> {
    return this.request(OPS.routes.create, { edge_id: edgeId }, { body, create });
  }
  getRoute(edgeId: string, id: string): Promise<Route> {
    return this.request(OPS.routes.get, { edge_id: edgeId, id });
  }
  /** A page of an edge's routes; takes whatever the table's query schema of the operation does. */
  listRoutes(edgeId: string, query?: QueryOptionsOf<typeof OPS.routes.list>): Promise<RouteList> {
    return this.request(OPS.routes.list, { edge_id: edgeId }, { query });
  }
  /** Every route of an edge, following next_page_uri. */
  allRoutes(edgeId: string): AsyncGenerator<Route> {
    return allPages(
      (beforeId) => this.listRoutes(edgeId, { beforeId }),
      (page) => page.routes,
    );
  }
  /** PATCH: a present module replaces that module whole; absent modules are untouched. */
  updateRoute(edgeId: string, id: string, body: RouteUpdate): Promise<Route> {
    return this.request(OPS.routes.update, { edge_id: edgeId, id }, { body });
  }
  deleteRoute(edgeId: string, id: string): Promise<void> {
    return this.request(OPS.routes.delete, { edge_id: edgeId, id });
  }

  // ---------------------------------------------------------------- route modules
  putRouteModule<M extends RouteModuleName>(
    edgeId: string,
    id: string,
    module: M,
    body: ModuleRequestInput<M>,
  ): Promise<ModuleResponse<M>> {
    // The table's entry of a module named by a type parameter: its answer is that module's.
    return this.request(OPS.modules[module].put, { edge_id: edgeId, id }, { body }) as Promise<
      ModuleResponse<M>
    >;
  }
  getRouteModule<M extends RouteModuleName>(
    edgeId: string,
    id: string,
    module: M,
  ): Promise<ModuleResponse<M>> {
    return this.request(OPS.modules[module].get, { edge_id: edgeId, id }) as Promise<ModuleResponse<M>>;
  }
  deleteRouteModule(edgeId: string, id: string, module: RouteModuleName): Promise<void> {
    return this.request(OPS.modules[module].delete, { edge_id: edgeId, id });
  }

  // ---------------------------------------------------------------- TLS IP restriction
  /**
   * Replaces the module; with `create`, creates it instead: only where none is configured (else a
   * 409), exactly once per key.
   */
  putTlsIpRestriction(
    edgeId: string,
    body: TlsIpRestrictionMutate,
    create?: CreateOptions,
  ): Promise<TlsIpRestriction> {
    return this.request(OPS.tlsIpRestriction.put, { id: edgeId }, { body, create });
  }
  getTlsIpRestriction(edgeId: string): Promise<TlsIpRestriction> {
    return this.request(OPS.tlsIpRestriction.get, { id: edgeId });
  }
  deleteTlsIpRestriction(edgeId: string): Promise<void> {
    return this.request(OPS.tlsIpRestriction.delete, { id: edgeId });
  }

  // ---------------------------------------------------------------- audit trail
  /** A page of the audit trail, newest first (a service older than the trail answers 404). */
  listAuditEvents(filter: AuditFilterOptions = {}): Promise<AuditEventList> {
    return this.request(OPS.audit.list, {}, { query: filter });
  }
  /** Every event that matches `filter`, newest first, following next_page_uri. */
  allAuditEvents(filter: Omit<AuditFilterOptions, "beforeId"> = {}): AsyncGenerator<AuditEvent> {
    return allPages(
      (beforeId) => this.listAuditEvents({ ...filter, beforeId }),
      (page) => page.audit_events,
    );
  }

  // ---------------------------------------------------------------- plumbing
  /**
   * One operation of the contract's table: its method and path, the body sent exactly as given,
   * the answer parsed with the operation's own response schema.
   */
  async request<O extends Operation>(
    op: O,
    params: Record<PathParams<O["path"]>, string>,
    opts: { body?: unknown; query?: QueryOptionsOf<O>; create?: CreateOptions } = {},
  ): Promise<SuccessOf<O>> {
    const path = fillPath(op.path, params) + queryString(op, opts.query);
    const operation = `${op.method} ${path}`;
    const text = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> =
      text === undefined
        ? { accept: "application/json" }
        : { "content-type": "application/json", accept: "application/json" };
    const create = opts.create;
    const keyed = create?.keyedOn === undefined ? (text ?? "") : JSON.stringify(create.keyedOn);
    const keyOf = (identity: string | undefined) =>
      identity === undefined ? undefined : idempotencyKeyFor(identity, op.method, path, keyed);
    const key = create?.idempotencyKey ?? keyOf(create?.identity);
    if (key !== undefined) {
      headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()] = key;
      const prior = keyOf(create?.priorIdentity);
      if (prior !== undefined && prior !== key) headers[IDEMPOTENCY_PRIOR_KEY_HEADER.toLowerCase()] = prior;
    }
    const request = new Request(this.transport.baseUrl + path, { method: op.method, headers, body: text });
    const response = await this.transport.send(request, this.options);
    const operationId = response.headers.get(OPERATION_ID_HEADER) ?? undefined;
    const answer = await response.text();
    if (!response.ok) {
      const parsed = errorBodySchema.safeParse(safeJson(answer));
      if (parsed.success) {
        const { details } = parsed.data;
        throw new EdgeApiError({
          status: response.status,
          errorCode: parsed.data.error_code,
          msg: parsed.data.msg,
          field: details.field,
          problems: details.problems,
          operationId: details.operation_id ?? operationId,
          operation,
        });
      }
      throw new EdgeApiError({
        status: response.status,
        errorCode: "HTTP_" + response.status,
        msg: answer.slice(0, 500),
        operationId,
        operation,
      });
    }
    const success = op.success;
    if (success.status === 204) {
      if (operationId !== undefined) this.written = operationId; // a DELETE: a change
      return undefined as SuccessOf<O>;
    }
    const parsed = success.schema.safeParse(safeJson(answer));
    if (!parsed.success) {
      throw new EdgeApiError({
        status: response.status,
        errorCode: "INVALID_RESPONSE",
        msg: `the response does not match the contract: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        operationId,
        operation,
      });
    }
    const data: unknown = parsed.data;
    const how = REPLAYED_VALUES.find((v) => v === response.headers.get(REPLAYED_HEADER));
    if (how !== undefined && typeof data === "object" && data !== null) replayed.set(data, how);
    if (op.method !== "GET" && how === undefined && operationId !== undefined) this.written = operationId;
    return data as SuccessOf<O>;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
