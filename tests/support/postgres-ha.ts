/**
 * The highly available PostgreSQL the docs ship (deploy/postgres-ha/), on one machine: one etcd
 * member, two Patroni nodes and the HAProxy that sends connections to the primary, each started
 * from its shipped file with only its addresses, directories and network changed (each change
 * must find its key or line in the file, so a reshaped file fails here rather than run
 * unchanged). Debian's packages: `patroni`, `python3-etcd`, `etcd-server` (scripts/provision-ha.sh),
 * PostgreSQL's server binaries (provision-postgres.sh), `haproxy` (provision-haproxy.sh).
 *
 * Patroni runs as the `postgres` user when the tests run as root (PostgreSQL refuses root), by
 * `setpriv`, which execs it: the process a test kills is Patroni itself. The postmaster it starts
 * is detached from it (its own session), as a deployment's is: killing a whole node is killing
 * both. Everything is started under one directory; stop() kills what was started, then every
 * process still running from that directory (a backend, a pg_rewind), and removes it.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Client } from "pg";
import { parse, stringify } from "yaml";
import { type Watched, watch } from "./command";
import { fixedPort, runHaproxy, type RunningHaproxy, type ServerStat, serverStats } from "./haproxy";
import { scaled } from "./machine";
import { freePort, postgresBinDir } from "./postgres";

export const HA_DIR = path.join(__dirname, "../../deploy/postgres-ha");
const PROVISION = path.join(__dirname, "../../scripts/provision-ha.sh");

/** Whether Patroni and etcd are here; if not, why, and whether this machine could install them. */
export type HaToolsFound = { found: true } | { found: false; installable: boolean; why: string };

/** Asks scripts/provision-ha.sh --check, so that the test and CI agree on "cannot be installed" (exit 3). */
export function findHaTools(): HaToolsFound {
  const check = spawnSync("bash", [PROVISION, "--check"], { encoding: "utf8" });
  if (check.status === 0) return { found: true };
  return { found: false, installable: check.status !== 3, why: `${check.stdout}${check.stderr}`.trim() };
}

/** Passwords of the roles Patroni makes (given in its environment, as the shipped file says). */
const PASSWORDS = {
  PATRONI_SUPERUSER_PASSWORD: "ha-test-superuser",
  PATRONI_REPLICATION_PASSWORD: "ha-test-replication",
  PATRONI_REWIND_PASSWORD: "ha-test-rewind",
};
const SUPERUSER = "postgres";

/** A member of the Patroni cluster as its REST API (`GET /cluster`) tells it. */
export interface Member {
  name: string;
  /** leader, sync_standby, replica, ... */
  role: string;
  /** running, starting, stopped, ... */
  state: string;
  timeline?: number;
  lag?: number | string;
}

export interface PatroniNode {
  name: string;
  restPort: number;
  pgPort: number;
  dir: string;
  dataDir: string;
  /** Patroni now, while it runs. */
  patroni?: Watched<ChildProcess>;
  /** Everything each Patroni of this node printed, restarts included. */
  log(): string;
}

export interface HaCluster {
  dir: string;
  nodes: readonly PatroniNode[];
  /** The HAProxy in front of the nodes (deploy/postgres-ha/haproxy.cfg): its port, its servers. */
  balancerPort: number;
  balancer: RunningHaproxy;
  /** Its servers (pg1, pg2...), as its stats socket reports them. */
  balancerServers(): Promise<ServerStat[]>;
  /** A URL through the balancer, as `user` (the superuser by default). */
  url(database: string, user?: { name: string; password: string }): string;
  /** The members as the REST API of any running node tells them; [] when none answers. */
  members(): Promise<Member[]>;
  /** The node that holds the leader key and runs, if any. */
  primary(): Promise<PatroniNode | undefined>;
  /** Whether `node`'s REST API answers OPTIONS /primary with 200 (what the balancer checks). */
  answersPrimary(node: PatroniNode): Promise<boolean>;
  /** The PID of `node`'s postmaster (its postmaster.pid). */
  postmasterPid(node: PatroniNode): number;
  /** kill -9 of `node`'s postmaster: PostgreSQL crashes; its Patroni runs on. */
  killPostmaster(node: PatroniNode): void;
  /** kill -9 of `node`'s Patroni and of its postmaster: the node is lost. */
  killNode(node: PatroniNode): Promise<void>;
  /** Starts `node`'s Patroni (again). */
  startNode(node: PatroniNode): void;
  /** What every node's Patroni and the balancer printed, for a failure's story. */
  logs(): string;
  /** Kills everything started and removes the directory. */
  stop(): void;
}

const root = process.getuid?.() === 0;

/** A value at `keys` of the parsed shipped file: it must be there already. */
function setIn(file: string, doc: unknown, keys: readonly string[], value: unknown): void {
  let at: unknown = doc;
  for (const key of keys.slice(0, -1))
    at = at !== null && typeof at === "object" ? Reflect.get(at, key) : undefined;
  const last = keys[keys.length - 1]!;
  if (at === null || typeof at !== "object" || !(last in at)) {
    throw new Error(`${file}: no ${keys.join(".")}: the test cannot run it`);
  }
  Reflect.set(at, last, value);
}

function readYaml(name: string): unknown {
  return parse(fs.readFileSync(path.join(HA_DIR, name), "utf8"));
}

/** The shipped etcd.yml as one member on loopback. */
function etcdConfig(dir: string, client: number, peer: number): string {
  const file = path.join(HA_DIR, "etcd.yml");
  const doc = readYaml("etcd.yml");
  const set = (key: string, value: string) => setIn(file, doc, [key], value);
  set("data-dir", path.join(dir, "etcd"));
  set("listen-peer-urls", `http://127.0.0.1:${peer}`);
  set("initial-advertise-peer-urls", `http://127.0.0.1:${peer}`);
  set("listen-client-urls", `http://127.0.0.1:${client}`);
  set("advertise-client-urls", `http://127.0.0.1:${client}`);
  set("initial-cluster", `etcd1=http://127.0.0.1:${peer}`);
  return stringify(doc);
}

/** The shipped patroni.yml as node `node`, on loopback. */
function patroniConfig(node: PatroniNode, etcdClient: number): string {
  const file = path.join(HA_DIR, "patroni.yml");
  const doc = readYaml("patroni.yml");
  const set = (keys: string, value: unknown) => setIn(file, doc, keys.split("."), value);
  set("name", node.name);
  set("restapi.listen", `127.0.0.1:${node.restPort}`);
  set("restapi.connect_address", `127.0.0.1:${node.restPort}`);
  set("etcd3.hosts", `127.0.0.1:${etcdClient}`);
  set("postgresql.listen", `127.0.0.1:${node.pgPort}`);
  set("postgresql.connect_address", `127.0.0.1:${node.pgPort}`);
  set("postgresql.data_dir", node.dataDir);
  set("postgresql.bin_dir", postgresBinDir());
  set("postgresql.pgpass", path.join(node.dir, "pgpass"));
  set("postgresql.parameters.unix_socket_directories", node.dir);
  // The deployment's network, here loopback.
  const hba: unknown = Reflect.get(Reflect.get(doc as object, "postgresql") as object, "pg_hba");
  const network = "10.0.0.0/24";
  if (!Array.isArray(hba) || !hba.some((l) => String(l).includes(network))) {
    throw new Error(`${file}: no pg_hba line for ${network}: the test cannot run it`);
  }
  set(
    "postgresql.pg_hba",
    hba.map((l) => String(l).replace(network, "127.0.0.1/32")),
  );
  return stringify(doc);
}

/** The shipped haproxy.cfg with loopback addresses: the bind, one server line per node, the socket. */
function balancerConfig(text: string, port: number, nodes: readonly PatroniNode[], socket: string): string {
  const file = path.join(HA_DIR, "haproxy.cfg");
  const replaceAll = (re: RegExp, expected: number, by: (i: number) => string, what: string) => {
    let i = 0;
    const out = text.replace(re, () => by(i++));
    if (i !== expected)
      throw new Error(`${file}: expected ${expected} ${what}, found ${i}: the test cannot run it`);
    text = out;
  };
  replaceAll(/^(\s*)bind \S+$/gm, 1, () => `    bind 127.0.0.1:${port}`, "bind line");
  replaceAll(
    /^(\s*)server (\S+) \S+ check port \d+$/gm,
    nodes.length,
    (i) => `    server ${nodes[i]!.name} 127.0.0.1:${nodes[i]!.pgPort} check port ${nodes[i]!.restPort}`,
    "server lines",
  );
  replaceAll(/^(\s*)stats socket \S+/gm, 1, () => `    stats socket ${socket}`, "stats socket");
  return text;
}

/** Polls `check` until it gives a value; past `boundMs`, fails saying `what` (and `story()`). */
export async function until<T>(
  what: string,
  boundMs: number,
  check: () => Promise<T | undefined> | T | undefined,
  story: () => string | Promise<string> = () => "",
): Promise<T> {
  const deadline = performance.now() + boundMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) {
      throw new Error(`waited ${Math.round(boundMs / 1000)} s for ${what}\n${await story()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function getJson(url: string, method = "GET"): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { method, signal: AbortSignal.timeout(2000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

/** Processes whose command line names `dir` (PostgreSQL's backends, a pg_rewind of a node there). */
function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      if (cmdline.includes(dir) && !/^\d+ \(.*\) Z /s.test(stat)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const kill9 = (pid: number | undefined) => {
  // Never 0 or below: kill(0) signals this whole process group.
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
};

/**
 * etcd, then both Patroni nodes at once (one bootstraps, the other clones it and becomes its
 * synchronous standby), then the balancer, once it routes to the primary alone (HAProxy starts
 * with every server UP), then `database` owned by `user`, made through it.
 */
export async function startHaCluster(
  dir: string,
  haproxyBin: string,
  started: Set<ChildProcess>,
  service: { database: string; user: string; password: string },
): Promise<HaCluster> {
  try {
    return await launch(dir, haproxyBin, started, service);
  } catch (e) {
    // The postmasters run detached from what started them: stopped by the directory they run in.
    stopUnder(dir);
    throw e;
  }
}

/**
 * Kills every process that runs from `dir` (etcd, Patroni, PostgreSQL and its backends, HAProxy:
 * each names its file or directory there on its command line), then removes it.
 */
export function stopUnder(dir: string): void {
  for (const pid of processesUnder(dir)) kill9(pid);
  fs.rmSync(dir, { recursive: true, force: true });
}

async function launch(
  dir: string,
  haproxyBin: string,
  started: Set<ChildProcess>,
  service: { database: string; user: string; password: string },
): Promise<HaCluster> {
  if (root) fs.chmodSync(dir, 0o711);
  const [etcdClient, etcdPeer, balancerPort] = await Promise.all([freePort(), freePort(), freePort()]);
  // Outside the ephemeral range: a node killed and started again takes its ports back.
  const ports = await Promise.all(Array.from({ length: 4 }, () => fixedPort()));
  const logs = new Map<string, string>();
  const nodes: PatroniNode[] = [1, 2].map((n) => {
    const name = `pg${n}`;
    const nodeDir = path.join(dir, name);
    return {
      name,
      restPort: ports[(n - 1) * 2]!,
      pgPort: ports[(n - 1) * 2 + 1]!,
      dir: nodeDir,
      dataDir: path.join(nodeDir, "data"),
      log: () => logs.get(name) ?? "",
    };
  });

  const etcdFile = path.join(dir, "etcd.yml");
  fs.writeFileSync(etcdFile, etcdConfig(dir, etcdClient, etcdPeer));
  const etcd = watch(
    spawn("etcd", ["--config-file", etcdFile], { stdio: ["ignore", "pipe", "pipe"] }),
    started,
  );
  await until(
    "etcd to answer /health",
    scaled(60_000),
    async () =>
      (await getJson(`http://127.0.0.1:${etcdClient}/health`).catch(() => undefined))?.status === 200
        ? true
        : undefined,
    () => etcd.stderr(),
  );

  for (const node of nodes) {
    fs.mkdirSync(node.dir, { mode: 0o700 });
    fs.writeFileSync(path.join(node.dir, "patroni.yml"), patroniConfig(node, etcdClient));
    if (root) {
      const { uid, gid } = postgresUser();
      fs.chownSync(node.dir, uid, gid);
      fs.chownSync(path.join(node.dir, "patroni.yml"), uid, gid);
    }
  }
  const startNode = (node: PatroniNode) => {
    const cfg = path.join(node.dir, "patroni.yml");
    const argv = root
      ? ["setpriv", "--reuid", SUPERUSER, "--regid", SUPERUSER, "--init-groups", "patroni", cfg]
      : ["patroni", cfg];
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: node.dir,
      env: { ...process.env, ...PASSWORDS },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const append = (d: Buffer) => logs.set(node.name, (logs.get(node.name) ?? "") + d.toString("utf8"));
    child.stdout!.on("data", append);
    child.stderr!.on("data", append);
    node.patroni = watch(child, started);
  };

  const members = async (): Promise<Member[]> => {
    for (const node of nodes) {
      const answer = await getJson(`http://127.0.0.1:${node.restPort}/cluster`).catch(() => undefined);
      const list: unknown =
        answer && typeof answer.json === "object" && answer.json !== null
          ? Reflect.get(answer.json, "members")
          : undefined;
      if (Array.isArray(list))
        return list.filter((m): m is Member => typeof m === "object" && m !== null && "name" in m);
    }
    return [];
  };
  const story = async () =>
    `members: ${JSON.stringify(await members())}\n${nodes.map((n) => `---- ${n.name}\n${n.log().slice(-4000)}`).join("\n")}`;

  for (const node of nodes) startNode(node);
  await until(
    "both Patroni nodes to run, one the leader, the other its synchronous standby",
    scaled(180_000),
    async () => {
      const ms = await members();
      const ok =
        ms.length === 2 &&
        ms.every((m) => m.state === "running" || m.state === "streaming") &&
        ms.some((m) => m.role === "leader") &&
        ms.some((m) => m.role === "sync_standby");
      return ok ? true : undefined;
    },
    story,
  );

  const balancerSocket = path.join(dir, "postgres-balancer.sock");
  const shipped = path.join(HA_DIR, "haproxy.cfg");
  const balancer = await runHaproxy(
    haproxyBin,
    dir,
    shipped,
    balancerConfig(fs.readFileSync(shipped, "utf8"), balancerPort, nodes, balancerSocket),
    balancerSocket,
    started,
  );
  const balancerServers = () => serverStats(balancerSocket, "postgres_primary");

  const primary = async () => {
    const leader = (await members()).find((m) => m.role === "leader" && m.state === "running");
    return nodes.find((n) => n.name === leader?.name);
  };
  // HAProxy starts with every server UP: only once it has marked the standby DOWN does it send
  // connections to the primary alone.
  await until(
    "the balancer to route to the primary alone",
    scaled(60_000),
    async () => {
      const lead = await primary();
      const stats = await balancerServers();
      const ok = lead && stats.every((s) => (s.name === lead.name ? s.status === "UP" : s.status === "DOWN"));
      return ok ? true : undefined;
    },
    async () => JSON.stringify(await balancerServers()),
  );

  const url = (
    database: string,
    user = { name: SUPERUSER, password: PASSWORDS.PATRONI_SUPERUSER_PASSWORD },
  ) =>
    `postgres://${encodeURIComponent(user.name)}:${encodeURIComponent(user.password)}@127.0.0.1:${balancerPort}/${database}`;
  const admin = new Client({ connectionString: url("postgres") });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${service.user} LOGIN PASSWORD '${service.password}'`);
    await admin.query(`CREATE DATABASE ${service.database} OWNER ${service.user}`);
  } finally {
    await admin.end();
  }

  const postmasterPid = (node: PatroniNode) =>
    Number(fs.readFileSync(path.join(node.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  return {
    dir,
    nodes,
    balancerPort,
    balancer,
    balancerServers,
    url,
    members,
    primary,
    async answersPrimary(node) {
      const answer = await getJson(`http://127.0.0.1:${node.restPort}/primary`, "OPTIONS").catch(
        () => undefined,
      );
      return answer?.status === 200;
    },
    postmasterPid,
    killPostmaster(node) {
      process.kill(postmasterPid(node), "SIGKILL");
    },
    async killNode(node) {
      const postmaster = postmasterPid(node);
      const patroni = node.patroni;
      if (patroni?.child.pid !== undefined) process.kill(patroni.child.pid, "SIGKILL");
      process.kill(postmaster, "SIGKILL");
      if (patroni) await patroni.exit;
    },
    startNode,
    logs: () =>
      `${nodes.map((n) => `---- Patroni ${n.name}\n${n.log().slice(-6000)}`).join("\n")}\n---- balancer\n${balancer.stdout().slice(-3000)}${balancer.stderr()}\n---- etcd\n${etcd.stderr().slice(-2000)}`,
    stop() {
      for (const node of nodes) {
        kill9(node.patroni?.child.pid);
        try {
          kill9(postmasterPid(node));
        } catch {
          // no postmaster.pid: not running
        }
      }
      kill9(balancer.child.pid);
      kill9(etcd.child.pid);
      stopUnder(dir);
    },
  };
}

/** The `postgres` user's ids (Debian's postgresql package makes it). */
function postgresUser(): { uid: number; gid: number } {
  const line = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${SUPERUSER}:`));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error(
      `no ${SUPERUSER} user on this machine: install PostgreSQL's server (scripts/provision-postgres.sh)`,
    );
  }
  return { uid: Number(uid), gid: Number(gid) };
}
