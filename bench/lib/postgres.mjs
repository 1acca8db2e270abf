// A throwaway PostgreSQL cluster for the benchmark (the same recipe as tests/support/postgres.ts):
// Debian's server binaries, initdb in a temp directory as `nobody` when run as root, a free
// loopback port. Durable settings (fsync on): the figures are those of a real deployment.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const PG_ROOT = "/usr/lib/postgresql";

function binDir() {
  const versions = fs.existsSync(PG_ROOT)
    ? fs.readdirSync(PG_ROOT).filter((v) => fs.existsSync(path.join(PG_ROOT, v, "bin", "initdb")))
    : [];
  if (versions.length === 0)
    throw new Error("PostgreSQL server binaries not found: apt-get install -y postgresql");
  return path.join(PG_ROOT, versions.sort((a, b) => Number(b) - Number(a))[0], "bin");
}

/** A port free on loopback now (the OS picks it). */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

export async function startCluster() {
  const bin = binDir();
  const root = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "edge-bench-pg-"));
  if (root) fs.chownSync(dir, 65534, 65534);
  const run = (cmd, args) =>
    execFileSync(root ? "runuser" : cmd, root ? ["-u", "nobody", "--", cmd, ...args] : args, {
      stdio: "pipe",
      timeout: 300_000,
    });
  const data = path.join(dir, "data");
  const port = await freePort();
  run(path.join(bin, "initdb"), [
    "-D",
    data,
    "-U",
    "edge",
    "--auth=trust",
    "-E",
    "UTF8",
    "--locale=C",
    "--no-instructions",
  ]);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100 -c shared_buffers=128MB`;
  run(path.join(bin, "pg_ctl"), ["-D", data, "-l", path.join(dir, "log"), "-o", options, "-w", "start"]);
  let databases = 0;
  return {
    url: (db = "postgres") => `postgres://edge@127.0.0.1:${port}/${db}`,
    createDatabase() {
      const name = `bench_${++databases}`;
      run(path.join(bin, "psql"), [
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        "edge",
        "-d",
        "postgres",
        "-c",
        `CREATE DATABASE ${name}`,
      ]);
      return `postgres://edge@127.0.0.1:${port}/${name}`;
    },
    /** pids of the postmaster and its children (backends, background workers). */
    pids() {
      const postmaster = Number(fs.readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]);
      const out = [postmaster];
      for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
          if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster)
            out.push(Number(entry));
        } catch {
          // gone
        }
      }
      return out;
    },
    destroy() {
      try {
        run(path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** CPU seconds (user + system) a process has used so far; 0 when it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
