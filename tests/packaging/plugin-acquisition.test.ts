/**
 * Which programs make the engine fetch the plugin, through the engine, with automatic plugin
 * acquisition on (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION unset) and an empty PULUMI_HOME:
 *
 * - the npm package packed with a download URL (EDGE_PLUGIN_DOWNLOAD_URL), the URL a loopback
 *   server that logs every request: `npm pack` of this tree with its Node.js SDK regenerated for
 *   that URL (`scripts/sdks.mjs --out … --languages nodejs`, what `npm pack`'s prepack runs with the
 *   variable set), installed into a TypeScript project by npm;
 * - a program of the dynamic resources only deploys, previews and destroys while the server takes
 *   no connection (each is logged, then cut): the engine asks it nothing and installs no plugin;
 * - the same node_modules, a program on `pulumi-edge/packaged`: the engine downloads the archive
 *   from the SDK's URL, once, and deploys with it.
 *
 * The Node.js language host reports as required every package.json under node_modules that says
 * `pulumi.resource: true`, walking the directories (the 3.259 host as the older one built here),
 * so what is asserted of the installed tree holds for either host.
 */
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, normalize, relative } from "node:path";
import { runCommand as run } from "../support/command";
import { scaled } from "../support/machine";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const VERSION = (require("../../package.json") as { version: string }).version;
const PLATFORM = `${process.platform}-${{ x64: "amd64", arm64: "arm64" }[process.arch as string] ?? process.arch}`;
const ARCHIVE = `pulumi-resource-edge-v${VERSION}-${PLATFORM}.tar.gz`;

let base: string;
let server: Server;
/** What the server does with a request: serve the release's files, or cut the connection. */
let mode: "serve" | "refuse" = "refuse";
/** Every path the server was asked for, served or not. */
const requested: string[] = [];
let project: string;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "edge-plugin-acquisition-"));
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    requested.push(path);
    if (mode === "refuse") {
      req.socket.destroy();
      return;
    }
    const file = normalize(join(base, path));
    if (!file.startsWith(join(base, "releases")) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-length": statSync(file).size, "content-type": "application/gzip" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/releases/v\${VERSION}`;

  // The npm package packed with the URL: this tree's tarball, its Node.js SDK regenerated for it.
  const staging = join(base, "staging");
  mkdirSync(staging);
  await run(
    "npm",
    ["pack", "--ignore-scripts", "--pack-destination", staging, "--loglevel=error"],
    engine.ROOT,
  );
  await run("tar", ["-xzf", `pulumi-edge-${VERSION}.tgz`], staging);
  await run(
    process.execPath,
    [
      join(engine.ROOT, "scripts/sdks.mjs"),
      "--out",
      join(staging, "package", "dist"),
      "--languages",
      "nodejs",
    ],
    engine.ROOT,
    { EDGE_PLUGIN_DOWNLOAD_URL: url },
  );
  const release = join(base, "releases", `v${VERSION}`);
  mkdirSync(release, { recursive: true });
  await run(
    "npm",
    ["pack", "--ignore-scripts", "--pack-destination", release, "--loglevel=error"],
    join(staging, "package"),
  );
  await run(
    process.execPath,
    [join(engine.ROOT, "scripts/plugin-archive.mjs"), "--out", release, "--platforms", PLATFORM],
    engine.ROOT,
  );

  project = join(base, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({
      name: "acquisition",
      private: true,
      main: "index.ts",
      dependencies: {
        "pulumi-edge": `file:${join(release, `pulumi-edge-${VERSION}.tgz`)}`,
        "@pulumi/pulumi": engine.PULUMI_VERSION,
      },
      devDependencies: { typescript: (require("typescript/package.json") as { version: string }).version },
    }),
  );
  // The first stack's TypeScript settings (examples/typescript).
  writeFileSync(
    join(project, "tsconfig.json"),
    readFileSync(join(engine.ROOT, "examples", "typescript", "tsconfig.json")),
  );
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], project);
}, scaled(600_000));

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (base) rmSync(base, { recursive: true, force: true });
});

/** Every package.json under `dir`, as the language host walks it (symbolic links followed). */
function manifests(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() || (entry.isSymbolicLink() && statSync(path).isDirectory()))
      manifests(path, found);
    else if (entry.name === "package.json") found.push(path);
  }
  return found;
}

test("the package the SDK was packed with a URL for: its SDK names the URL, and no package.json under node_modules declares a plugin", () => {
  const installed = join(project, "node_modules", "pulumi-edge");
  // The packaged SDK registers its resources with the plugin's version and where to get it.
  expect(readFileSync(join(installed, "dist", "packaged", "utilities.js"), "utf8")).toContain(
    `pluginDownloadURL: "http://127.0.0.1:${(server.address() as AddressInfo).port}/releases/v\${VERSION}"`,
  );
  expect(existsSync(join(installed, "dist", "sdks", "nodejs"))).toBe(false); // compiled into dist/packaged
  const declaring = manifests(join(project, "node_modules"))
    .filter(
      (file) =>
        (JSON.parse(readFileSync(file, "utf8")) as { pulumi?: { resource?: boolean } }).pulumi?.resource,
    )
    .map((file) => relative(project, file));
  expect(declaring).toEqual([]);
});

/** `pulumi <args>` in the project, as a user's shell runs it: acquisition on, a PULUMI_HOME of its own. */
function pulumi(args: string[], home: string, state: string): Promise<string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(npm_|PULUMI_|EDGE_|INIT_CWD$)/i.test(k)) env[k] = v;
  Object.assign(env, {
    // Not node_modules/.bin of this checkout (npx puts it first): it holds a pulumi-resource-edge.
    PATH: [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)]
      .filter((dir) => dir && !existsSync(join(dir, "pulumi-resource-edge")))
      .join(delimiter),
    PULUMI_HOME: home,
    PULUMI_BACKEND_URL: `file://${state}`,
    PULUMI_CONFIG_PASSPHRASE: "acquisition",
    PULUMI_SKIP_UPDATE_CHECK: "true",
  });
  return new Promise((resolve, reject) => {
    const child = spawn(join(engine.PULUMI_BIN, "pulumi"), [...args, "--color", "never"], {
      cwd: project,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`pulumi ${args.join(" ")} exited ${code}:\n${out}`)),
    );
  });
}

/** A program in the project, on an empty PULUMI_HOME and state of its own: up, (no changes,) destroy. */
async function deploy(label: string, program: string, { preview }: { preview: boolean }) {
  writeFileSync(join(project, "index.ts"), program);
  writeFileSync(
    join(project, "Pulumi.yaml"),
    `name: acquisition-${label}\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n`,
  );
  const home = join(base, `home-${label}`);
  const state = join(base, `state-${label}`);
  for (const d of [home, state]) mkdirSync(d);
  await pulumi(["stack", "init", "dev"], home, state);
  const up = await pulumi(["up", "--yes", "--skip-preview"], home, state);
  if (preview) await pulumi(["preview", "--expect-no-changes"], home, state);
  const destroy = await pulumi(["destroy", "--yes", "--skip-preview"], home, state);
  const dir = join(home, "plugins");
  const plugins = existsSync(dir) ? readdirSync(dir).filter((p) => statSync(join(dir, p)).isDirectory()) : [];
  return { up, destroy, plugins };
}

test(
  "a TypeScript program of the dynamic resources only: deploys and destroys, the plugin server unreachable and never asked",
  async () => {
    mode = "refuse";
    requested.length = 0;
    const run = await deploy(
      "dynamic",
      `import { HttpsEdge, HttpsEdgeRoute } from "pulumi-edge";
const web = new HttpsEdge("web", { hostports: ["acquisition.example.com:443"] });
export const route = new HttpsEdgeRoute("api", { edgeId: web.id, matchType: "path_prefix", match: "/api", compression: {} }).id;
`,
      { preview: true },
    );
    expect(run.up).toMatch(/\+ 4 created/); // the edge, the route, the stack and its anchor
    expect(run.destroy).toMatch(/- 4 deleted/);
    expect(requested).toEqual([]);
    expect(run.plugins).toEqual([]);
  },
  scaled(300_000),
);

test(
  "a TypeScript program on pulumi-edge/packaged: the engine downloads the plugin from the SDK's URL, once, and deploys with it",
  async () => {
    mode = "serve";
    requested.length = 0;
    const run = await deploy(
      "packaged",
      `import * as edge from "pulumi-edge/packaged";
const web = new edge.HttpsEdge("web", { hostports: ["acquisition.example.com:443"] });
export const route = new edge.HttpsEdgeRoute("api", { edgeId: web.id, matchType: "path_prefix", match: "/api", compression: {} }).id;
`,
      { preview: false },
    );
    expect(run.up).toMatch(/\+ 3 created/); // the edge, the route, the stack
    expect(run.destroy).toMatch(/- 3 deleted/);
    expect(requested).toEqual([`/releases/v${VERSION}/${ARCHIVE}`]);
    expect(run.plugins).toEqual([`resource-edge-v${VERSION}`]);
  },
  scaled(300_000),
);
