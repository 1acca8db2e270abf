/**
 * `GET /openapi.json` (docs/decisions.md#compatibility: the API describes itself), and the
 * property-based API tester driven by it: schemathesis, from PyPI, against the service on a socket.
 * Every operation, a few thousand generated requests (valid and invalid), counted on the server
 * side: no 5xx, and every response conforms to the document (status documented, content type,
 * headers, body schema).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ALL_OPERATIONS, ROUTE_MODULE_NAMES } from "../../sdk/contract";
import { createEdgeApp } from "../../service/http/app";
import { type RunningServer, startServer } from "../../service/http/server";
import { SqliteStore } from "../../service/store/store-sqlite";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import { ensurePythonTools, runPython } from "../support/python-tools";
import { makeTempDir, removeDir } from "./helpers";

const API_KEY = "st-key-0123456789";

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown> };
};

describe("GET /openapi.json", () => {
  let dataDir: string;
  let server: RunningServer;
  let doc: Doc;
  beforeAll(async () => {
    dataDir = makeTempDir("openapi");
    server = await startServer({ dataDir, port: 0 });
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    doc = (await res.json()) as Doc;
  });
  afterAll(async () => {
    await server.close();
    removeDir(dataDir);
  });

  it("is OpenAPI 3.1 and describes every route of the service, and nothing else", () => {
    expect(doc.openapi).toBe("3.1.0");
    const documented = new Set<string>();
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${p}`);
    }
    const served = new Set<string>();
    const store = SqliteStore.open(dataDir);
    try {
      for (const route of createEdgeApp({ store }).routes) {
        if (route.method === "ALL") continue; // middleware
        const p = route.path.replace(/:([a-z_]+)/g, "{$1}");
        const paths = p.includes("{module}") ? ROUTE_MODULE_NAMES.map((m) => p.replace("{module}", m)) : [p];
        for (const one of paths) served.add(`${route.method} ${one}`);
      }
    } finally {
      store.close();
    }
    expect([...documented].sort()).toEqual([...served].sort());
    // Every operation of the table, each once: a new one needs no number changed here.
    expect(documented.size).toBe(ALL_OPERATIONS.length);
  });

  it.each([
    [
      "create_route",
      "post",
      "/edges/https/{edge_id}/routes",
      ["201", "400", "401", "403", "404", "409", "413", "415", "429", "503"],
    ],
    [
      "get_backend_module",
      "get",
      "/edges/https/{edge_id}/routes/{id}/backend",
      ["200", "400", "401", "403", "404", "429", "503"],
    ],
    [
      "delete_tls_ip_restriction",
      "delete",
      "/edges/tls/{id}/ip_restriction",
      ["204", "400", "401", "403", "404", "429", "503"],
    ],
    // Every operation with a key may answer 503 (not ready, or storage unavailable: ERR_EDGE_507).
    // Probes: no key, no rate limit; readiness may be a 503.
    ["get_healthz", "get", "/healthz", ["200", "400"]],
    ["get_readyz", "get", "/readyz", ["200", "400", "503"]],
    ["get_metrics", "get", "/metrics", ["200", "400", "401", "403", "404", "429", "503"]],
  ])("%s documents its statuses", (id, method, p, statuses) => {
    const op = doc.paths[p]![method]!;
    expect(op.operationId).toBe(id);
    expect(Object.keys(op.responses).sort()).toEqual(statuses);
  });

  it("takes no query parameter", async () => {
    const res = await fetch(`${server.url}/openapi.json?v=2`);
    expect(res.status).toBe(400);
  });
});

describe("schemathesis against the service (property-based, driven by /openapi.json)", () => {
  let python: string;
  let dataDir: string;
  let server: RunningServer;
  const statuses = new Map<number, number>();
  const internal: string[] = [];
  let seeded: { edge: string; route: string; tls: string };

  beforeAll(async () => {
    python = ensurePythonTools();
    dataDir = makeTempDir("schemathesis");
    server = await startServer({
      dataDir,
      port: 0,
      apiKey: API_KEY,
      log: (line) => {
        const m = /^[A-Z]+ \S+ (\d{3}) /.exec(line);
        if (m) statuses.set(Number(m[1]), (statuses.get(Number(m[1])) ?? 0) + 1);
        else if (!line.startsWith("warning: no secrets key")) internal.push(line); // said at start, by design
      },
    });
    const client = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: API_KEY, retries: 0 }));
    const edge = await client.createHttpsEdge({ description: "seeded" });
    const route = await client.createRoute(edge.id, { match_type: "path_prefix", match: "/seeded" });
    const tls = await client.createTlsEdge({});
    seeded = { edge: edge.id, route: route.id, tls: tls.id };
  });
  afterAll(async () => {
    await server?.close();
    if (dataDir) removeDir(dataDir);
  });

  /** One schemathesis run; its JSON report. */
  async function schemathesis(label: string, config: string, extra: string[] = []) {
    const dir = path.join(dataDir, label);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "schemathesis.toml"), config);
    const report = path.join(dir, "report.json");
    const result = await runPython(
      python,
      [
        "-m",
        "schemathesis.cli",
        "--config-file",
        path.join(dir, "schemathesis.toml"),
        "run",
        `${server.url}/openapi.json`,
        "--header",
        `Authorization: Bearer ${API_KEY}`,
        "--checks",
        [
          "not_a_server_error",
          "status_code_conformance",
          "content_type_conformance",
          "response_headers_conformance",
          "response_schema_conformance",
        ].join(","),
        "--max-examples",
        "30",
        "--seed",
        "14",
        "--workers",
        "1",
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        report,
        ...extra,
      ],
      { cwd: dir, env: { HYPOTHESIS_STORAGE_DIRECTORY: path.join(dir, ".hypothesis") } },
    );
    if (!fs.existsSync(report)) {
      throw new Error(
        `schemathesis made no report (exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
      );
    }
    const json = JSON.parse(fs.readFileSync(report, "utf8")) as {
      operations: { total: number; tested: number; errored: number };
      test_cases: { generated: number; with_failures: number };
      failures: unknown[];
      errors: unknown[];
    };
    if (json.failures.length > 0 || json.errors.length > 0 || result.code !== 0) {
      throw new Error(
        `schemathesis (${label}) found problems (exit ${result.code}):\n${result.stdout.slice(-20000)}\n${result.stderr.slice(-4000)}`,
      );
    }
    return json;
  }

  it("every operation, random identifiers and linked ones (create → use): no failure", async () => {
    const report = await schemathesis("open", "");
    // Every documented operation but GET /openapi.json itself, which schemathesis leaves out.
    expect(report.operations.total).toBe(ALL_OPERATIONS.length - 1);
    expect(report.operations.tested).toBe(report.operations.total);
    expect(report.operations.errored).toBe(0);
    expect(report.test_cases.with_failures).toBe(0);
    expect(report.test_cases.generated).toBeGreaterThan(1000);
  });

  it("the operations on one existing route and TLS edge, so generated bodies reach the rules: no failure", async () => {
    const config = [
      "[[operations]]",
      'include-path-regex = "^/edges/https/\\\\{edge_id\\\\}/routes/\\\\{id\\\\}"',
      `parameters = { "path.edge_id" = "${seeded.edge}", "path.id" = "${seeded.route}" }`,
      "",
      "[[operations]]",
      'include-path = "/edges/tls/{id}/ip_restriction"',
      `parameters = { "path.id" = "${seeded.tls}" }`,
      "",
      "[[operations]]",
      'include-path = "/edges/https/{edge_id}/routes"',
      `parameters = { "path.edge_id" = "${seeded.edge}" }`,
      "",
    ].join("\n");
    const report = await schemathesis("seeded", config, [
      "--include-path-regex",
      "^/edges/(https/\\{edge_id\\}/routes|tls/\\{id\\}/ip_restriction)",
      "--exclude-operation-id",
      "delete_route",
      "--phases",
      "examples,coverage,fuzzing",
    ]);
    expect(report.test_cases.with_failures).toBe(0);
    expect(report.test_cases.generated).toBeGreaterThan(1000);
  });

  it("the server answered thousands of requests, none with a 5xx", () => {
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    const fiveXx = [...statuses].filter(([s]) => s >= 500).reduce((a, [, n]) => a + n, 0);
    // Printed for the record (the counts by status of this run).
    console.log(`schemathesis: ${total} requests; by status ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(internal).toEqual([]);
    expect(fiveXx).toBe(0);
    expect(total).toBeGreaterThan(3000);
    // The generated requests reached success paths, not only rejections.
    expect(statuses.get(200)).toBeGreaterThan(200);
    expect(statuses.get(201)).toBeGreaterThan(20);
    expect(statuses.get(204)).toBeGreaterThan(20);
  });
});
