/**
 * The published Node.js client, @ngrok/ngrok-api 0.11.0, against the service in a process of its
 * own, so that it trusts a private CA the way its users make it: NODE_EXTRA_CA_CERTS, read by
 * node at start (the client takes no agent or CA option). Run by interop-node.test.ts with
 * EDGE_URL and EDGE_KEY set; prints one JSON line per case: {"case", "ok", "error"}.
 *
 * A subset of interop-node.test.ts's cases, one per kind of call (create, get, list, update,
 * delete, a module's replace, an API error, a wrong key), with the same client bugs accepted:
 * `delete()` rejects with a SyntaxError after the delete succeeded (it parses the empty 204). The
 * same bug hides why a request failed (it parses node-fetch's "request to ... failed, reason: ..."
 * as JSON), so the first case asks node's own https (what node-fetch uses) and says its code.
 */
const assert = require("node:assert/strict");
const https = require("node:https");
const { Ngrok } = require("@ngrok/ngrok-api");

const URL = process.env.EDGE_URL;
const KEY = process.env.EDGE_KEY;
const ngrok = new Ngrok({ apiToken: KEY, baseUrl: URL });
const cases = [];
const test = (name, fn) => cases.push([name, fn]);

/** A delete that worked: the client rejects parsing the empty 204 (its bug). */
async function deleted(call) {
  const outcome = await call.then(
    () => "resolved",
    (e) => e,
  );
  assert.ok(outcome instanceof SyntaxError, `expected the client's SyntaxError, got ${outcome}`);
}

/** The error the client throws for an API error; a request that failed (the bug above) is thrown on. */
async function apiError(call) {
  const e = await call.then(
    () => assert.fail("expected the call to fail"),
    (err) => err,
  );
  if (e instanceof SyntaxError && e.message.includes('"request to')) throw e;
  return e;
}

test("node_https_trusts_the_service", async () => {
  const status = await new Promise((resolve, reject) => {
    https
      .get(`${URL}/healthz`, (res) => {
        res.resume();
        resolve(res.statusCode);
      })
      .on("error", (e) => reject(new Error(`${e.code}: ${e.message}`)));
  });
  assert.equal(status, 200);
});

test("https_edge_create_get_list_delete", async () => {
  const edge = await ngrok.edges.edgesHttps.create({ description: "node over tls", metadata: "m" });
  assert.match(edge.id, /^edghts_/);
  const got = await ngrok.edges.edgesHttps.get(edge.id);
  assert.equal(got.description, "node over tls");
  assert.ok((await ngrok.edges.edgesHttps.list()).some((e) => e.id === edge.id));
  await deleted(ngrok.edges.edgesHttps.delete(edge.id));
  const err = await apiError(ngrok.edges.edgesHttps.get(edge.id));
  assert.equal(err.errorCode, "ERR_EDGE_404");
  assert.equal(err.statusCode, 404);
});

test("route_create_get_update_and_a_module", async () => {
  const edgeId = (await ngrok.edges.edgesHttps.create({})).id;
  const route = await ngrok.edges.edgesHttpsRoutes.create({
    edgeId,
    matchType: "path_prefix",
    match: "/node-tls",
  });
  assert.equal((await ngrok.edges.edgesHttpsRoutes.get({ edgeId, id: route.id })).match, "/node-tls");
  const updated = await ngrok.edges.edgesHttpsRoutes.update({ edgeId, id: route.id, description: "u" });
  assert.equal(updated.description, "u");
  const compression = await ngrok.edgeModules.edgeRouteCompressionModule.replace({
    edgeId,
    id: route.id,
    module: { enabled: true },
  });
  assert.equal(compression.enabled, true);
  const got = await ngrok.edgeModules.edgeRouteCompressionModule.get({ edgeId, id: route.id });
  assert.equal(got.enabled, true);
});

test("tls_edge_create_get_delete", async () => {
  const edge = await ngrok.edges.edgesTls.create({ description: "tls edge" });
  assert.match(edge.id, /^edgtls_/);
  assert.equal((await ngrok.edges.edgesTls.get(edge.id)).description, "tls edge");
  await deleted(ngrok.edges.edgesTls.delete(edge.id));
});

test("wrong_key_is_the_clients_error", async () => {
  const wrong = new Ngrok({ apiToken: "wrong", baseUrl: URL });
  const err = await apiError(wrong.edges.edgesHttps.list());
  assert.equal(err.errorCode, "ERR_EDGE_401");
  assert.equal(err.statusCode, 401);
});

(async () => {
  for (const [name, fn] of cases) {
    try {
      await fn();
      console.log(JSON.stringify({ case: name, ok: true, error: "" }));
    } catch (e) {
      console.log(JSON.stringify({ case: name, ok: false, error: String((e && e.stack) || e) }));
    }
  }
})();
