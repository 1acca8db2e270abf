/**
 * Engine test support: programs copied into a work directory inside the repository (so that
 * `pulumi-edge` and `@pulumi/pulumi` resolve from the root node_modules, as in a user's
 * project), one state directory per test file, and a recording edge server.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type { Stack } from "@pulumi/pulumi/automation";
import { EdgeClient } from "../../../sdk/client";
import { createEdgeApp } from "../../../sdk/service/app";
import { EdgeService } from "../../../sdk/service/service";
import { Store } from "../../../sdk/service/store";
import { httpTransport } from "../../../sdk/transport";

const engine = require("../../../scripts/engine.js") as typeof import("../../../scripts/engine.js");

export const ROOT = engine.ROOT;
export const WORK_ROOT = join(ROOT, ".test-work");

/** A fresh directory for one test file: a copy of the fixture program and a state directory. */
export function workspace(
  fixture: string,
  label: string,
): { dir: string; stateDir: string; cleanup(): void } {
  mkdirSync(WORK_ROOT, { recursive: true });
  const base = mkdtempSync(join(WORK_ROOT, `${label}-`));
  const dir = join(base, "program");
  cpSync(join(__dirname, "..", "fixtures", fixture), dir, { recursive: true });
  return {
    dir,
    stateDir: join(base, "state"),
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

export interface RecordedRequest {
  method: string;
  path: string;
  body: any;
}

/**
 * The bundled service on an ephemeral port, recording every request (method, path, JSON body)
 * and letting a test inspect the stored state after each mutation.
 */
export async function recordingServer(dataDir: string, opts: { apiKey?: string } = {}) {
  const store = Store.open(dataDir);
  const app = createEdgeApp({ store, apiKey: opts.apiKey });
  const requests: RecordedRequest[] = [];
  const afterMutation: Array<(r: RecordedRequest) => void> = [];
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      {
        hostname: "127.0.0.1",
        port: 0,
        fetch: async (req: Request) => {
          const text = req.method === "GET" || req.method === "DELETE" ? "" : await req.clone().text();
          const res = await app.fetch(req);
          const record = {
            method: req.method,
            path: new URL(req.url).pathname,
            body: text ? JSON.parse(text) : undefined,
          };
          requests.push(record);
          if (req.method !== "GET") for (const f of afterMutation) f(record);
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
    /** Mutating requests only (what changed the server). */
    mutations: () => requests.filter((r) => r.method !== "GET"),
    reset: () => {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          store.close();
          resolve();
        });
        (server as any).closeAllConnections?.();
      }),
  };
}

export type RecordingServer = Awaited<ReturnType<typeof recordingServer>>;

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

/** `pulumi stack export` as a user runs it (secrets stay encrypted). */
export async function stateExport(stack: Stack, stateDir: string): Promise<string> {
  const { execFileSync } = await import("node:child_process");
  return execFileSync(join(engine.PULUMI_BIN, "pulumi"), ["stack", "export", "--stack", stack.name], {
    cwd: stack.workspace.workDir,
    env: { ...process.env, ...engine.engineEnv({ stateDir }) },
    encoding: "utf8",
  });
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
