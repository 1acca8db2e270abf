/**
 * What a Pulumi program loads. The package entry (the resource classes) and the provider runtime
 * pointed at a remote service must not load SQLite's native binding, Hono or the bundled
 * service: only the embedded default does, and only when it is used. Checked on the built
 * package, in a fresh node process, through its real entry points.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { startServer, type RunningServer } from "../../service/http/server";
import { ensureBuilt, ROOT } from "../support/edge-service";

// The bundled service is dist/service but its in-process transport (embedded.js), a few lines
// that load the service on the first call.
const HEAVY =
  /[/\\]node_modules[/\\](@libsql|libsql|hono|@hono|prom-client)[/\\]|[/\\]dist[/\\]service[/\\](?!embedded\.js$)/;

/** In a child process: load the package as a program and as the engine's provider process do, create and delete an edge. */
const SCRIPT = `
(async () => {
  require("pulumi-edge");
  const runtime = require("pulumi-edge/runtime");
  const config = JSON.parse(process.env.EDGE_CONFIG);
  await runtime.configure({ config: { get: (k) => config[k] } });
  const made = await runtime.providers.httpsEdge.create({ description: "layering", metadata: "", hostports: [] });
  await runtime.providers.httpsEdge.delete(made.id, made.outs);
  console.log(JSON.stringify({ id: made.id, loaded: Object.keys(require.cache) }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

/** Async: the service answering the child runs in this process. */
async function run(config: Record<string, string>, cwd: string): Promise<{ id: string; heavy: string[] }> {
  const { stdout: out } = await promisify(execFile)(process.execPath, ["-e", SCRIPT], {
    cwd,
    env: { ...process.env, EDGE_CONFIG: JSON.stringify(config), EDGE_API_URL: "", EDGE_DATA_DIR: "" },
    encoding: "utf8",
  });
  const { id, loaded } = JSON.parse(out.trim().split("\n").pop()!) as { id: string; loaded: string[] };
  return { id, heavy: loaded.filter((p) => HEAVY.test(p)) };
}

let server: RunningServer;
let dir: string;
beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "edge-layering-"));
  server = await startServer({ dataDir: join(dir, "server"), port: 0 });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("with a remote baseUrl: neither libsql, nor Hono, nor the service is loaded", async () => {
  const { id, heavy } = await run({ "edge:baseUrl": server.url }, ROOT);
  expect(id).toMatch(/^edghts_/);
  expect(heavy).toEqual([]);
});

test("control: the embedded default does load them (so the check above can see them)", async () => {
  const { id, heavy } = await run({ "edge:dataDir": join(dir, "embedded") }, ROOT);
  expect(id).toMatch(/^edghts_/);
  expect(heavy.some((p) => /libsql/.test(p))).toBe(true);
  expect(heavy.some((p) => /hono/.test(p))).toBe(true);
  expect(heavy.some((p) => /[/\\]dist[/\\]service[/\\]store[/\\]/.test(p))).toBe(true);
  // Metrics are the server's: an in-process service never loads prom-client.
  expect(heavy.some((p) => /prom-client/.test(p))).toBe(false);
});
