/**
 * The service's release archive started the way the Dockerfile's image starts it (no image can be
 * built here: no container daemon): the archive unpacked where the image's ADD puts it, the CMD
 * run as written, with three substitutions a test on this machine needs: the unpack directory for
 * /opt/edge-service, a temporary directory for the /data volume, and loopback with a free port for
 * 0.0.0.0:8080. Its HEALTHCHECK command answers 0 once /readyz does; SIGTERM ends it with exit 0;
 * the data outlives it, as a volume's does.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePki } from "../support/pki";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const VERSION = (require("../../package.json") as { version: string }).version;
const PLATFORM = `${process.platform}-${{ x64: "amd64", arm64: "arm64" }[process.arch as string] ?? process.arch}`;
const API_KEY = "svc-archive-test-key";

const DOCKERFILE = readFileSync(join(engine.ROOT, "Dockerfile"), "utf8");
/** A JSON-array instruction of the Dockerfile (`CMD [...]`, `HEALTHCHECK ... CMD [...]`). */
function instruction(pattern: RegExp): string[] {
  const joined = DOCKERFILE.replace(/\\\n/g, " ");
  const m = pattern.exec(joined);
  if (!m) throw new Error(`no ${String(pattern)} in the Dockerfile`);
  return JSON.parse(m[1]!) as string[];
}

let base: string;
let opt: string;
let data: string;
let port: number;

/** The image's command with this machine's paths and port. */
const substitute = (args: string[]) =>
  args.map((a) =>
    a
      .replace("/opt/edge-service", opt)
      .replace(/^\/data$/, data)
      .replace("0.0.0.0", "127.0.0.1")
      .replace(/^8080$/, String(port))
      .replace("127.0.0.1:8080", `127.0.0.1:${port}`)
      .replace("port: 8080", `port: ${port}`),
  );

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port: p } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return p;
}

/** Starts the image's CMD (and `extra` options); resolves once it says it listens (bounded by jest's timeout). */
async function start(extra: string[] = []): Promise<ChildProcess> {
  const [cmd, ...args] = [...substitute(instruction(/^CMD (\[.*\])$/m)), ...extra];
  const child = spawn(cmd!, args, {
    env: { ...process.env, EDGE_API_KEY: API_KEY },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("listening on")) resolve();
    });
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) before listening:\n${out}`)));
  });
  return child;
}

const stopped = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.kill("SIGTERM");
  });

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "edge-svc-archive-"));
  execFileSync(
    process.execPath,
    [join(engine.ROOT, "scripts/plugin-archive.mjs"), "--out", base, "--platforms", PLATFORM],
    { stdio: "ignore" },
  );
  opt = join(base, "opt", "edge-service");
  data = join(base, "data");
  mkdirSync(opt, { recursive: true });
  mkdirSync(data);
  execFileSync("tar", ["-xzf", join(base, `edge-service-v${VERSION}-${PLATFORM}.tar.gz`), "-C", opt]);
  port = await freePort();
}, 300_000);

afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

test("the Dockerfile: the archive of the image's platform, a non-root user, a data volume, /readyz checked", () => {
  expect(DOCKERFILE).toMatch(/^FROM node:22-slim$/m);
  expect(DOCKERFILE).toMatch(
    /^ADD edge-service-v\$\{VERSION\}-linux-\$\{TARGETARCH\}\.tar\.gz \/opt\/edge-service\/$/m,
  );
  expect(DOCKERFILE).toMatch(/^USER node$/m);
  expect(DOCKERFILE).toMatch(/^VOLUME \/data$/m);
  const check = instruction(/^HEALTHCHECK .* CMD (\[.*\])$/m).join(" ");
  expect(check).toContain("path: '/readyz'");
  expect(check).toContain("port: 8080");
  expect(instruction(/^CMD (\[.*\])$/m)).toEqual(expect.arrayContaining(["--data", "/data"]));
});

/** The image's HEALTHCHECK command, run as Docker would: its exit status. */
const healthcheck = () => {
  const [cmd, ...args] = substitute(instruction(/^HEALTHCHECK .* CMD (\[.*\])$/m));
  return spawnSync(cmd!, args, { encoding: "utf8" }).status;
};

test("the CMD serves, its HEALTHCHECK passes, SIGTERM ends it with 0, the data directory keeps the state", async () => {
  const url = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" };

  let child = await start();
  expect(healthcheck()).toBe(0);
  const created = (await (
    await fetch(`${url}/edges/https`, {
      method: "POST",
      headers,
      body: JSON.stringify({ description: "kept" }),
    })
  ).json()) as { id: string };
  expect(created.id).toMatch(/^edghts_/);
  expect(await stopped(child)).toBe(0);
  expect(healthcheck()).toBe(1); // nothing listens any more
  expect(existsSync(join(data, "edge.db"))).toBe(true);

  child = await start(); // the same volume, a new container
  const again = await fetch(`${url}/edges/https/${created.id}`, { headers });
  expect(again.status).toBe(200);
  expect(((await again.json()) as { description: string }).description).toBe("kept");
  expect(await stopped(child)).toBe(0);
});

test("served over TLS (and mutual TLS), the HEALTHCHECK still passes; stopped, it fails", async () => {
  const pki = makePki();
  try {
    const tls = ["--tls-cert", pki.server.cert, "--tls-key", pki.server.key];
    for (const extra of [tls, [...tls, "--tls-client-ca", pki.ca]]) {
      const child = await start(extra);
      expect(healthcheck()).toBe(0);
      expect(await stopped(child)).toBe(0);
      expect(healthcheck()).toBe(1);
    }
  } finally {
    pki.cleanup();
  }
});
