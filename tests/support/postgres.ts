/**
 * A throwaway PostgreSQL cluster for tests: Debian's server binaries (`apt-get install
 * postgresql`), `initdb` in a temp directory as an unprivileged user (PostgreSQL refuses to run
 * as root), a free loopback port, trust authentication for the one local user; stopped and
 * removed afterwards. One database per fixture (`createDatabase`).
 */
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "pg";

const PG_ROOT = "/usr/lib/postgresql";
const USER = "edge";

/** The newest installed server's bin directory, or an error that says what to install. */
export function postgresBinDir(): string {
  const versions = fs.existsSync(PG_ROOT)
    ? fs
        .readdirSync(PG_ROOT)
        .filter((v) => fs.existsSync(path.join(PG_ROOT, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      `PostgreSQL server binaries not found (${PG_ROOT}/*/bin/initdb): the service tests run against a real PostgreSQL; install it with "apt-get install -y postgresql" (CI's .ci/run does)`,
    );
  }
  return path.join(PG_ROOT, versions[0]!, "bin");
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface PgCluster {
  port: number;
  dir: string;
  /** URL of a database of this cluster. */
  url(database?: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(): Promise<string>;
  /** pg_ctl restart (fast shutdown: sessions are cut, like a database failover). */
  restart(): void;
  /** The same without blocking this process's event loop (requests keep flowing meanwhile). */
  restartAsync(opts?: { downMs?: number }): Promise<void>;
  stopServer(): void;
  startServer(): void;
  /** Stops the server and removes its directory. */
  destroy(): void;
}

function run(
  bin: string,
  args: string[],
  asUser: string | undefined,
  opts: { timeout?: number } = {},
): string {
  const argv = asUser ? ["runuser", "-u", asUser, "--", bin, ...args] : [bin, ...args];
  return execFileSync(argv[0]!, argv.slice(1), {
    encoding: "utf8",
    stdio: "pipe",
    timeout: opts.timeout ?? 120_000,
  });
}

let databases = 0;

export async function startCluster(
  opts: {
    fsync?: boolean;
    /** More server settings, `-c name=value` each (e.g. track_commit_timestamp: "on"). */
    settings?: Record<string, string>;
  } = {},
): Promise<PgCluster> {
  const bin = postgresBinDir();
  const root = process.getuid?.() === 0;
  const asUser = root ? "nobody" : undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "edge-pg-"));
  if (root) fs.chownSync(dir, 65534, 65534);
  const data = path.join(dir, "data");
  const port = await freePort();
  run(
    path.join(bin, "initdb"),
    ["-D", data, "-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
    asUser,
  );
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c max_connections=200",
    "-c shared_buffers=64MB",
    opts.fsync === false ? "-c fsync=off -c synchronous_commit=off" : "",
    ...Object.entries(opts.settings ?? {}).map(([name, value]) => `-c ${name}=${value}`),
  ].join(" ");
  const pgCtl = (...args: string[]) => run(path.join(bin, "pg_ctl"), ["-D", data, ...args], asUser);
  const start = () => pgCtl("-l", path.join(dir, "log"), "-o", options, "-w", "-t", "60", "start");
  try {
    start();
  } catch (e) {
    const log = fs.existsSync(path.join(dir, "log")) ? fs.readFileSync(path.join(dir, "log"), "utf8") : "";
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not start PostgreSQL: ${(e as Error).message}\n${log}`);
  }
  const url = (database = "postgres") => `postgres://${USER}@127.0.0.1:${port}/${database}`;
  return {
    port,
    dir,
    url,
    async createDatabase() {
      const name = `edge_${process.pid}_${++databases}`;
      const client = new Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    restart() {
      pgCtl("-m", "fast", "-o", options, "-w", "-t", "60", "restart");
    },
    async restartAsync({ downMs = 500 } = {}) {
      const ctl = (...args: string[]) =>
        new Promise<void>((resolve, reject) => {
          const argv = [path.join(bin, "pg_ctl"), "-D", data, ...args];
          const [cmd, ...rest] = asUser ? ["runuser", "-u", asUser, "--", ...argv] : argv;
          execFile(cmd!, rest, { timeout: 120_000 }, (e) => (e ? reject(e) : resolve()));
        });
      await ctl("-m", "fast", "-w", "stop");
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await ctl("-l", path.join(dir, "log"), "-o", options, "-w", "-t", "60", "start");
    },
    stopServer() {
      pgCtl("-m", "fast", "-w", "stop");
    },
    startServer() {
      start();
    },
    destroy() {
      try {
        pgCtl("-m", "immediate", "-w", "stop");
      } catch {
        // already stopped
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let shared: Promise<PgCluster> | undefined;

/**
 * The cluster of this test file (jest gives each file its own module registry): started on first
 * use, removed after the file's last test.
 */
export function sharedCluster(): Promise<PgCluster> {
  shared ??= startCluster({ fsync: false });
  return shared;
}

afterAll(async () => {
  if (shared) (await shared).destroy();
  shared = undefined;
});
