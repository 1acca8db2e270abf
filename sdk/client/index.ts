/**
 * Typed client of the edge API: one method per operation, responses validated against the
 * contract, failures raised as EdgeApiError. Bodies are sent exactly as given: header-map keys
 * are never case-converted.
 */
import {
  type AuditEvent,
  errorBodySchema,
  fillPath,
  type HttpsEdge,
  IDEMPOTENCY_KEY_HEADER,
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
  type Route,
  type RouteModuleName,
  type SuccessOf,
  type TlsEdge,
} from "../contract";
import type { SendOptions, Transport } from "../transport";
import { type CreateOptions, idempotencyKeyFor } from "./create";
import { EdgeOperations } from "./operations";

export { type CreateOptions, idempotencyKeyFor } from "./create";

/** An error answered by the service (or a response that breaks the contract). */
export class EdgeApiError extends Error {
  readonly status: number;
  readonly errorCode: string;
  readonly msg: string;
  /** JSON path of the field at fault, when one is. */
  readonly field?: string;
  readonly problems: Problem[];
  readonly operationId?: string;
  /**
   * The object the error is about (`details.object_id`): the edge holding a hostport (a 409), or
   * the object a reused `Idempotency-Key` made (see `keyReused`).
   */
  readonly objectId?: string;

  constructor(init: {
    status: number;
    errorCode: string;
    msg: string;
    field?: string;
    problems?: Problem[];
    operationId?: string;
    objectId?: string;
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
    this.objectId = init.objectId;
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
  /** This create's `Idempotency-Key` was used before with another body (see `CreateOptions.keyedOn`). */
  get keyReused(): boolean {
    return this.status === 400 && this.field === IDEMPOTENCY_KEY_HEADER;
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

/**
 * The mark a create's answer carries when it is an object an earlier create with its
 * `Idempotency-Key` made (not a new one): a property of the answer itself, hidden from JSON.
 */
const REPLAYED = Symbol("edge.replayed");
/** Whether a create's answer is an object an earlier create with its key made (see REPLAYED). */
export const wasReplayed = (answer: object): boolean => REPLAYED in answer;

/**
 * The client: every operation of the table as a method (./operations, generated from it), and
 * what spans several calls (every page of a list; a route module by name).
 */
export class EdgeClient extends EdgeOperations {
  constructor(
    readonly transport: Transport,
    private readonly options: SendOptions = {},
  ) {
    super();
  }

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
  /** Every HTTPS edge (each with all its routes), following next_page_uri. */
  allHttpsEdges(): AsyncGenerator<HttpsEdge> {
    return allPages(
      (beforeId) => this.listHttpsEdges({ beforeId }),
      (page) => page.https_edges,
    );
  }

  // ---------------------------------------------------------------- TLS edges
  /** Every TLS edge (each with its IP restriction), following next_page_uri. */
  allTlsEdges(): AsyncGenerator<TlsEdge> {
    return allPages(
      (beforeId) => this.listTlsEdges({ beforeId }),
      (page) => page.tls_edges,
    );
  }

  // ---------------------------------------------------------------- routes
  /** Every route of an edge, following next_page_uri. */
  allRoutes(edgeId: string): AsyncGenerator<Route> {
    return allPages(
      (beforeId) => this.listRoutes(edgeId, { beforeId }),
      (page) => page.routes,
    );
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

  // ---------------------------------------------------------------- audit trail
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
    if (key !== undefined) headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()] = key;
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
          objectId: details.object_id,
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
    const replayed = response.headers.get(REPLAYED_HEADER) === "true";
    if (replayed && typeof data === "object" && data !== null) {
      Object.defineProperty(data, REPLAYED, { value: true, enumerable: false });
    }
    if (op.method !== "GET" && !replayed && operationId !== undefined) this.written = operationId;
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
