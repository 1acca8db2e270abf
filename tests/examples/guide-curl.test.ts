/**
 * The guide's curl form of the first day's out-of-band change ("A first stack"), run as it is
 * shown: against `edge-service serve` with keys, with the variables the guide names, it makes the
 * change `edge-service request` makes there, by the colleague's key, and the service says so.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EdgeClient } from "../../sdk/client";
import { httpTransport } from "../../sdk/transport";
import {
  CLI,
  type Cli,
  ensureBuilt,
  killClis,
  loggedLines,
  NO_DRAIN,
  ROOT,
  startCli,
} from "../support/edge-service";

let data: string;
let server: Cli;

beforeAll(async () => {
  ensureBuilt();
  data = mkdtempSync(join(tmpdir(), "edge-guide-curl-"));
  server = await startCli(["--port", "0", ...NO_DRAIN, "--data", data]);
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.exit;
  killClis();
  if (data) rmSync(data, { recursive: true, force: true });
});

/** The shell block of the guide whose first line is `# The same change with curl…`, unindented. */
function curlBlock(): string {
  const guide = readFileSync(join(ROOT, "docs", "guide.md"), "utf8");
  const blocks = [...guide.matchAll(/^( *)```sh\n((?:\1.*\n)*?)\1```$/gm)]
    .map(([, indent, body]) => body!.replace(new RegExp(`^${indent}`, "gm"), ""))
    .filter((body) => body.startsWith("# The same change with curl"));
  expect(blocks).toHaveLength(1);
  return blocks[0]!;
}

test("the guide's curl form of the out-of-band change runs as shown: the route changes, by the colleague's key", async () => {
  const key = (name: string) =>
    execFileSync(process.execPath, [CLI, "keys", "create", name, "--scope", "write", "--data", data], {
      encoding: "utf8",
    }).trim();
  const deployer = new EdgeClient(httpTransport({ baseUrl: server.url, apiKey: key("deployer") }));
  const edge = await deployer.createHttpsEdge({ hostports: ["shop.example.com:443"] });
  const route = await deployer.createRoute(edge.id, {
    match_type: "path_prefix",
    match: "/api",
    backend: { backend_id: "bkd_shop_api" },
  });
  const opsKey = key("ops-console");

  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      "bash",
      ["-euo", "pipefail", "-c", curlBlock()],
      { env: { ...process.env, url: server.url, ops_key: opsKey, edge_id: edge.id, route_id: route.id } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
  expect(run).toMatchObject({ code: 0, stderr: "" });
  expect(JSON.parse(run.stdout)).toMatchObject({ id: route.id, backend: { backend: { id: "bkd_hotfix" } } });
  expect((await deployer.getRoute(edge.id, route.id)).backend?.backend.id).toBe("bkd_hotfix");
  expect(await loggedLines(server, `PATCH /edges/https/${edge.id}/routes/${route.id}`)).toEqual([
    expect.stringContaining("key=ops-console"),
  ]);
});
