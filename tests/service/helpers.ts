/**
 * Shared fixtures of the service tests: the same suite runs over real HTTP (a `startServer` on an
 * ephemeral port) and in-process (`embeddedTransport`), against a database in a temp directory.
 */
import { storeFingerprint } from "../support/fingerprint";
import { IDP_METADATA } from "../support/request-bodies";
import { sharedCluster } from "../support/postgres";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { EdgeApiError, EdgeClient } from "../../sdk/client";
import {
  DEFAULT_COOKIE_PREFIX,
  type ModuleRequest,
  type ModuleRequestInput,
  OPERATION_ID_HEADER,
  renderModule,
  ROUTE_MODULES,
  type RouteModuleName,
} from "../../sdk/contract";
import { startServer } from "../../service/http/server";
import type { Store } from "../../service/store/store";
import type { Secrets } from "../../service/secrets";
import { PostgresStore } from "../../service/store/store-postgres";
import { SqliteStore } from "../../service/store/store-sqlite";
import { httpTransport, type Transport } from "../../sdk/transport";
import { closeEmbeddedStores, embeddedTransport } from "../../service/embedded";

export function makeTempDir(label: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `edge-test-${label}-`));
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export interface Fixture {
  kind: "http" | "embedded" | "postgres";
  /** Origin every Ref and uri of this fixture is built on. */
  baseUrl: string;
  transport: Transport;
  client: EdgeClient;
  /** A connection to the fixture's database: `fingerprint(store)` proves rejected requests changed nothing. */
  store: Store;
  dataDir: string;
  close(): Promise<void>;
}

/** The service on a real socket (port 0), spoken to through `httpTransport` without retries. */
export function httpFixture(): Promise<Fixture> {
  return serverFixture("http");
}

async function serverFixture(kind: "http" | "postgres", databaseUrl?: string): Promise<Fixture> {
  const dataDir = makeTempDir(kind === "http" ? "http" : "pg");
  const server = await startServer({ dataDir, databaseUrl, port: 0 });
  const transport = httpTransport({ baseUrl: server.url, retries: 0, timeoutMs: 60_000 });
  return {
    kind,
    baseUrl: server.url,
    transport,
    client: new EdgeClient(transport),
    store: server.store,
    dataDir,
    async close() {
      await server.close();
      removeDir(dataDir);
    },
  };
}

/** The service in this process, through `embeddedTransport`; a second connection observes the database. */
export async function embeddedFixture(): Promise<Fixture> {
  const dataDir = makeTempDir("embedded");
  const transport = embeddedTransport({ dataDir });
  const store = SqliteStore.open(dataDir);
  return {
    kind: "embedded",
    baseUrl: transport.baseUrl,
    transport,
    client: new EdgeClient(transport),
    store,
    dataDir,
    async close() {
      closeEmbeddedStores();
      store.close();
      removeDir(dataDir);
    },
  };
}

/**
 * The service on a real socket on the PostgreSQL store: a fresh database of this test file's
 * throwaway cluster (tests/support/postgres.ts).
 */
export async function postgresFixture(): Promise<Fixture> {
  const cluster = await sharedCluster();
  return serverFixture("postgres", await cluster.createDatabase());
}

/**
 * For `describe.each`: the same tests over both transports on SQLite, and over HTTP on
 * PostgreSQL (the store matrix: one suite, both stores).
 */
export const FIXTURES: Array<[string, () => Promise<Fixture>]> = [
  ["over HTTP", httpFixture],
  ["in-process (embedded transport)", embeddedFixture],
  ["over HTTP on PostgreSQL", postgresFixture],
];

/** Where a store lives, for a test that opens it, closes and reopens it (other keys), then removes it. */
export interface StorePlace {
  open(secrets?: Secrets): Promise<Store>;
  remove(): void;
}

/** A fresh SQLite data directory, the index by object left to the test (auditIndexEveryMs 0). */
export async function sqlitePlace(): Promise<StorePlace> {
  const dir = makeTempDir("store");
  return {
    open: (secrets) => Promise.resolve(SqliteStore.open(dir, { secrets, auditIndexEveryMs: 0 })),
    remove: () => removeDir(dir),
  };
}

/** A fresh database of this file's shared PostgreSQL cluster (see sqlitePlace). */
export async function postgresPlace(): Promise<StorePlace> {
  const url = await (await sharedCluster()).createDatabase();
  return {
    open: (secrets) => PostgresStore.open(url, { secrets, auditIndexEveryMs: 0, poolSize: 2 }),
    remove: () => undefined,
  };
}

/** For `describe.each` over the stores themselves (no HTTP): both stores. */
export const STORE_PLACES: Array<[string, () => Promise<StorePlace>]> = [
  ["SQLite", sqlitePlace],
  ["PostgreSQL", postgresPlace],
];

// ---------------------------------------------------------------- raw requests

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed body, or undefined when the body is empty or not JSON. */
  json: any;
}

export interface RawOptions {
  /** An object is sent as JSON; a string or bytes are sent as they are. */
  body?: unknown;
  /** Content-Type; default application/json when there is a body; null sends none. */
  contentType?: string | null;
  headers?: Record<string, string>;
}

/** Sends one request through the fixture's transport exactly as given (no client in between). */
export async function raw(
  transport: Transport,
  method: string,
  urlPath: string,
  opts: RawOptions = {},
): Promise<RawResponse> {
  const headers = new Headers(opts.headers ?? {});
  let body: BodyInit | undefined;
  if (opts.body !== undefined) {
    const text = typeof opts.body === "string" ? opts.body : undefined;
    // Bytes, never a string: `new Request` would add "text/plain" to a string body by itself.
    body = (
      opts.body instanceof Uint8Array
        ? opts.body
        : new TextEncoder().encode(text ?? JSON.stringify(opts.body))
    ) as Uint8Array<ArrayBuffer>;
    const type = opts.contentType === undefined ? "application/json" : opts.contentType;
    if (type !== null) headers.set("content-type", type);
  } else if (opts.contentType) {
    headers.set("content-type", opts.contentType);
  }
  const response = await transport.send(new Request(transport.baseUrl + urlPath, { method, headers, body }));
  const text = await response.text();
  let json: any;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/**
 * Asserts the error shape of docs/decisions.md#errors: exactly `error_code`, `status_code`, `msg`,
 * `details`; the operation id of the `Request-Id` header repeated in `details.operation_id`; and
 * the field at fault (null: no field).
 */
export function expectErrorBody(res: RawResponse, status: number, code: string, field: string | null): void {
  if (res.status !== status) {
    throw new Error(`expected status ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  }
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = res.json;
  expect(Object.keys(body).sort()).toEqual(["details", "error_code", "msg", "status_code"]);
  expect(body.error_code).toBe(code);
  expect(body.status_code).toBe(status);
  expect(typeof body.msg).toBe("string");
  expect(body.msg.length).toBeGreaterThan(0);
  const operationId = res.headers.get(OPERATION_ID_HEADER);
  expect(operationId).toMatch(/^op_[0-9A-Za-z]{20}$/);
  expect(body.details.operation_id).toBe(operationId);
  if (field === null) expect(body.details.field).toBeUndefined();
  else expect(body.details.field).toBe(field);
}

/**
 * A request that must be rejected, and how: one row of an `it.each` table (title: `REJECTED`).
 * A path (or header value) that needs ids made at run time (in a beforeAll) holds `{name}`
 * placeholders, filled by `fillIds` in the test body.
 */
export interface Rejection extends RawOptions {
  /** What is wrong with the request, in words (for the test title). */
  case: string;
  method: string;
  path: string;
  status: number;
  code: string;
  /** The field at fault; null: the error names no field. */
  field: string | null;
}

/** The title of a table of `Rejection` rows. */
export const REJECTED = "$case: $method $path → $status $code at $field";

/**
 * The row with the `{name}` placeholders of its path and header values replaced by `ids[name]`;
 * throws on a placeholder it has no id for (a request to a literal `{edge}` would 404 and pass).
 */
export function fillIds<R extends Pick<Rejection, "path" | "headers">>(
  row: R,
  ids: Record<string, string>,
): R {
  const fill = (text: string) =>
    text.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const id = ids[name];
      if (id === undefined) throw new Error(`no id for {${name}} in ${text}`);
      return id;
    });
  const headers =
    row.headers && Object.fromEntries(Object.entries(row.headers).map(([k, v]) => [k, fill(v)]));
  return { ...row, path: fill(row.path), ...(headers ? { headers } : {}) };
}

/** Sends a request that must be rejected, asserts the error, and proves the database is unchanged. */
export async function expectRejected(
  fx: Pick<Fixture, "transport" | "store">,
  r: Omit<Rejection, "case"> & { case?: string },
): Promise<RawResponse> {
  const before = await storeFingerprint(fx.store);
  const res = await raw(fx.transport, r.method, r.path, {
    body: r.body,
    contentType: r.contentType,
    headers: r.headers,
  });
  expectErrorBody(res, r.status, r.code, r.field);
  expect(await storeFingerprint(fx.store)).toBe(before);
  return res;
}

/** Awaits a client call that must fail, and checks the EdgeApiError it fails with. */
export async function expectApiError(
  promise: Promise<unknown>,
  status: number,
  code: string,
  field?: string,
): Promise<EdgeApiError> {
  let caught: unknown;
  try {
    await promise;
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(EdgeApiError);
  const err = caught as EdgeApiError;
  expect(err.status).toBe(status);
  expect(err.errorCode).toBe(code);
  expect(err.field).toBe(field);
  expect(err.operationId).toMatch(/^op_[0-9A-Za-z]{20}$/);
  return err;
}

// ---------------------------------------------------------------- data

export const ID_RE = {
  httpsEdge: /^edghts_[0-9A-Za-z]{27}$/,
  route: /^edghtsrt_[0-9A-Za-z]{27}$/,
  tlsEdge: /^edgtls_[0-9A-Za-z]{27}$/,
};

let matchCounter = 0;
/** A fresh, unique match path. */
export const uniqueMatch = (label = "r") => `/${label}/${++matchCounter}`;

export { IDP_METADATA };

/** Session fields of oauth / oidc / saml as they come back when omitted. */
export const SESSION_DEFAULTS = {
  options_passthrough: false,
  cookie_prefix: DEFAULT_COOKIE_PREFIX,
  inactivity_timeout: 0,
  maximum_duration: 0,
};

/** What a SAML module's certificate must look like (each route has its own). */
export const CERTIFICATE_PEM = expect.stringMatching(
  /^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n?$/,
) as unknown as string;

/**
 * The answer the contract gives for a module request: the request parsed by the module's schema
 * (every omitted field filled with its default), rendered as a response (Refs built on `base`,
 * SAML's computed fields for `routeId`, any certificate). Tests compare the service's answers
 * with it, so a new defaulted field needs no test edit. It is the service's own parse and render:
 * the shapes they produce are pinned by hand, once, in module-golden.test.ts.
 */
export function expectedModule(
  name: RouteModuleName,
  request: unknown,
  base: string,
  routeId: string,
): Record<string, unknown> {
  const config = ROUTE_MODULES[name].request.parse(request) as ModuleRequest<typeof name>;
  return renderModule(name, config, { baseUrl: base, routeId, samlCertificatePem: CERTIFICATE_PEM });
}

/** One valid request per route module (each field's value given or defaulted on purpose). */
export const MODULE_SAMPLE_REQUESTS: { [M in RouteModuleName]: ModuleRequestInput<M> } = {
  backend: { backend_id: "bkd_primary1" },
  ip_restriction: { enabled: false, ip_policy_ids: ["ipp_b", "ipp_a", "ipp_c"] },
  circuit_breaker: { tripped_duration: 30, num_buckets: 10 },
  compression: {},
  request_headers: { add: { "X-Foo": "bar", "x-MiXeD-Case": "v" } },
  response_headers: { remove: ["Server", "X-Powered-By"] },
  webhook_verification: { provider: "GitHub", secret: "whsec_sample" },
  oauth: { provider: { github: {} } },
  saml: { idp_metadata: IDP_METADATA },
  oidc: { issuer: "https://accounts.example.com", client_id: "cid", client_secret: "csecret" },
  websocket_tcp_converter: { enabled: false },
  user_agent_filter: { deny: ["curl/.*"] },
  traffic_policy: { value: '{"on_http_request":[]}' },
};

/**
 * One valid request per route module, and the response it must produce (`expectedModule`:
 * defaults filled in, Refs built on `base`, SAML computed fields for `routeId`).
 */
export function moduleSample(
  name: RouteModuleName,
  base: string,
  routeId: string,
): { request: Record<string, unknown>; response: Record<string, unknown> } {
  const request = MODULE_SAMPLE_REQUESTS[name] as Record<string, unknown>;
  return { request, response: expectedModule(name, request, base, routeId) };
}

/** The modules a route can carry all at once (oauth and oidc exclude saml). */
export const COMPATIBLE_MODULES: RouteModuleName[] = [
  "backend",
  "ip_restriction",
  "circuit_breaker",
  "compression",
  "request_headers",
  "response_headers",
  "webhook_verification",
  "saml",
  "websocket_tcp_converter",
  "user_agent_filter",
  "traffic_policy",
];
