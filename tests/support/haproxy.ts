/**
 * A real HAProxy for tests, started from a configuration the docs ship (deploy/haproxy.cfg, or
 * deploy/haproxy-tls.cfg for TLS on both hops) with only its addresses changed: the frontend's
 * port, the replicas' ports, the stats socket, and the TLS configuration's certificate files.
 * Debian's `haproxy` package (scripts/provision-haproxy.sh installs it). Server state is read
 * from the stats socket, as an operator reads it; the log (one line per request, on stdout) is
 * kept for the figures a test reports (retries, redispatches).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { watch, type Watched } from "./command";
import { scaled } from "./machine";

export const HAPROXY_CONFIG = path.join(__dirname, "../../deploy/haproxy.cfg");
export const HAPROXY_TLS_CONFIG = path.join(__dirname, "../../deploy/haproxy-tls.cfg");
/** The certificate files deploy/haproxy-tls.cfg names, as shipped. */
const TLS_FILES = {
  frontendPem: "/etc/haproxy/certs/edge-api.pem",
  replicasCa: "/etc/haproxy/edge-replicas-ca.pem",
} as const;

/** Where this machine's copies of the TLS configuration's files are. */
export interface HaproxyTlsFiles {
  /** The clients' certificate, its chain and its key, in one PEM file (`bind ... ssl crt`). */
  frontendPem: string;
  /** The CA that signs the replicas' certificates (`server ... ca-file`). */
  replicasCa: string;
}

/** Lines of deploy/haproxy-tls.cfg that deploy/haproxy.cfg has not, each with the comment above it. */
const TLS_ONLY = /^\s*(ssl-default-\S+|default-server ssl) /;

/**
 * A configuration from `global` on, with what may differ between the plain and the TLS files
 * left out: the TLS-only lines (and the comments above them), the bind's address and options,
 * the servers' addresses. The two shipped files must give the same lines: one set of health and
 * retry rules, tested by both rolling restarts.
 */
export function sharedSections(text: string): string[] {
  const out: string[] = [];
  for (const line of text.slice(text.search(/^global$/m)).split("\n")) {
    const bind = /^\s*bind /.test(line);
    if (bind || TLS_ONLY.test(line)) {
      while (out.length > 0 && /^\s*#/.test(out[out.length - 1]!)) out.pop();
      if (bind) out.push("    bind <address>");
      continue;
    }
    out.push(line.replace(/^(\s*server \S+) \S+$/, "$1 <address>"));
  }
  return out;
}
const PROVISION = path.join(__dirname, "../../scripts/provision-haproxy.sh");

/** The haproxy binary, or why there is none and whether it could be installed here. */
export type HaproxyFound = { bin: string } | { bin: undefined; installable: boolean; why: string };

/**
 * Where HAProxy is. Asks scripts/provision-haproxy.sh --check, so that the test and CI agree on
 * what "cannot be installed" means (exit 3: no root, no password-less sudo, or no apt-get).
 */
export function findHaproxy(): HaproxyFound {
  for (const bin of ["/usr/sbin/haproxy", "/usr/local/sbin/haproxy"]) {
    if (fs.existsSync(bin)) return { bin };
  }
  const which = spawnSync("sh", ["-c", "command -v haproxy"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim()) return { bin: which.stdout.trim() };
  const check = spawnSync("bash", [PROVISION, "--check"], { encoding: "utf8" });
  const said = `${check.stdout}${check.stderr}`.trim();
  return { bin: undefined, installable: check.status !== 3, why: said };
}

/**
 * A free loopback port outside the kernel's ephemeral range, for a server that is stopped and
 * started again on its port, as a deployment's replica is (8080). A port from the ephemeral
 * range (port 0's) is free again once its server stops, and any outgoing connection on the
 * machine may take it as its local port meanwhile: the restart then fails with EADDRINUSE
 * (seen on the shared test machine, HAProxy's own health checks among those connections).
 */
export async function fixedPort(): Promise<number> {
  const range = fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/);
  const top = Math.min(Number(range[0]) || 32768, 32768);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10000 + Math.floor(Math.random() * (top - 10000));
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once("error", () => resolve(false));
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free loopback port found from 10000 to ${top}`);
}

export interface HaproxyPorts {
  /** The frontend's port (loopback). */
  frontend: number;
  /**
   * The replicas' ports, in the order of the shipped configuration's `server` lines; fewer than
   * it has leaves the rest out (a deployment of fewer replicas deletes those lines).
   */
  servers: readonly number[];
}

/**
 * The shipped configuration with the addresses of this machine: each substitution must match
 * exactly as many places as the file has, so a reshaped file fails here rather than run unchanged.
 */
export function localConfig(
  text: string,
  ports: HaproxyPorts,
  statsSocket: string,
  tls?: HaproxyTlsFiles,
): string {
  const source = tls ? HAPROXY_TLS_CONFIG : HAPROXY_CONFIG;
  const lines = text.match(/^(\s*)server (\S+) \S+$/gm)?.length ?? 0;
  if (ports.servers.length > lines) {
    throw new Error(`${source}: ${lines} server lines, fewer than the ${ports.servers.length} replicas`);
  }
  let kept = 0;
  text = text.replace(/^(\s*)server (\S+) \S+\n/gm, (line) => (kept++ < ports.servers.length ? line : ""));
  const replaceAll = (re: RegExp, expected: number, by: (i: number) => string, what: string) => {
    let i = 0;
    const out = text.replace(re, () => by(i++));
    if (i !== expected) {
      throw new Error(`${source}: expected ${expected} ${what}, found ${i}: the test cannot run it`);
    }
    text = out;
  };
  // The address only: the TLS file's bind goes on with its `ssl crt` options.
  replaceAll(/^(\s*)bind \S+/gm, 1, () => `    bind 127.0.0.1:${ports.frontend}`, "bind line");
  replaceAll(
    /^(\s*)server (\S+) \S+$/gm,
    ports.servers.length,
    (i) => `    server edge${i + 1} 127.0.0.1:${ports.servers[i]}`,
    "server lines",
  );
  replaceAll(/^(\s*)stats socket \S+/gm, 1, () => `    stats socket ${statsSocket}`, "stats socket");
  if (tls) {
    for (const name of Object.keys(TLS_FILES) as Array<keyof HaproxyTlsFiles>) {
      const shipped = TLS_FILES[name];
      replaceAll(
        new RegExp(` ${shipped.replace(/[.]/g, "\\.")}(?= |$)`, "gm"),
        1,
        () => ` ${tls[name]}`,
        shipped,
      );
    }
  }
  return text;
}

/** One request as HAProxy logged it (option httplog). */
export interface HaproxyLogLine {
  server: string;
  status: number;
  /** Retries of this request (%rc). */
  retries: number;
  /** Whether one of them went to another server ("+" before %rc). */
  redispatched: boolean;
  /** Termination state (%tsc), "----" for a normal end. */
  termination: string;
  method: string;
  path: string;
}

// ... edge_api edge_replicas/edge2 0/0/0/1/1 201 412 - - ---- 7/7/6/2/0 0/0 "POST /edges/https HTTP/1.1"
const LOG_LINE =
  /\S+ \S+\/(\S+) -?\d+\/-?\d+\/-?\d+\/-?\d+\/-?\d+ (-?\d+) \S+ \S+ \S+ (\S{4}) \d+\/\d+\/\d+\/\d+\/(\+?)(\d+) \d+\/\d+ "(\S+) (\S+)/;

export function parseLogLine(line: string): HaproxyLogLine | undefined {
  const m = LOG_LINE.exec(line);
  if (!m) return undefined;
  return {
    server: m[1]!,
    status: Number(m[2]),
    termination: m[3]!,
    redispatched: m[4] === "+",
    retries: Number(m[5]),
    method: m[6]!,
    path: m[7]!,
  };
}

/** A server of the backend as "show stat" reports it. */
export interface ServerStat {
  name: string;
  /** UP, DOWN, "UP 1/2" (going down), "DOWN 1/2" (coming up), MAINT, no check... */
  status: string;
  /** Sessions this server has taken since HAProxy started. */
  sessions: number;
}

export interface Haproxy {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The backend's servers, asked on the stats socket. */
  servers(): Promise<ServerStat[]>;
  /** The request lines logged so far. */
  requests(): HaproxyLogLine[];
}

/** One command on the stats socket, its whole answer. */
export function askSocket(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = "";
    const socket = net.connect(socketPath, () => socket.end(`${command}\n`));
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      answer += d;
    });
    socket.once("error", reject);
    socket.once("close", () => resolve(answer));
  });
}

/** The servers of the proxy `proxy` (a backend or a listen section), as "show stat" reports them. */
export async function serverStats(socketPath: string, proxy: string): Promise<ServerStat[]> {
  const csv = await askSocket(socketPath, "show stat");
  const [header, ...rows] = csv.replace(/^# /, "").trim().split("\n");
  const cols = header!.split(",");
  const at = (name: string) => cols.indexOf(name);
  return rows
    .map((r) => r.split(","))
    .filter((r) => r[at("pxname")] === proxy && !["BACKEND", "FRONTEND"].includes(r[at("svname")]!))
    .map((r) => ({
      name: r[at("svname")]!,
      status: r[at("status")]!,
      sessions: Number(r[at("stot")]),
    }));
}

/** A running HAProxy: its process, its output, and its stats socket. */
export interface RunningHaproxy extends Watched<ChildProcess> {
  socketPath: string;
}

/**
 * Writes `config` (made from the shipped file `source`) into `dir`, checks it (`haproxy -c`),
 * then runs HAProxy in the foreground (`-db`) and waits until its stats socket, `socketPath`,
 * answers.
 */
export async function runHaproxy(
  bin: string,
  dir: string,
  source: string,
  config: string,
  socketPath: string,
  started: Set<ChildProcess>,
): Promise<RunningHaproxy> {
  const cfg = path.join(dir, path.basename(source));
  fs.writeFileSync(cfg, config);
  try {
    execFileSync(bin, ["-c", "-q", "-f", cfg], { stdio: "pipe", encoding: "utf8" });
  } catch (e) {
    const err = e as { stderr?: string; stdout?: string };
    throw new Error(`haproxy -c refused ${source}:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
  const child = spawn(bin, ["-db", "-f", cfg], { stdio: ["ignore", "pipe", "pipe"] });
  const watched = watch(child, started);
  let exited = false;
  void watched.exit.then(() => (exited = true));
  // The socket exists once HAProxy has parsed its configuration and bound its listeners.
  const deadline = performance.now() + scaled(30_000);
  while (!fs.existsSync(socketPath)) {
    const said = () => `${watched.stderr()}${watched.stdout()}`;
    if (exited) throw new Error(`haproxy exited before listening:\n${said()}`);
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`haproxy made no stats socket within ${scaled(30_000)} ms:\n${said()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return { ...watched, socketPath };
}

/**
 * HAProxy with the shipped deploy/haproxy.cfg, its addresses those of `ports`; with `tls`,
 * deploy/haproxy-tls.cfg with those certificate files. `dir` holds the configuration and the socket.
 */
export async function startHaproxy(
  bin: string,
  dir: string,
  ports: HaproxyPorts,
  started: Set<ChildProcess>,
  tls?: HaproxyTlsFiles,
): Promise<Haproxy> {
  const socketPath = path.join(dir, "admin.sock");
  const source = tls ? HAPROXY_TLS_CONFIG : HAPROXY_CONFIG;
  const config = localConfig(fs.readFileSync(source, "utf8"), ports, socketPath, tls);
  const { child, stdout, stderr, exit } = await runHaproxy(bin, dir, source, config, socketPath, started);
  const servers = () => serverStats(socketPath, "edge_replicas");
  return {
    child,
    url: `${tls ? "https" : "http"}://127.0.0.1:${ports.frontend}`,
    stdout,
    stderr,
    exit,
    servers,
    requests: () =>
      stdout()
        .split("\n")
        .map(parseLogLine)
        .filter((l): l is HaproxyLogLine => l !== undefined),
  };
}
