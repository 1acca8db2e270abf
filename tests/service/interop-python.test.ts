/**
 * The real API's published Python client, PyPI `ngrok-api` 0.19.0 (pinned in
 * tests/support/python-tools.txt, in the test venv), against the service with a bearer key: every
 * operation of the contract's scope — HTTPS edges, routes, the 13 route modules, TLS edges and
 * their IP restriction, paging — driven by ./interop_python.py, one result per case. Run twice:
 * over HTTP, and over TLS (`serve --tls-cert`) with a private CA given as the client's users
 * give one, `REQUESTS_CA_BUNDLE` (the client sends with `requests`).
 *
 * Client bug that fails against the real API as well: `EndpointOAuth(client, props)` wraps its
 * `provider` in an object that `json` cannot encode, so the documented datatype cannot be sent
 * (the case `client_bug_oauth_datatype_cannot_be_sent` pins it; the oauth module is sent with
 * the same props through a stand-in).
 */
import * as path from "node:path";
import { type RunningServer, startServer } from "../../service/http/server";
import { makePki, type Pki } from "../support/pki";
import { ensurePythonTools, runPython } from "../support/python-tools";
import { IDP_METADATA, makeTempDir, removeDir } from "./helpers";

const API_KEY = "python-client-key-0123";

const CASES = [
  "https_edge_create_get_delete",
  "https_edge_list_paged",
  "route_create_get_update_delete",
  "route_error_is_the_clients_error",
  "module backend",
  "module ip_restriction",
  "module request_headers",
  "module response_headers",
  "module compression",
  "module compression (empty: no body)",
  "module circuit_breaker",
  "module webhook_verification",
  "module oauth",
  "module saml",
  "module oidc",
  "module websocket_tcp_converter",
  "module user_agent_filter",
  "module traffic_policy",
  "route_with_modules_through_create",
  "tls_edge_create_get_list_delete",
  "tls_ip_restriction_replace_get_delete",
  "wrong_key_is_the_clients_error",
  "client_bug_oauth_datatype_cannot_be_sent",
];

describe.each([
  { over: "HTTP", tls: false },
  { over: "TLS, a private CA in REQUESTS_CA_BUNDLE", tls: true },
])("ngrok-api 0.19.0 (the published Python client) against the service over $over", ({ tls }) => {
  let dataDir: string;
  let pki: Pki | undefined;
  let server: RunningServer;
  let python: string;
  const results = new Map<string, { ok: boolean; error: string }>();
  let output = "";

  beforeAll(async () => {
    python = ensurePythonTools();
    dataDir = makeTempDir("interop-python");
    pki = tls ? makePki() : undefined;
    server = await startServer({
      dataDir,
      port: 0,
      apiKey: API_KEY,
      tls: pki && { certFile: pki.server.cert, keyFile: pki.server.key },
    });
    const run = await runPython(python, [path.join(__dirname, "interop_python.py")], {
      env: {
        EDGE_URL: server.url,
        EDGE_KEY: API_KEY,
        IDP_METADATA,
        ...(pki && { REQUESTS_CA_BUNDLE: pki.ca }),
      },
      timeoutMs: 300_000,
    });
    output = `exit ${run.code}\n${run.stdout}\n${run.stderr}`;
    for (const line of run.stdout.split("\n")) {
      if (!line.startsWith("{")) continue;
      const r = JSON.parse(line) as { case: string; ok: boolean; error: string };
      results.set(r.case, r);
    }
  });
  afterAll(async () => {
    await server?.close();
    if (dataDir) removeDir(dataDir);
    pki?.cleanup();
  });

  if (tls) {
    it("is TLS for real: without the CA the client refuses the service's certificate", async () => {
      expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:/);
      const run = await runPython(
        python,
        [
          "-c",
          "import os, ngrok; ngrok.Client(os.environ['EDGE_KEY'], base_url=os.environ['EDGE_URL']).edges.https.list()",
        ],
        { env: { EDGE_URL: server.url, EDGE_KEY: API_KEY }, timeoutMs: 60_000 },
      );
      expect({ code: run.code, said: run.stderr }).toEqual({
        code: 1,
        said: expect.stringMatching(/SSLError|CERTIFICATE_VERIFY_FAILED/),
      });
    });
  }

  it("the script ran every case, and only those", () => {
    if (results.size === 0) throw new Error(`the Python client script reported nothing:\n${output}`);
    expect([...results.keys()].sort()).toEqual([...CASES].sort());
  });

  it.each(CASES)("%s", (name) => {
    const r = results.get(name);
    if (!r) throw new Error(`no result for ${name}:\n${output}`);
    if (!r.ok) throw new Error(r.error);
  });
});
