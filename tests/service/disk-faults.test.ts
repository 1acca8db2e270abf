/**
 * Operating faults, for real (issue 26, item 6): the compiled server (`edge-service serve` from
 * dist) with its data directory on a small tmpfs filled by a file, on an ext4 file system forced
 * read-only, and on a PostgreSQL database turned read-only. A write the storage refuses is a 503
 * ERR_EDGE_507 with Retry-After and one log line, `/readyz` says 503 while writes fail and 200
 * once they succeed again; the HTTP transport retries such a write, a create without an
 * Idempotency-Key included, until it succeeds within its deadline.
 *
 * Needs root (mount). Found here: `mount -o remount,ro` of a file system is refused ("mount point
 * is busy") while the server holds its database open for writing, so read-only is brought about
 * the way it happens in production: ext4 with errors=remount-ro after an error.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "pg";
import { ERROR_CODES } from "../../sdk/contract";
import { httpTransport } from "../../sdk/transport";
import { ensureBuilt, killClis, loggedLines, NO_DRAIN, startCli } from "../support/edge-service";
import { sharedCluster } from "../support/postgres";

jest.setTimeout(300_000);

const STORAGE = ERROR_CODES.storageUnavailable.code;
const base = fs.mkdtempSync(path.join(os.tmpdir(), "edge-disk-faults-"));
/** Everything mounted here, unmounted in afterAll whatever happened. */
const mounts: string[] = [];

const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: "utf8", stdio: "pipe", timeout: 60_000 });

function mountTmpfs(name: string, sizeMb: number): string {
  const dir = path.join(base, name);
  fs.mkdirSync(dir);
  sh("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,mode=0700`, "tmpfs", dir]);
  mounts.push(dir);
  return dir;
}

/** Why these tests cannot run here, or undefined: mounting needs root (CAP_SYS_ADMIN). */
const refused: string | undefined = (() => {
  try {
    mountTmpfs("probe", 1);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message.split("\n")[0] : String(e);
  }
})();
if (refused) {
  console.warn(
    `disk-faults: SKIPPED: mounting a tmpfs is refused here (${refused}); run as root to test these faults`,
  );
}
const describeMounted = refused ? describe.skip : describe;

afterAll(() => {
  killClis();
  for (const dir of mounts.reverse()) {
    try {
      sh("umount", [dir]);
    } catch {
      sh("umount", ["-l", dir]); // still busy (a server killed this instant): detach it
    }
  }
  fs.rmSync(base, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Headers;
  json: { error_code?: string; id?: string } & Record<string, unknown>;
}
async function call(url: string, method: string, urlPath: string, body?: unknown): Promise<Answer> {
  const res = await fetch(url + urlPath, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as Answer["json"]) : {} };
}
/** A create that takes some room: 4 KB of metadata. */
const bigEdge = (tag = "m") => ({ metadata: tag.repeat(4000).slice(0, 4000) });

/** Fills the file system of `dir` with one file, 1 MiB at a time, until it is full (ENOSPC). */
function fill(dir: string): string {
  const filler = path.join(dir, "filler");
  const fd = fs.openSync(filler, "w");
  const chunk = Buffer.alloc(1024 * 1024, 1);
  try {
    for (let i = 0; i < 10_000; i++) {
      try {
        fs.writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOSPC") break;
        throw e;
      }
    }
    // The last pages a 1 MiB write could not take.
    for (let i = 0; i < 10_000; i++) {
      try {
        fs.writeSync(fd, chunk, 0, 4096);
      } catch {
        break;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

/** Creates edges until the service refuses one (bounded); returns that answer. */
async function writeUntilRefused(url: string): Promise<Answer> {
  for (let i = 0; i < 500; i++) {
    const res = await call(url, "POST", "/edges/tls", bigEdge());
    if (res.status !== 201) return res;
  }
  throw new Error("500 creates of 4 KB all succeeded on a full file system");
}

/** `/readyz` until it answers `want` (readiness is re-checked at most once a second): bounded. */
async function readyz(url: string, want: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 300 && status !== want; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 200));
    status = (await call(url, "GET", "/readyz")).status;
  }
  return status;
}

function expectRefused(res: Answer): void {
  expect([res.status, res.json.error_code]).toEqual([503, STORAGE]);
  expect(res.headers.get("retry-after")).toBe("2");
}

describeMounted("storage faults of the standalone service", () => {
  beforeAll(() => ensureBuilt());

  it("a full disk: 503 with Retry-After, one log line, not ready; free space and it recovers", async () => {
    const dir = mountTmpfs("full", 16);
    const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", path.join(dir, "data")]);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);

    const filler = fill(dir);
    const refused = await writeUntilRefused(cli.url);
    expectRefused(refused);
    for (let i = 0; i < 3; i++) expectRefused(await call(cli.url, "POST", "/edges/tls", bigEdge()));
    expect((await call(cli.url, "GET", "/readyz")).status).toBe(503);
    // Still not ready a probe later: the disk is still full.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await call(cli.url, "GET", "/readyz")).status).toBe(503);

    const lines = await loggedLines(cli, "write failed");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the disk is full (SQLITE_FULL) at ${path.join(dir, "data")}; free space`);
    expect(cli.stderr()).not.toMatch(/internal error|\n\s+at /);

    fs.rmSync(filler);
    expect(await readyz(cli.url, 200)).toBe(200);
    expect(await loggedLines(cli, "writes succeed again")).toHaveLength(1);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);
  });

  it("a keyless create through the HTTP transport is retried past the full disk, once", async () => {
    const dir = mountTmpfs("retry", 16);
    const cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", path.join(dir, "data")]);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);
    const filler = fill(dir);
    expectRefused(await writeUntilRefused(cli.url));

    const transport = httpTransport({ baseUrl: cli.url, deadlineMs: 120_000, retries: 20 });
    const reasons: string[] = [];
    const res = await transport.send(
      new Request(`${cli.url}/edges/tls`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(bigEdge("once")),
      }),
      {
        onRetry: (retry) => {
          reasons.push(retry.reason);
          // Space is freed while the transport waits: its next attempt meets a disk with room.
          if (reasons.length === 1) fs.rmSync(filler);
        },
      },
    );
    expect(res.status).toBe(201);
    expect(reasons[0]).toBe("503 from the service");
    const list = await call(cli.url, "GET", "/edges/tls?limit=100");
    const made = (list.json.tls_edges as Array<{ metadata: string }>).filter((e) =>
      e.metadata.startsWith("once"),
    );
    expect(made).toHaveLength(1);
  });

  it("a file system forced read-only (ext4 after an error): 503 and not ready, EROFS in the log", async () => {
    const img = path.join(base, "ro.img");
    fs.closeSync(fs.openSync(img, "w"));
    fs.truncateSync(img, 32 * 1024 * 1024);
    sh("mkfs.ext4", ["-q", "-F", img]);
    const dir = path.join(base, "ro");
    fs.mkdirSync(dir);
    sh("mount", ["-o", "loop,errors=remount-ro", img, dir]);
    mounts.push(dir);
    const device = path.basename(sh("findmnt", ["-n", "-o", "SOURCE", dir]).trim());
    const dataDir = path.join(dir, "data");
    let cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir]);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);
    expect((await call(cli.url, "GET", "/readyz")).status).toBe(200);

    // What ext4 does after an I/O error with errors=remount-ro: read-only at once, open files too.
    fs.writeFileSync(`/sys/fs/ext4/${device}/trigger_fs_error`, "1");
    expectRefused(await call(cli.url, "POST", "/edges/tls", bigEdge()));
    expectRefused(await call(cli.url, "POST", "/edges/tls", bigEdge()));
    expect((await call(cli.url, "GET", "/readyz")).status).toBe(503);
    const lines = await loggedLines(cli, "write failed");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${dataDir} is read-only or not writable (`);
    expect(lines[0]).toContain("EROFS");
    expect(cli.stderr()).not.toMatch(/internal error|\n\s+at /);

    // ext4 stays read-only until it is checked and mounted again: the service is restarted on it.
    cli.child.kill("SIGTERM");
    await cli.exit;
    sh("umount", [dir]);
    mounts.pop();
    try {
      sh("e2fsck", ["-f", "-y", img]);
    } catch {
      // exit status 1: errors were corrected
    }
    sh("mount", ["-o", "loop,errors=remount-ro", img, dir]);
    mounts.push(dir);
    cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir]);
    expect(await readyz(cli.url, 200)).toBe(200);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);
    cli.child.kill("SIGTERM");
    await cli.exit;
  });

  it("a PostgreSQL database made read-only (25006): 503 and not ready; writable again, it recovers", async () => {
    const cluster = await sharedCluster();
    const url = await cluster.createDatabase();
    const cli = await startCli(["--port", "0", ...NO_DRAIN, "--database", url]);
    expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);

    const admin = new Client({ connectionString: cluster.url("postgres") });
    await admin.connect();
    try {
      // The admin's own session stays writable; every other one takes the reloaded default.
      await admin.query("SET default_transaction_read_only = off");
      await admin.query("ALTER SYSTEM SET default_transaction_read_only = on");
      await admin.query("SELECT pg_reload_conf()");
      const refused = await writeUntilRefused(cli.url);
      expectRefused(refused);
      expect((await call(cli.url, "GET", "/readyz")).status).toBe(503);
      const lines = await loggedLines(cli, "write failed");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("accepts no writes (read-only transaction, 25006)");

      await admin.query("ALTER SYSTEM RESET default_transaction_read_only");
      await admin.query("SELECT pg_reload_conf()");
      expect(await readyz(cli.url, 200)).toBe(200);
      expect((await call(cli.url, "POST", "/edges/tls", bigEdge())).status).toBe(201);
    } finally {
      await admin.query("ALTER SYSTEM RESET default_transaction_read_only").catch(() => undefined);
      await admin.end();
    }
  });
});
