/**
 * Typed client of the edge API: one method per operation, responses validated against the
 * contract, failures raised as EdgeApiError. Bodies are sent exactly as given: header-map keys
 * are never case-converted.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import {
  type EdgeCreate,
  errorBodySchema,
  type HttpsEdge,
  type HttpsEdgeList,
  httpsEdgeListSchema,
  httpsEdgeSchema,
  type ModuleRequestInput,
  type ModuleResponse,
  OPERATION_ID_HEADER,
  type Problem,
  REPLAYED_HEADER,
  ROUTE_MODULES,
  type Route,
  type RouteCreate,
  type RouteList,
  type RouteModuleName,
  type RouteUpdate,
  routeListSchema,
  routeSchema,
  type TlsEdge,
  type TlsEdgeList,
  type TlsIpRestriction,
  type TlsIpRestrictionMutate,
  tlsEdgeListSchema,
  tlsEdgeSchema,
  tlsIpRestrictionSchema,
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
  /** The Idempotency-Key of this create was used before with another body (see `CreateOptions.keyedOn`). */
  get isKeyReused(): boolean {
    return this.status === 400 && this.field === "Idempotency-Key";
  }
}

export interface PageOptions {
  limit?: number;
  beforeId?: string;
}

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

const replayed = new WeakSet<object>();
/** Whether a create's answer is the object an earlier create with the same key made (not a new one). */
export const wasReplayed = (answer: object): boolean => replayed.has(answer);

const seg = encodeURIComponent;

export class EdgeClient {
  constructor(
    readonly transport: Transport,
    private readonly options: SendOptions = {},
  ) {}

  /** This client, its calls telling `options` about their retries. */
  with(options: SendOptions): EdgeClient {
    return new EdgeClient(this.transport, { ...this.options, ...options });
  }

  // ---------------------------------------------------------------- HTTPS edges
  createHttpsEdge(body: EdgeCreate = {}, create?: CreateOptions): Promise<HttpsEdge> {
    return this.call("POST", "/edges/https", httpsEdgeSchema, body, create);
  }
  getHttpsEdge(id: string): Promise<HttpsEdge> {
    return this.call("GET", `/edges/https/${seg(id)}`, httpsEdgeSchema);
  }
  listHttpsEdges(page?: PageOptions): Promise<HttpsEdgeList> {
    return this.call("GET", `/edges/https${query(page)}`, httpsEdgeListSchema);
  }
  deleteHttpsEdge(id: string): Promise<void> {
    return this.call("DELETE", `/edges/https/${seg(id)}`);
  }

  // ---------------------------------------------------------------- TLS edges
  createTlsEdge(body: EdgeCreate = {}, create?: CreateOptions): Promise<TlsEdge> {
    return this.call("POST", "/edges/tls", tlsEdgeSchema, body, create);
  }
  getTlsEdge(id: string): Promise<TlsEdge> {
    return this.call("GET", `/edges/tls/${seg(id)}`, tlsEdgeSchema);
  }
  listTlsEdges(page?: PageOptions): Promise<TlsEdgeList> {
    return this.call("GET", `/edges/tls${query(page)}`, tlsEdgeListSchema);
  }
  deleteTlsEdge(id: string): Promise<void> {
    return this.call("DELETE", `/edges/tls/${seg(id)}`);
  }

  // ---------------------------------------------------------------- routes
  createRoute(edgeId: string, body: RouteCreate, create?: CreateOptions): Promise<Route> {
    return this.call("POST", routesPath(edgeId), routeSchema, body, create);
  }
  getRoute(edgeId: string, id: string): Promise<Route> {
    return this.call("GET", routePath(edgeId, id), routeSchema);
  }
  listRoutes(edgeId: string, page?: PageOptions): Promise<RouteList> {
    return this.call("GET", `${routesPath(edgeId)}${query(page)}`, routeListSchema);
  }
  /** Every route of an edge, following next_page_uri. */
  async *allRoutes(edgeId: string): AsyncGenerator<Route> {
    let beforeId: string | undefined;
    for (;;) {
      const page = await this.listRoutes(edgeId, { beforeId });
      yield* page.routes;
      if (!page.next_page_uri || page.routes.length === 0) return;
      beforeId = page.routes[page.routes.length - 1]!.id;
    }
  }
  /** PATCH: a present module replaces that module whole; absent modules are untouched. */
  updateRoute(edgeId: string, id: string, body: RouteUpdate): Promise<Route> {
    return this.call("PATCH", routePath(edgeId, id), routeSchema, body);
  }
  deleteRoute(edgeId: string, id: string): Promise<void> {
    return this.call("DELETE", routePath(edgeId, id));
  }

  // ---------------------------------------------------------------- route modules
  putRouteModule<M extends RouteModuleName>(
    edgeId: string,
    id: string,
    module: M,
    body: ModuleRequestInput<M>,
  ): Promise<ModuleResponse<M>> {
    return this.call(
      "PUT",
      `${routePath(edgeId, id)}/${module}`,
      ROUTE_MODULES[module].response,
      body,
    ) as Promise<ModuleResponse<M>>;
  }
  getRouteModule<M extends RouteModuleName>(
    edgeId: string,
    id: string,
    module: M,
  ): Promise<ModuleResponse<M>> {
    return this.call("GET", `${routePath(edgeId, id)}/${module}`, ROUTE_MODULES[module].response) as Promise<
      ModuleResponse<M>
    >;
  }
  deleteRouteModule(edgeId: string, id: string, module: RouteModuleName): Promise<void> {
    return this.call("DELETE", `${routePath(edgeId, id)}/${module}`);
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
    return this.call("PUT", `/edges/tls/${seg(edgeId)}/ip_restriction`, tlsIpRestrictionSchema, body, create);
  }
  getTlsIpRestriction(edgeId: string): Promise<TlsIpRestriction> {
    return this.call("GET", `/edges/tls/${seg(edgeId)}/ip_restriction`, tlsIpRestrictionSchema);
  }
  deleteTlsIpRestriction(edgeId: string): Promise<void> {
    return this.call("DELETE", `/edges/tls/${seg(edgeId)}/ip_restriction`);
  }

  // ---------------------------------------------------------------- plumbing
  private async call(method: string, path: string): Promise<void>;
  private async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    body?: unknown,
    create?: CreateOptions,
  ): Promise<z.output<S>>;
  private async call(
    method: string,
    path: string,
    schema?: z.ZodType,
    body?: unknown,
    create?: CreateOptions,
  ): Promise<unknown> {
    const operation = `${method} ${path}`;
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> =
      text === undefined
        ? { accept: "application/json" }
        : { "content-type": "application/json", accept: "application/json" };
    const key =
      create?.idempotencyKey ??
      (create?.identity === undefined
        ? undefined
        : idempotencyKeyFor(
            create.identity,
            method,
            path,
            create.keyedOn === undefined ? (text ?? "") : JSON.stringify(create.keyedOn),
          ));
    if (key !== undefined) headers["idempotency-key"] = key;
    const request = new Request(this.transport.baseUrl + path, { method, headers, body: text });
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
    if (!schema) return undefined;
    const parsed = schema.safeParse(safeJson(answer));
    if (!parsed.success) {
      throw new EdgeApiError({
        status: response.status,
        errorCode: "INVALID_RESPONSE",
        msg: `the response does not match the contract: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        operationId,
        operation,
      });
    }
    if (response.headers.get(REPLAYED_HEADER) === "true" && typeof parsed.data === "object" && parsed.data) {
      replayed.add(parsed.data);
    }
    return parsed.data;
  }
}

const routesPath = (edgeId: string) => `/edges/https/${seg(edgeId)}/routes`;
const routePath = (edgeId: string, id: string) => `${routesPath(edgeId)}/${seg(id)}`;

function query(page?: PageOptions): string {
  const q = new URLSearchParams();
  if (page?.limit !== undefined) q.set("limit", String(page.limit));
  if (page?.beforeId !== undefined) q.set("before_id", page.beforeId);
  const s = q.toString();
  return s ? `?${s}` : "";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
