/**
 * Engine test support: programs copied into a work directory inside the repository (so that
 * `pulumi-edge` and `@pulumi/pulumi` resolve from the root node_modules, as in a user's
 * project), one state directory per test file, and a recording edge server.
 */
import type { AddressInfo } from "node:net";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../../sdk/client";
import { createEdgeApp } from "../../../service/http/app";
import { EdgeService } from "../../../service/service";
import { SqliteStore } from "../../../service/store/store-sqlite";
import { httpTransport } from "../../../sdk/transport";
import { holdsPrivateKey } from "../../../sdk/pem";
import { programWorkspace, WORK_ROOT, type Workspace } from "../../support/workspace";

const engine = require("../../../scripts/engine.js") as typeof import("../../../scripts/engine.js");

export const ROOT = engine.ROOT;
export { WORK_ROOT };

/** A fresh directory for one test file: a copy of the fixture program and a state directory. */
export const workspace = (fixture: string, label: string): Workspace =>
  programWorkspace(join(__dirname, "..", "fixtures", fixture), label);

export interface RecordedRequest {
  method: string;
  path: string;
  body: any;
}

/**
 * The bundled service on an ephemeral port, recording every request (method, path, JSON body)
 * and letting a test inspect the stored state after each mutation.
 */
export async function recordingServer(
  dataDir: string,
  /** `acceptKeys`: the keys accepted now (a test rotates or revokes by changing the set). */
  opts: { apiKey?: string; acceptKeys?: Set<string> } = {},
) {
  const store = SqliteStore.open(dataDir);
  const app = createEdgeApp({ store, apiKey: opts.apiKey });
  const refused = (req: Request): Response | undefined => {
    if (!opts.acceptKeys) return undefined;
    const token = /^Bearer\s+(.+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
    if (token !== undefined && opts.acceptKeys.has(token)) return undefined;
    const body = {
      error_code: "ERR_EDGE_401",
      status_code: 401,
      msg: "the API key is not valid",
      details: {},
    };
    return Response.json(body, { status: 401 });
  };
  const requests: RecordedRequest[] = [];
  const afterMutation: Array<(r: RecordedRequest) => void | Promise<void>> = [];
  /** Consulted before the service: a fault answers instead of it (and is recorded as sent). */
  const faults: Array<(r: { method: string; path: string }) => Response | undefined> = [];
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      {
        hostname: "127.0.0.1",
        port: 0,
        fetch: async (req: Request) => {
          const text = req.method === "GET" || req.method === "DELETE" ? "" : await req.clone().text();
          const path = new URL(req.url).pathname;
          const fault =
            refused(req) ?? faults.map((f) => f({ method: req.method, path })).find((r) => r !== undefined);
          const res = fault ?? (await app.fetch(req));
          const record = {
            method: req.method,
            path,
            body: text ? JSON.parse(text) : undefined,
          };
          requests.push(record);
          if (req.method !== "GET") for (const f of afterMutation) await f(record);
          return res;
        },
      },
      () => resolve(s),
    );
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    store,
    service: new EdgeService(store),
    client: new EdgeClient(httpTransport({ baseUrl: url, apiKey: opts.apiKey })),
    requests,
    afterMutation,
    faults,
    /** Mutating requests only (what changed the server). */
    mutations: () => requests.filter((r) => r.method !== "GET"),
    reset: () => {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          store.close();
          // The data directory is the server's (every caller makes a fresh temp dir for it).
          rmSync(dataDir, { recursive: true, force: true });
          resolve();
        });
        (server as any).closeAllConnections?.();
      }),
  };
}

export type RecordingServer = Awaited<ReturnType<typeof recordingServer>>;

/** A genuine server fault in the API's error shape (500: never retried by the transport). */
export function serverFault(msg = "injected fault"): Response {
  return Response.json(
    { error_code: "ERR_EDGE_500", status_code: 500, msg, details: { operation_id: "op_fault" } },
    { status: 500 },
  );
}

/** A stack of the spec-driven program pointed at a service URL. */
export async function specStack(
  ws: { dir: string; stateDir: string },
  baseUrl: string,
  stackName = "test",
): Promise<Stack> {
  const stack = await engine.directoryStack({ workDir: ws.dir, stackName, stateDir: ws.stateDir });
  await stack.setConfig("edge:baseUrl", { value: baseUrl });
  return stack;
}

export async function setSpec(stack: Stack, spec: unknown): Promise<void> {
  await stack.setConfig("spec", { value: JSON.stringify(spec) });
}

export const quiet = { color: "never" as const };

/**
 * The route of the lifecycle tables (both faces, every language): several modules, a header map,
 * unordered policy ids, a case-folded webhook provider and a config secret (`webhookSecret`).
 */
export const LIFECYCLE_ROUTE = {
  matchType: "path_prefix",
  match: "/api",
  description: "public API",
  backend: { backendId: "bkd_1" },
  circuitBreaker: { trippedDuration: 30, numBuckets: 10, errorThresholdPercentage: 0.5 },
  compression: {},
  requestHeaders: { add: { "X-Foo": "bar" }, remove: ["Cookie"] },
  ipRestriction: { ipPolicyIds: ["ipp_b", "ipp_a"] },
  webhookVerification: { provider: "GitHub", secret: "secret:webhookSecret" },
};

/**
 * `pulumi stack export` as a user runs it (secrets stay encrypted). No test's state holds a private
 * key in clear (provider/config.ts, the one rule of both faces): every export is checked for one.
 */
export async function stateExport(stack: Stack, stateDir: string): Promise<string> {
  const { execFileSync } = await import("node:child_process");
  const exported = execFileSync(
    join(engine.PULUMI_BIN, "pulumi"),
    ["stack", "export", "--stack", stack.name],
    {
      cwd: stack.workspace.workDir,
      env: { ...process.env, ...engine.engineEnv({ stateDir }) },
      encoding: "utf8",
    },
  );
  if (holdsPrivateKey(exported))
    throw new Error(`the exported state of stack ${stack.name} holds a private key in clear`);
  return exported;
}

/** Every file of a file backend (state, backups, history). */
export function stateFiles(stateDir: string): string[] {
  const { readdirSync, statSync } = require("node:fs") as typeof import("node:fs");
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(stateDir);
  return out;
}

/** Every form a secret could take in a file: as is, base64, hex. */
const forms = (secret: string) => [
  secret,
  Buffer.from(secret).toString("base64"),
  Buffer.from(secret).toString("base64url"),
  Buffer.from(secret).toString("hex"),
];

/**
 * A backend file's text, less the copy of the stack's config file that the engine writes into
 * each update's history record: a key typed without `--secret` is in Pulumi.<stack>.yaml as
 * typed, which no provider can change. Everything else (checkpoints, backups) must be clean.
 */
export function backendText(file: string): string {
  const text = readFileSync(file, "utf8");
  if (!file.endsWith(".history.json")) return text;
  const { config: _config, ...rest } = JSON.parse(text) as Record<string, unknown>;
  return JSON.stringify(rest);
}

/** No form of `secret` (as is, base64, hex) in any of `texts`. */
export function expectNowhere(secret: string, texts: string[]) {
  for (const text of texts) for (const form of forms(secret)) expect(text).not.toContain(form);
}
