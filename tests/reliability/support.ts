/**
 * Support of the reliability suite: a seeded PRNG, an up-to-date `dist` (the engine loads the
 * provider from it), the standalone CLI as a child process, and a fault-injecting HTTP proxy.
 * Only loopback addresses; every wait is bounded.
 */
import { programWorkspace as copyProgram, type Workspace } from "../support/workspace";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import * as path from "node:path";
import { killClis } from "../support/edge-service";

export { CLI, ROOT } from "../support/edge-service";

// ---------------------------------------------------------------- determinism

import { prng } from "../support/prng";

export { prng };

/** Seeds of property runs: fixed unless FC_SEED is set (to replay or widen a run). */
export const FC_SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20260101;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `cond` every `everyMs` until it holds or `timeoutMs` passes (then throws `what`). */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 60_000, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------- dist and the standalone CLI

export { type Cli, ensureBuilt, NO_DRAIN, spawnCli, startCli } from "../support/edge-service";

const children = new Set<ChildProcess>();

/** Kills (SIGKILL, by pid) every child this module or the CLI helper started, and what runs under it. */
export function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) killEngine(child);
  }
  children.clear();
  killClis();
}

// ---------------------------------------------------------------- the fault-injecting proxy

/**
 * What the proxy does with one request:
 * - `pass`: forward, relay the answer;
 * - `429` / `429-1s`: answer 429 with `Retry-After: 0` / `1` without forwarding (a rate limiter);
 * - `503`: answer 503 without forwarding (a load balancer with no healthy upstream);
 * - `reset-before`: destroy the client's connection without forwarding;
 * - `reset-after`: forward, let the server finish, then destroy the client's connection
 *   (the server acted; the client never learns it);
 * - `504-after`: forward, let the server finish, answer 504 instead (a gateway timing out late);
 * - `stall-before`: hold the request, never forward it (the client times out);
 * - `stall-after`: forward, let the server finish, never answer (the client times out);
 * - `slow`: forward and answer after a delay shorter than the client's timeout.
 */
export type FaultAction =
  | "pass"
  | "429"
  | "429-1s"
  | "503"
  | "reset-before"
  | "reset-after"
  | "504-after"
  | "stall-before"
  | "stall-after"
  | "slow";

export const FAULTS: FaultAction[] = [
  "429",
  "429-1s",
  "503",
  "reset-before",
  "reset-after",
  "504-after",
  "stall-before",
  "stall-after",
  "slow",
];

export interface ProxiedRequest {
  seq: number;
  method: string;
  path: string;
  action: FaultAction;
  /** Status the server answered (undefined when the request was not forwarded). */
  upstreamStatus?: number;
  /** The Authorization header the client sent. */
  authorization?: string;
  /** The Idempotency-Key header the client sent. */
  idempotencyKey?: string;
}

export interface FaultProxyOptions {
  /**
   * Where requests are forwarded, e.g. http://127.0.0.1:1234; several: in turn, one request each
   * (a round-robin load balancer in front of replicas).
   */
  target: string | string[];
  /** Seed of the schedule: whether the n-th request is faulted is the same in every run. */
  seed: number;
  /** Probability that a request is faulted (0: a recording pass-through proxy). */
  rate: number;
  /** The faults to choose from (default: all of FAULTS). */
  actions?: FaultAction[];
  /** At most this many faults in a row for one method + path (then one passes). Default 2. */
  maxConsecutive?: number;
  /** Delay of `slow`. Default 300 ms. */
  slowMs?: number;
  /**
   * Called for every request before the schedule; a returned action overrides it, and a
   * returned promise holds the request (forwarding it or not, per the action) until it settles.
   */
  intercept?: (req: {
    seq: number;
    method: string;
    path: string;
  }) => FaultAction | { action: FaultAction; hold: Promise<void>; holdWhere: "before" | "after" } | undefined;
}

export interface FaultProxy {
  url: string;
  log: ProxiedRequest[];
  /**
   * The service unreachable for `ms` (connection refused): open connections are cut and nothing
   * listens until then. Resolves when it listens again.
   */
  outage(ms: number): Promise<void>;
  /** Counts of each action taken. */
  counts(): Record<FaultAction, number>;
  /** Statuses the server answered. */
  upstreamStatuses(): number[];
  close(): Promise<void>;
}

export async function faultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  const targets = (Array.isArray(opts.target) ? opts.target : [opts.target]).map((t) => new URL(t));
  let turn = 0;
  const random = prng(opts.seed);
  const actions = opts.actions ?? FAULTS;
  const maxConsecutive = opts.maxConsecutive ?? 2;
  const slowMs = opts.slowMs ?? 300;
  const inARow = new Map<string, number>();
  const log: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const upstreamAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let seq = 0;
  let faults = 0;

  const schedule = (method: string, p: string, body: Buffer): FaultAction => {
    // Two draws per request whatever the outcome, so the n-th request always gets the same action.
    const faulted = random() < opts.rate;
    random(); // (the second draw of earlier versions, kept so that seeds keep their schedules)
    // One request and its retries share a key (same method, path and body).
    const key = `${method} ${p} ${createHash("sha256").update(body).digest("base64")}`;
    const row = inARow.get(key) ?? 0;
    if (!faulted || row >= maxConsecutive) {
      inARow.set(key, 0);
      return "pass";
    }
    inARow.set(key, row + 1);
    // Faults take the actions in turn: every kind occurs once there are as many faults as kinds.
    return actions[faults++ % actions.length]!;
  };

  const server = http.createServer((req, res) => {
    const n = ++seq;
    const method = req.method ?? "GET";
    const p = (req.url ?? "/").split("?")[0]!;
    const record: ProxiedRequest = {
      seq: n,
      method,
      path: req.url ?? "/",
      action: "pass",
      authorization: req.headers.authorization,
      idempotencyKey: req.headers["idempotency-key"] as string | undefined,
    };
    log.push(record);

    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => undefined);
    req.on("end", () => {
      const intercepted = opts.intercept?.({ seq: n, method, path: p });
      const action =
        typeof intercepted === "string"
          ? intercepted
          : (intercepted?.action ?? schedule(method, p, Buffer.concat(chunks)));
      const hold = typeof intercepted === "object" ? intercepted : undefined;
      record.action = action;
      void (async () => {
        if (hold?.holdWhere === "before") {
          await hold.hold;
          if (req.socket.destroyed) return; // the client went away: it never reached the server
        }
        const errorBody = (status: number, extra: Record<string, string> = {}) => {
          if (res.destroyed) return;
          res.writeHead(status, { "content-type": "text/plain", ...extra });
          res.end(`proxy: ${status}`);
        };
        switch (action) {
          case "429":
            return errorBody(429, { "retry-after": "0" });
          case "429-1s":
            return errorBody(429, { "retry-after": "1" });
          case "503":
            return errorBody(503);
          case "reset-before":
            return req.socket.destroy();
          case "stall-before":
            return; // never forwarded, never answered: the client gives up
        }
        let upstream: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
        try {
          upstream = await forward(method, req.url ?? "/", req.headers, Buffer.concat(chunks));
        } catch {
          return errorBody(502);
        }
        record.upstreamStatus = upstream.status;
        if (hold?.holdWhere === "after") await hold.hold;
        switch (action) {
          case "reset-after":
            return req.socket.destroy();
          case "504-after":
            return errorBody(504);
          case "stall-after":
            return; // the server acted; the answer never comes
          case "slow":
            await sleep(slowMs);
            break;
        }
        if (res.destroyed) return;
        res.writeHead(upstream.status, upstream.headers);
        res.end(upstream.body);
      })();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  const forward = (method: string, url: string, headers: http.IncomingHttpHeaders, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const h = { ...headers };
      delete h.connection;
      delete h["keep-alive"];
      const target = targets[turn++ % targets.length]!;
      const up = http.request(
        {
          host: target.hostname,
          port: target.port,
          method,
          path: url,
          headers: h, // Host kept: the service builds uris on the origin the client used
          agent: upstreamAgent,
          timeout: 120_000,
        },
        (r) => {
          const out: Buffer[] = [];
          r.on("data", (c: Buffer) => out.push(c));
          r.on("end", () => {
            const rh = { ...r.headers };
            delete rh.connection;
            delete rh["keep-alive"];
            delete rh["transfer-encoding"];
            rh["content-length"] = String(Buffer.concat(out).length);
            resolve({ status: r.statusCode ?? 502, headers: rh, body: Buffer.concat(out) });
          });
          r.on("error", reject);
        },
      );
      up.on("timeout", () => up.destroy(new Error("upstream timeout")));
      up.on("error", reject);
      up.end(body);
    });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    log,
    async outage(ms: number) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      await sleep(ms);
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
    counts() {
      const out = Object.fromEntries(["pass", ...FAULTS].map((a) => [a, 0])) as Record<FaultAction, number>;
      for (const r of log) out[r.action]++;
      return out;
    },
    upstreamStatuses: () => log.flatMap((r) => (r.upstreamStatus === undefined ? [] : [r.upstreamStatus])),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        upstreamAgent.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------- engine programs

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
export { engine };

/** A copy of tests/reliability/fixtures/program and a state dir (see tests/support/workspace.ts). */
export const programWorkspace = (label: string): Workspace =>
  copyProgram(path.join(__dirname, "fixtures", "program"), `reliability-${label}`);

/** A stack of the reliability program pointed at a service URL (optionally with an API key as a secret). */
export async function programStack(
  ws: { dir: string; stateDir: string },
  baseUrl: string,
  opts: { stackName?: string; apiKey?: string; requestTimeoutMs?: number } = {},
) {
  // One `config set-all` for every setting: a process per setting costs each stack a second.
  return engine.directoryStack({
    workDir: ws.dir,
    stackName: opts.stackName ?? "test",
    stateDir: ws.stateDir,
    config: {
      "edge:baseUrl": { value: baseUrl },
      ...(opts.apiKey ? { "edge:apiKey": { value: opts.apiKey, secret: true } } : {}),
      ...(opts.requestTimeoutMs ? { "edge:requestTimeoutMs": { value: String(opts.requestTimeoutMs) } } : {}),
    },
  });
}

export async function setSpec(
  stack: { setConfig: (k: string, v: { value: string }) => Promise<void> },
  spec: unknown,
) {
  await stack.setConfig("spec", { value: JSON.stringify(spec) });
}

/** The signature key of a secret value in exported state. */
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

export interface StateResource {
  urn: string;
  name: string;
  id: string;
  kind: "route" | "httpsEdge" | "tlsEdge" | "tlsRestriction" | "other";
  inputs: Record<string, any>;
  outputs: Record<string, any>;
}

/**
 * The edge resources of a stack's state (either face), secrets decrypted (`pulumi stack export --show-secrets`:
 * kept in memory, to compare with the server), and its pending operations.
 */
export async function stateOf(
  stack: { name: string; workspace: { workDir: string } },
  stateDir: string,
): Promise<{ resources: StateResource[]; pending: Array<{ type: string; urn: string }> }> {
  const text = execFileSync(
    path.join(engine.PULUMI_BIN, "pulumi"),
    ["stack", "export", "--show-secrets", "--stack", stack.name],
    {
      cwd: stack.workspace.workDir,
      env: { ...process.env, ...engine.engineEnv({ stateDir }) },
      encoding: "utf8",
      timeout: 120_000,
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  const { deployment } = JSON.parse(text, (_k, v) =>
    v && typeof v === "object" && v[SECRET_SIG] !== undefined && typeof v.plaintext === "string"
      ? JSON.parse(v.plaintext)
      : v,
  );
  const resources: StateResource[] = (deployment.resources ?? [])
    // The edge objects the stack manages (not the dynamic face's StackAnchor: no object).
    .filter((r: any) => /^(pulumi-nodejs:dynamic\/edge|edge:index):(?!StackAnchor$)/.test(String(r.type)))
    .map((r: any) => {
      const t = String(r.type);
      const kind = t.includes("HttpsEdgeRoute")
        ? "route"
        : t.includes("TlsEdgeIpRestriction")
          ? "tlsRestriction"
          : t.includes("HttpsEdge")
            ? "httpsEdge"
            : t.includes("TlsEdge")
              ? "tlsEdge"
              : "other";
      return {
        urn: r.urn,
        name: String(r.urn).split("::").pop(),
        id: r.id,
        kind,
        inputs: r.inputs ?? {},
        outputs: r.outputs ?? {},
      };
    });
  const pending = (deployment.pending_operations ?? []).map((p: any) => ({
    type: p.type,
    urn: p.resource?.urn,
  }));
  return { resources, pending };
}

/** `pulumi <args>` as a user runs it (in its own process group: signals meant for the test runner do not reach it). */
export function spawnPulumi(
  args: string[],
  opts: {
    cwd: string;
    stateDir: string;
    stackName?: string;
    env?: Record<string, string>;
    /** Runs the CLI (and all it starts) under this host name, in a UTS namespace of its own (root). */
    hostname?: string;
  },
): {
  child: ChildProcess;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const pulumi = path.join(engine.PULUMI_BIN, "pulumi");
  // `stackName: ""`: a command that takes no stack (`pulumi login`).
  const stack = opts.stackName ?? "test";
  const argv = [...args, ...(stack ? ["--stack", stack] : []), "--non-interactive", "--color", "never"];
  const [command, commandArgs] = opts.hostname
    ? ["unshare", ["--uts", "sh", "-c", 'hostname "$0" && exec "$@"', opts.hostname, pulumi, ...argv]]
    : [pulumi, argv];
  const child = spawn(command, commandArgs, {
    cwd: opts.cwd,
    env: { ...process.env, ...engine.engineEnv({ stateDir: opts.stateDir, extra: opts.env }) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.add(child);
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, output: () => out, exit };
}

/** `pulumi <args>` to its end: its exit code and everything it printed. */
export async function runPulumi(
  args: string[],
  opts: Parameters<typeof spawnPulumi>[1],
): Promise<{ code: number | null; output: string }> {
  const run = spawnPulumi(args, opts);
  const { code } = await run.exit;
  return { code, output: run.output() };
}

/** The command line of a live process ("" once it is gone). */
export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** Every live descendant of `pid` (Linux /proc), children before grandchildren. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the command name, which is in parentheses and may hold spaces.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  for (let frontier = [pid]; frontier.length > 0;) {
    const next = [...parentOf].filter(([, ppid]) => frontier.includes(ppid)).map(([p]) => p);
    out.push(...next);
    frontier = next;
  }
  return out;
}

/**
 * Kills the engine of a `spawnPulumi` child at once, as a hard stop of the machine or container
 * would: the CLI and every process under it (the language host and the provider plugins run in
 * process groups of their own, so signalling the CLI's group is not enough).
 */
export function killEngine(child: ChildProcess): void {
  if (child.pid === undefined) return;
  const all = [child.pid, ...descendants(child.pid)];
  for (const pid of all) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/**
 * After a SIGKILL of the engine: Pulumi's file backend (gocloud fileblob) writes a checkpoint to a
 * temporary file and renames it, but writes its `.attrs` sidecar in place, so a kill can leave an
 * empty `<stack>.json.attrs` and every command then fails with "failed to load checkpoint: EOF".
 * Removing the empty sidecar restores the last complete checkpoint. Returns the files removed.
 */
export function repairEmptyAttrs(stateDir: string): string[] {
  const removed: string[] = [];
  const walk = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith(".json.attrs") && fs.statSync(p).size === 0) {
        fs.rmSync(p);
        removed.push(path.relative(stateDir, p));
      }
    }
  };
  walk(path.join(stateDir, ".pulumi", "stacks"));
  return removed;
}
