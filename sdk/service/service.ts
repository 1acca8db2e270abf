/**
 * The API's behaviour, independent of HTTP: validation against the contract, the rules of
 * gaps.md, each mutation in one transaction, rendering of stored rows into response shapes.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import {
  authModuleProblem,
  edgeCreateSchema,
  type HttpsEdge,
  type HttpsEdgeList,
  isRouteModuleName,
  issuesToProblems,
  NUM_BUCKETS_UNSET,
  PAGE_LIMIT_DEFAULT,
  type ModuleBodySchema,
  moduleBodyForm,
  type PageQuery,
  type PathIds,
  pathEchoProblems,
  ROUTE_MODULE_BODIES,
  ROUTE_MODULE_NAMES,
  type Route,
  type RouteList,
  type RouteModuleName,
  routeCreateBodySchema,
  routeUpdateSchema,
  type TlsEdge,
  type TlsEdgeList,
  type TlsIpRestriction,
  tlsIpRestrictionBodySchema,
  unwrapModule,
} from "../contract";
import { ApiError } from "./errors";
import { newId } from "./ids";
import {
  type EdgeKind,
  type EdgeRow,
  type ModuleConfigs,
  type RouteRow,
  type Store,
  UniqueViolation,
} from "./store";
import { createSelfSignedCertificate } from "./x509";

/** Where the caller reached the service: every Ref and uri is built from it. */
export interface RequestContext {
  baseUrl: string;
  /**
   * `Idempotency-Key` of a create: a create repeated with the same key (a client retrying after a
   * lost answer) answers what the first one created, and creates nothing more.
   */
  idempotencyKey?: string;
}

/** How long an idempotency key is remembered. */
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Parses a request body with its contract schema; identifiers of the path that the body repeats
 * (gaps.md "Compatibility") must equal the path's.
 */
function parse<S extends z.ZodType>(schema: S, body: unknown, path: PathIds = {}): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw ApiError.invalid(issuesToProblems(result.error.issues));
  assertPathEcho(result.data as Record<string, unknown>, path);
  return result.data;
}

function assertPathEcho(body: Readonly<Record<string, unknown>>, path: PathIds): void {
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

export class EdgeService {
  constructor(readonly store: Store) {}

  // ------------------------------------------------------------------ edges

  createEdge(kind: "https", body: unknown, ctx: RequestContext): HttpsEdge;
  createEdge(kind: "tls", body: unknown, ctx: RequestContext): TlsEdge;
  createEdge(kind: EdgeKind, body: unknown, ctx: RequestContext): HttpsEdge | TlsEdge {
    const input = parse(edgeCreateSchema, body);
    const row = { id: newId(kind === "https" ? "httpsEdge" : "tlsEdge"), kind, created_at: now(), ...input };
    return this.store.write(() =>
      this.once(
        ctx,
        () => `POST /edges/${kind} ${JSON.stringify(body)}`,
        () => {
          this.store.insertEdge(row);
          return this.renderEdge(this.store.getEdge(kind, row.id)!, ctx);
        },
      ),
    );
  }

  getEdge(kind: "https", id: string, ctx: RequestContext): HttpsEdge;
  getEdge(kind: "tls", id: string, ctx: RequestContext): TlsEdge;
  getEdge(kind: EdgeKind, id: string, ctx: RequestContext): HttpsEdge | TlsEdge {
    return this.store.read(() => this.renderEdge(this.requireEdge(kind, id), ctx));
  }

  listEdges(kind: "https", q: PageQuery, ctx: RequestContext): HttpsEdgeList;
  listEdges(kind: "tls", q: PageQuery, ctx: RequestContext): TlsEdgeList;
  listEdges(kind: EdgeKind, q: PageQuery, ctx: RequestContext): HttpsEdgeList | TlsEdgeList {
    const { limit, beforeSeq } = this.page(q, (id) => this.store.getEdge(kind, id)?.seq);
    return this.store.read(() => {
      const rows = this.store.listEdges(kind, limit + 1, beforeSeq);
      const items = rows.slice(0, limit).map((r) => this.renderEdge(r, ctx));
      const uri = `${ctx.baseUrl}/edges/${kind}`;
      const next =
        rows.length > limit ? `${uri}?limit=${limit}&before_id=${items[items.length - 1]!.id}` : null;
      return kind === "https"
        ? { https_edges: items as HttpsEdge[], uri, next_page_uri: next }
        : { tls_edges: items as TlsEdge[], uri, next_page_uri: next };
    });
  }

  deleteEdge(kind: EdgeKind, id: string): void {
    this.store.write(() => {
      if (!this.store.deleteEdge(kind, id)) throw ApiError.notFound(`${EDGE_LABEL[kind]} ${id}`);
    });
  }

  // ------------------------------------------------------------------ routes

  createRoute(edgeId: string, body: unknown, ctx: RequestContext): Route {
    const input = parse(routeCreateBodySchema, body, { edge_id: edgeId });
    const { match_type, match, description, metadata } = input;
    const modules = pickModules(input); // one auth module at most: the schema's rule
    const id = newId("route");
    return this.store.write(() =>
      this.once(
        ctx,
        () => `POST /edges/https/${edgeId}/routes ${JSON.stringify(body)}`,
        () => {
          this.requireEdge("https", edgeId);
          const row = {
            id,
            edge_id: edgeId,
            match_type,
            match,
            description,
            metadata,
            created_at: now(),
            modules,
          };
          const seq = uniqueMatch(row, () => this.store.insertRoute(row));
          this.ensureSamlKey(id, modules);
          // Rendered from what was just written: the same transaction, nothing to read back.
          return this.renderRoutes([{ seq, ...row }], ctx)[0]!;
        },
      ),
    );
  }

  getRoute(edgeId: string, id: string, ctx: RequestContext): Route {
    return this.store.read(() => this.renderRoutes([this.requireRoute(edgeId, id)], ctx)[0]!);
  }

  listRoutes(edgeId: string, q: PageQuery, ctx: RequestContext): RouteList {
    const { limit, beforeSeq } = this.page(q, (id) => this.store.getRoute(edgeId, id)?.seq);
    return this.store.read(() => {
      this.requireEdge("https", edgeId);
      const rows = this.store.listRoutes(edgeId, limit + 1, beforeSeq);
      const routes = this.renderRoutes(rows.slice(0, limit), ctx);
      const uri = `${ctx.baseUrl}/edges/https/${edgeId}/routes`;
      const next =
        rows.length > limit ? `${uri}?limit=${limit}&before_id=${routes[routes.length - 1]!.id}` : null;
      return { routes, uri, next_page_uri: next };
    });
  }

  /**
   * PATCH: present fields replace, a present module replaces that module whole, absent or
   * null modules are untouched. The route is read and written in one write transaction, so
   * concurrent PATCHes of different modules of one route never lose each other's change.
   */
  updateRoute(edgeId: string, id: string, body: unknown, ctx: RequestContext): Route {
    const patch = parse(routeUpdateSchema, body, { edge_id: edgeId, id });
    const modules = pickModules(patch);
    return this.store.write(() => {
      const row = this.requireRoute(edgeId, id);
      const next: RouteRow = {
        ...row,
        match_type: patch.match_type ?? row.match_type,
        match: patch.match ?? row.match,
        description: patch.description ?? row.description,
        metadata: patch.metadata ?? row.metadata,
        modules: { ...row.modules, ...modules },
      };
      assertOneAuthModule(next.modules, modules);
      uniqueMatch(next, () => this.store.updateRoute(id, next));
      this.ensureSamlKey(id, modules);
      return this.renderRoutes([next], ctx)[0]!;
    });
  }

  deleteRoute(edgeId: string, id: string): void {
    this.store.write(() => {
      this.requireRoute(edgeId, id);
      this.store.deleteRoute(edgeId, id);
    });
  }

  // ------------------------------------------------------------------ route module sub-resources

  putModule(edgeId: string, id: string, name: string, body: unknown, ctx: RequestContext): unknown {
    const module = this.requireModuleName(name);
    const config = parseModule(ROUTE_MODULE_BODIES[module], body, { edge_id: edgeId, id });
    return this.store.write(() => {
      const row = this.requireRoute(edgeId, id);
      const next: RouteRow = { ...row, modules: { ...row.modules, [module]: config } };
      assertOneAuthModule(next.modules, { [module]: config });
      this.store.updateRoute(id, next); // only modules change: no unique key is touched
      this.ensureSamlKey(id, { [module]: config });
      return this.renderRoutes([next], ctx)[0]![module];
    });
  }

  getModule(edgeId: string, id: string, name: string, ctx: RequestContext): unknown {
    const module = this.requireModuleName(name);
    return this.store.read(() => {
      const route = this.renderRoutes([this.requireRoute(edgeId, id)], ctx)[0]!;
      if (route[module] === null)
        throw ApiError.notFound(`module ${module} of route ${id} (it is not configured)`);
      return route[module];
    });
  }

  deleteModule(edgeId: string, id: string, name: string): void {
    const module = this.requireModuleName(name);
    this.store.write(() => {
      const row = this.requireRoute(edgeId, id);
      if (row.modules[module] === undefined) {
        throw ApiError.notFound(`module ${module} of route ${id} (it is not configured)`);
      }
      const { [module]: _deleted, ...rest } = row.modules;
      this.store.updateRoute(id, { ...row, modules: rest });
    });
  }

  // ------------------------------------------------------------------ TLS IP restriction

  putTlsIpRestriction(edgeId: string, body: unknown, ctx: RequestContext): TlsIpRestriction {
    const config = parseModule(tlsIpRestrictionBodySchema, body, { id: edgeId }) as IpPolicyConfig;
    return this.store.write(() => {
      this.requireEdge("tls", edgeId);
      this.store.putTlsRestriction(edgeId, config);
      return renderIpPolicy(config, ctx);
    });
  }

  getTlsIpRestriction(edgeId: string, ctx: RequestContext): TlsIpRestriction {
    return this.store.read(() => {
      this.requireEdge("tls", edgeId);
      const config = this.store.getTlsRestrictions([edgeId]).get(edgeId);
      if (config === undefined)
        throw ApiError.notFound(`IP restriction of TLS edge ${edgeId} (it is not configured)`);
      return renderIpPolicy(config as IpPolicyConfig, ctx);
    });
  }

  deleteTlsIpRestriction(edgeId: string): void {
    this.store.write(() => {
      this.requireEdge("tls", edgeId);
      if (!this.store.deleteTlsRestriction(edgeId)) {
        throw ApiError.notFound(`IP restriction of TLS edge ${edgeId} (it is not configured)`);
      }
    });
  }

  // ------------------------------------------------------------------ internals

  /**
   * Runs a create once per idempotency key (inside the caller's write transaction, so that the
   * create and the memory of it commit together): a repeat with the same key and request answers
   * the first answer; the same key with another request is refused.
   */
  private once<T>(ctx: RequestContext, request: () => string, create: () => T): T {
    const key = ctx.idempotencyKey;
    if (key === undefined) return create();
    const digest = createHash("sha256").update(request()).digest("base64");
    const seen = this.store.getIdempotent(key);
    if (seen) {
      if (seen.request !== digest) {
        throw ApiError.invalid([
          { field: "Idempotency-Key", msg: "was already used for a different request" },
        ]);
      }
      return JSON.parse(seen.response) as T;
    }
    const result = create();
    const at = Date.now();
    this.store.putIdempotent(
      key,
      digest,
      JSON.stringify(result),
      new Date(at).toISOString(),
      new Date(at - IDEMPOTENCY_TTL_MS).toISOString(),
    );
    return result;
  }

  private requireEdge(kind: EdgeKind, id: string): EdgeRow {
    const edge = this.store.getEdge(kind, id);
    if (!edge) throw ApiError.notFound(`${EDGE_LABEL[kind]} ${id}`);
    return edge;
  }

  private requireRoute(edgeId: string, id: string): RouteRow {
    this.requireEdge("https", edgeId);
    const row = this.store.getRoute(edgeId, id);
    if (!row) throw ApiError.notFound(`route ${id} of HTTPS edge ${edgeId}`);
    return row;
  }

  private requireModuleName(name: string): RouteModuleName {
    if (!isRouteModuleName(name)) throw ApiError.notFound(`route module "${name}"`);
    return name;
  }

  /** `before_id` must name an item of the same list (same edge kind, same edge). */
  private page(
    q: PageQuery,
    seqOf: (id: string) => number | undefined,
  ): { limit: number; beforeSeq?: number } {
    const limit = q.limit ?? PAGE_LIMIT_DEFAULT; // checked by pageQuerySchema
    if (q.before_id === undefined) return { limit };
    const beforeSeq = seqOf(q.before_id);
    if (beforeSeq === undefined)
      throw ApiError.invalid([{ field: "before_id", msg: "is not an id of this list" }]);
    return { limit, beforeSeq };
  }

  /** One signing key pair per route, made the first time SAML is configured, kept for its life. */
  private ensureSamlKey(routeId: string, modules: ModuleConfigs): void {
    if (modules.saml === undefined || this.store.getSamlCertificates([routeId]).has(routeId)) return;
    const cert = createSelfSignedCertificate({ commonName: `edge-route-${routeId}` });
    this.store.putSamlKey(routeId, cert.certificatePem, cert.privateKeyPem);
  }

  private renderEdge(row: EdgeRow, ctx: RequestContext): HttpsEdge | TlsEdge {
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
        const batch = this.store.listRoutes(row.id, 500, before);
        routes.push(...batch);
        if (batch.length < 500) break;
        before = batch[batch.length - 1]!.seq;
      }
      return { ...base, routes: this.renderRoutes(routes.reverse(), ctx) };
    }
    const restriction = this.store.getTlsRestrictions([row.id]).get(row.id);
    return {
      ...base,
      ip_restriction: restriction ? renderIpPolicy(restriction as IpPolicyConfig, ctx) : null,
    };
  }

  private renderRoutes(rows: RouteRow[], ctx: RequestContext): Route[] {
    const certs = this.store.getSamlCertificates(
      rows.filter((r) => r.modules.saml !== undefined).map((r) => r.id),
    );
    return rows.map((row) => {
      const configured = row.modules;
      const route: Record<string, unknown> = {
        id: row.id,
        edge_id: row.edge_id,
        created_at: row.created_at,
        uri: `${ctx.baseUrl}/edges/https/${row.edge_id}/routes/${row.id}`,
        match_type: row.match_type,
        match: row.match,
        description: row.description,
        metadata: row.metadata,
      };
      for (const name of ROUTE_MODULE_NAMES) {
        const config = configured[name];
        route[name] =
          config === undefined ? null : renderModule(name, config, row.id, certs.get(row.id) ?? "", ctx);
      }
      return route as Route;
    });
  }
}

// ---------------------------------------------------------------- rendering and rules

interface IpPolicyConfig {
  enabled: boolean;
  ip_policy_ids: string[];
}

const backendRef = (id: string, ctx: RequestContext) => ({ id, uri: `${ctx.baseUrl}/backends/${id}` });
const ipPolicyRef = (id: string, ctx: RequestContext) => ({ id, uri: `${ctx.baseUrl}/ip_policies/${id}` });

function renderIpPolicy(c: IpPolicyConfig, ctx: RequestContext) {
  return { enabled: c.enabled, ip_policies: c.ip_policy_ids.map((id) => ipPolicyRef(id, ctx)) };
}

/** Request shape → response shape (edge-api.md "Mapping of request to response", SAML computed fields). */
function renderModule(
  name: RouteModuleName,
  config: unknown,
  routeId: string,
  samlCert: string,
  ctx: RequestContext,
) {
  const c = config as Record<string, unknown>;
  switch (name) {
    case "backend":
      return { enabled: c.enabled, backend: backendRef(String(c.backend_id), ctx) };
    case "ip_restriction":
      return renderIpPolicy(c as unknown as IpPolicyConfig, ctx);
    case "circuit_breaker":
      // Responses are total: an unset num_buckets is rendered as the contract's 0.
      return { ...c, num_buckets: c.num_buckets ?? NUM_BUCKETS_UNSET };
    case "saml": {
      const saml = `${ctx.baseUrl}/saml/${routeId}`;
      return {
        ...c,
        entity_id: `${saml}/metadata`,
        metadata_url: `${saml}/metadata`,
        assertion_consumer_service_url: `${saml}/acs`,
        single_logout_url: `${saml}/slo`,
        request_signing_certificate_pem: samlCert,
      };
    }
    default:
      return c;
  }
}

/** The non-null module objects of a create or update body. */
function pickModules(body: Record<string, unknown>): ModuleConfigs {
  const out: ModuleConfigs = {};
  for (const name of ROUTE_MODULE_NAMES) if (body[name] != null) out[name] = body[name];
  return out;
}

/** The contract's one-auth-module rule, on the modules a write leaves the route with. */
function assertOneAuthModule(resulting: ModuleConfigs, written: ModuleConfigs): void {
  const problem = authModuleProblem(Object.keys(resulting), Object.keys(written));
  if (problem) throw ApiError.invalid([problem]);
}

/** Runs a write of `route`; a clash with another route's (match_type, match) becomes the API's 409. */
function uniqueMatch<T>(route: Pick<RouteRow, "match_type" | "match">, write: () => T): T {
  try {
    return write();
  } catch (e) {
    throw e instanceof UniqueViolation ? duplicateMatch(route.match_type, route.match) : e;
  }
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
