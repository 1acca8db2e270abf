/**
 * The plugin the Pulumi way: the archive scripts/plugin-archive.mjs makes (what `npm pack` writes
 * beside the tarball), served from a directory over loopback HTTP as a platform team's artifact
 * server serves a release, with SDKs whose pluginDownloadURL points there (EDGE_PLUGIN_DOWNLOAD_URL,
 * scripts/sdks.mjs --out). Every engine run here has a PULUMI_HOME of its own, empty, and plugin
 * acquisition on: what the engine finds, it downloaded itself (or `pulumi plugin install` put there).
 *
 * - `pulumi plugin install resource edge <v> --file <archive>`, and from the server with
 *   `--checksum` (the SHA-256 of checksums.txt; a wrong one is refused);
 * - a Python program with only the wheel: state written by today's plugin (bin/, named by a
 *   `plugins:` path) refreshes, updates and destroys with the plugin the engine downloaded;
 * - a Go program with only the module, a YAML program with nothing: where those language hosts
 *   are installed (the Go module proxy does not serve them; else skipped, saying so).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, normalize } from "node:path";
import { quiet } from "../engine/support/harness";
import { runCommand as run, venvWithWheel } from "../support/command";
import { pythonHostProblem } from "./support/python";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const VERSION = (require("../../package.json") as { version: string }).version;
const GOOS = { linux: "linux", darwin: "darwin" }[process.platform as string] ?? process.platform;
const GOARCH = { x64: "amd64", arm64: "arm64" }[process.arch as string] ?? process.arch;
const PLATFORM = `${GOOS}-${GOARCH}`;
const ARCHIVE = `pulumi-resource-edge-v${VERSION}-${PLATFORM}.tar.gz`;

let base: string;
let server: Server;
let tls: Http2SecureServer;
/** The release over HTTPS. */
let tlsUrl: string;
/** Paths the artifact server was asked for, in order. */
const requested: string[] = [];
/** The SDKs' pluginDownloadURL: the engine puts the version in. */
let downloadUrl: string;
let release: string;

/** A language host of the pinned CLI, or on PATH: its path, or undefined. */
function host(language: string): string | undefined {
  const name = `pulumi-language-${language}`;
  return [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)]
    .map((dir) => join(dir, name))
    .find((file) => existsSync(file));
}

/**
 * The engine's environment with an empty PULUMI_HOME of its own, plugin acquisition on, and a
 * PATH without today's plugin (npx puts node_modules/.bin, with pulumi-resource-edge, on it).
 */
function cleanHome(label: string): Record<string, string> {
  const home = join(base, `home-${label}`);
  mkdirSync(home, { recursive: true });
  const path = [engine.PULUMI_BIN, ...(process.env.PATH ?? "").split(delimiter)]
    .filter((dir) => dir && !existsSync(join(dir, "pulumi-resource-edge")))
    .join(delimiter);
  return {
    ...engine.engineEnv({ stateDir: join(base, `state-${label}`) }),
    PATH: path,
    PULUMI_HOME: home,
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "false",
  };
}
/** What the Automation API adds to the engine's environment for a clean home. */
const acquiring = (home: Record<string, string>) => ({
  PATH: home.PATH!,
  PULUMI_HOME: home.PULUMI_HOME!,
  PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "false",
});

const pulumi = (args: string[], cwd: string, env: Record<string, string>) =>
  run(join(engine.PULUMI_BIN, "pulumi"), [...args, "--color", "never"], cwd, env);

const installedPlugin = (env: Record<string, string>) =>
  join(env.PULUMI_HOME!, "plugins", `resource-edge-v${VERSION}`, "pulumi-resource-edge");

/** The artifact server: GET of a file under base/releases, nothing else; each path recorded. */
function serveRelease(req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) {
  const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
  requested.push(path);
  const file = normalize(join(base, path));
  if (req.method !== "GET" || !file.startsWith(join(base, "releases")) || !existsSync(file)) {
    res.writeHead(404).end();
    return;
  }
  // The engine requires a Content-Length (else: "expected -1 bytes but copied ...").
  res.writeHead(200, { "content-length": statSync(file).size, "content-type": "application/gzip" });
  res.end(readFileSync(file));
}

const listen = async (s: Server | Http2SecureServer) => {
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return (s.address() as AddressInfo).port;
};

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "edge-acquire-"));
  release = join(base, "releases", `v${VERSION}`);
  server = createServer(serveRelease);
  downloadUrl = `http://127.0.0.1:${await listen(server)}/releases/v\${VERSION}`;
  // The same release over HTTPS (HTTP/2, as artifact servers and GitHub serve), with a throwaway
  // certificate for 127.0.0.1 that the engine trusts through SSL_CERT_FILE.
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
      .concat(["-keyout", join(base, "key.pem"), "-out", join(base, "cert.pem"), "-days", "1"])
      .concat(["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]),
    { stdio: "ignore" },
  );
  tls = createSecureServer(
    {
      key: readFileSync(join(base, "key.pem")),
      cert: readFileSync(join(base, "cert.pem")),
      allowHTTP1: true,
    },
    serveRelease,
  );
  tlsUrl = `https://127.0.0.1:${await listen(tls)}/releases/v${VERSION}`;

  await run(
    process.execPath,
    [join(engine.ROOT, "scripts/plugin-archive.mjs"), "--out", release, "--platforms", PLATFORM],
    engine.ROOT,
  );
  await run(
    process.execPath,
    [
      join(engine.ROOT, "scripts/sdks.mjs"),
      "--out",
      join(base, "sdk"),
      "--languages",
      host("go") ? "python,go" : "python",
    ],
    engine.ROOT,
    { EDGE_PLUGIN_DOWNLOAD_URL: downloadUrl },
  );
}, 900_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await new Promise((resolve) => tls?.close(resolve));
  if (base) rmSync(base, { recursive: true, force: true });
});

test("the archive holds the plugin and the platform's SQLite, and checksums.txt its SHA-256", () => {
  const listing = execFileSync("tar", ["-tzf", join(release, ARCHIVE)], { encoding: "utf8" }).split("\n");
  expect(listing).toEqual(
    expect.arrayContaining([
      "pulumi-resource-edge",
      "pulumi-resource-edge.js",
      "node_modules/libsql/index.js",
    ]),
  );
  expect(listing.some((f) => /^node_modules\/@libsql\/[^/]+\/index\.node$/.test(f))).toBe(true);
  const sums = readFileSync(join(release, "checksums.txt"), "utf8");
  const sha = execFileSync("sha256sum", [ARCHIVE], { cwd: release, encoding: "utf8" });
  expect(sums).toContain(sha);
});

test("pulumi plugin install --file <archive> installs a plugin that serves its schema", async () => {
  const env = cleanHome("file");
  await pulumi(
    ["plugin", "install", "resource", "edge", VERSION, "--file", join(release, ARCHIVE)],
    base,
    env,
  );
  const listed = JSON.parse(await pulumi(["plugin", "ls", "--json"], base, env)) as {
    name: string;
    version: string;
    kind: string;
  }[];
  expect(listed.map(({ name, version, kind }) => ({ name, version, kind }))).toEqual([
    { name: "edge", version: VERSION, kind: "resource" },
  ]);
  const schema = JSON.parse(await pulumi(["package", "get-schema", installedPlugin(env)], base, env)) as {
    name: string;
    version: string;
  };
  expect([schema.name, schema.version]).toEqual(["edge", VERSION]);
});

const publishedSha = () =>
  readFileSync(join(release, "checksums.txt"), "utf8")
    .split("\n")
    .find((line) => line.endsWith(`  ${ARCHIVE}`))!
    .split(" ")[0]!;

test("pulumi plugin install --server --checksum over HTTPS: the published SHA-256 installs, another is refused", async () => {
  const sha = publishedSha();
  const good = { ...cleanHome("checksum"), SSL_CERT_FILE: join(base, "cert.pem") };
  requested.length = 0;
  await pulumi(
    ["plugin", "install", "resource", "edge", VERSION, "--server", tlsUrl, "--checksum", sha],
    base,
    good,
  );
  expect(requested).toEqual([`/releases/v${VERSION}/${ARCHIVE}`]);
  expect(existsSync(installedPlugin(good))).toBe(true);

  const bad = { ...cleanHome("bad-checksum"), SSL_CERT_FILE: join(base, "cert.pem") };
  const wrong = `${sha.slice(0, -1)}${sha.endsWith("0") ? "1" : "0"}`;
  await expect(
    pulumi(
      ["plugin", "install", "resource", "edge", VERSION, "--server", tlsUrl, "--checksum", wrong],
      base,
      bad,
    ),
  ).rejects.toThrow(/invalid checksum/);
  expect(existsSync(installedPlugin(bad))).toBe(false);
});

test("over plain http:// the 3.259.0 engine refuses even the published SHA-256 (its bug): checksums need HTTPS", async () => {
  // Its checksum reader hashes no bytes of a read that also returns io.EOF, as Go's HTTP/1.1
  // body does for the last bytes of a response with a Content-Length (HTTP/2's does not).
  // When this fails, the engine has fixed it: drop this test and the guide's caveat.
  const env = cleanHome("http-checksum");
  const http = downloadUrl.replace("${VERSION}", VERSION);
  await expect(
    pulumi(
      ["plugin", "install", "resource", "edge", VERSION, "--server", http, "--checksum", publishedSha()],
      base,
      env,
    ),
  ).rejects.toThrow(/invalid checksum/);
  // Without a checksum the same server installs it.
  await pulumi(["plugin", "install", "resource", "edge", VERSION, "--server", http], base, env);
  expect(existsSync(installedPlugin(env))).toBe(true);
});

const PYTHON_PROGRAM = `import pulumi
import pulumi_edge as edge

config = pulumi.Config()
web = edge.HttpsEdge("web", hostports=["acquire.example.com:443"])
route = edge.HttpsEdgeRoute(
    "api",
    edge_id=web.id,
    match_type="path_prefix",
    match=config.get("match") or "/api",
    compression={},
)
pulumi.export("route", route.id)
`;

const pythonProblem = pythonHostProblem();
(pythonProblem ? test.skip : test)(
  `a Python program with only the wheel: today's plugin's state refreshes, updates and destroys with the downloaded one${
    pythonProblem ? ` (skipped: ${pythonProblem})` : ""
  }`,
  async () => {
    const program = join(base, "python-program");
    mkdirSync(program);
    const venv = join(program, "venv");
    await venvWithWheel(
      venv,
      join(base, "sdk", "python", `pulumi_edge-${VERSION}-py3-none-any.whl`),
      engine.PULUMI_VERSION,
    );
    writeFileSync(join(program, "__main__.py"), PYTHON_PROGRAM);
    const project = "name: acquire-python\nruntime: python\n";
    // The old Python host ignores Pulumi.yaml's virtualenv option (packaged-provider-facts.md).
    const python = { PULUMI_PYTHON_CMD: join(venv, "bin/python") };
    const stateDir = join(base, "state-python");

    // Today's plugin, named by path (no download): the state it writes.
    writeFileSync(
      join(program, "Pulumi.yaml"),
      `${project}plugins:\n  providers:\n    - name: edge\n      version: ${VERSION}\n      path: ${join(engine.ROOT, "bin")}\n`,
    );
    const before = await engine.directoryStack({ workDir: program, stateDir, env: python });
    const up = await before.up(quiet);
    expect(up.summary.resourceChanges?.create).toBe(3);
    const routeId = up.outputs.route!.value as string;

    // The same program and state, no plugins: path, an empty PULUMI_HOME: the engine downloads.
    writeFileSync(join(program, "Pulumi.yaml"), project);
    const home = cleanHome("python");
    requested.length = 0;
    const after = await engine.directoryStack({
      workDir: program,
      stateDir,
      env: { ...python, ...acquiring(home) },
    });
    const refresh = await after.refresh(quiet);
    expect(refresh.summary.result).toBe("succeeded");
    expect(requested).toEqual([`/releases/v${VERSION}/${ARCHIVE}`]);
    expect(existsSync(installedPlugin(home))).toBe(true);
    await after.preview({ ...quiet, expectNoChanges: true });
    await after.setConfig("match", { value: "/v2" });
    const update = await after.up(quiet);
    expect(update.summary.resourceChanges?.update).toBe(1);
    expect(update.outputs.route!.value).toBe(routeId);
    await after.preview({ ...quiet, refresh: true, expectNoChanges: true });
    const destroy = await after.destroy(quiet);
    expect(destroy.summary.resourceChanges?.delete).toBe(3);
    expect(requested).toHaveLength(1); // downloaded once, then from the plugin cache
  },
);

const GO_PROGRAM = `package main

import (
\t"github.com/pulumi-edge/pulumi-edge/sdk/go/edge"
\t"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
\tpulumi.Run(func(ctx *pulumi.Context) error {
\t\tweb, err := edge.NewHttpsEdge(ctx, "web", &edge.HttpsEdgeArgs{})
\t\tif err != nil {
\t\t\treturn err
\t\t}
\t\troute, err := edge.NewHttpsEdgeRoute(ctx, "api", &edge.HttpsEdgeRouteArgs{
\t\t\tEdgeId: web.ID().ToStringOutput(), MatchType: edge.MatchTypePathPrefix, Match: pulumi.String("/api"),
\t\t})
\t\tif err != nil {
\t\t\treturn err
\t\t}
\t\tctx.Export("route", route.ID())
\t\treturn nil
\t})
}
`;

const goHost = host("go");
(goHost ? test : test.skip)(
  `a Go program with only the module: up, refresh and destroy with the downloaded plugin${
    goHost ? "" : " (skipped: no pulumi-language-go host here; the Go module proxy does not serve it)"
  }`,
  async () => {
    const program = join(base, "go-program");
    mkdirSync(program);
    writeFileSync(join(program, "main.go"), GO_PROGRAM);
    writeFileSync(join(program, "Pulumi.yaml"), "name: acquire-go\nruntime: go\n");
    const env = { GOFLAGS: "", GOWORK: "off" };
    await run("go", ["mod", "init", "example.com/acquire"], program, env);
    await run(
      "go",
      [
        "mod",
        "edit",
        `-replace=github.com/pulumi-edge/pulumi-edge/sdk/go=${join(base, "sdk", "sdks", "go")}`,
        `-require=github.com/pulumi-edge/pulumi-edge/sdk/go@v${VERSION}`,
        `-require=github.com/pulumi/pulumi/sdk/v3@v${engine.PULUMI_VERSION}`,
      ],
      program,
      env,
    );
    await run("go", ["mod", "tidy"], program, env);
    await lifecycle(program, "go", env);
  },
);

/**
 * A string for Pulumi YAML, which reads `${...}` as its own interpolation (`${VERSION}` is no
 * resource: "pluginDownloadURL must be a string"): `$${VERSION}` reaches the engine as
 * `${VERSION}`. A function replacer, since `$$` in a replacement string inserts one `$`.
 */
const yamlInterpolated = (url: string) => url.replace(/\$\{/g, () => "$${");

test("a download URL written for Pulumi YAML keeps the engine's ${VERSION} as $${VERSION}", () => {
  expect(yamlInterpolated("http://h/releases/v${VERSION}/${OS}")).toBe(
    "http://h/releases/v$${VERSION}/$${OS}",
  );
  expect(yamlInterpolated(downloadUrl)).toMatch(/\/releases\/v\$\$\{VERSION\}$/);
});

const yamlHost = host("yaml");
(yamlHost ? test : test.skip)(
  `a Pulumi YAML program with nothing installed: up, refresh and destroy with the downloaded plugin${
    yamlHost ? "" : " (skipped: no pulumi-language-yaml host here; the Go module proxy does not serve it)"
  }`,
  async () => {
    const program = join(base, "yaml-program");
    mkdirSync(program);
    // YAML has no SDK: the program names the plugin's version and where to get it.
    writeFileSync(
      join(program, "Pulumi.yaml"),
      [
        "name: acquire-yaml",
        "runtime: yaml",
        "resources:",
        "  web:",
        "    type: edge:HttpsEdge",
        "    options:",
        `      version: ${VERSION}`,
        `      pluginDownloadURL: ${yamlInterpolated(downloadUrl)}`,
        "  api:",
        "    type: edge:HttpsEdgeRoute",
        "    properties:",
        "      edgeId: ${web.id}",
        "      matchType: path_prefix",
        "      match: /api",
        "    options:",
        `      version: ${VERSION}`,
        `      pluginDownloadURL: ${yamlInterpolated(downloadUrl)}`,
        "outputs:",
        "  route: ${api.id}",
        "",
      ].join("\n"),
    );
    await lifecycle(program, "yaml");
  },
);

/** up, a no-change preview, refresh, destroy of a program on an empty PULUMI_HOME; one download. */
async function lifecycle(program: string, label: string, env: Record<string, string> = {}) {
  const home = cleanHome(label);
  requested.length = 0;
  const stack = await engine.directoryStack({
    workDir: program,
    stateDir: join(base, `state-${label}-program`),
    env: { ...env, ...acquiring(home) },
  });
  const up = await stack.up(quiet);
  expect(up.outputs.route!.value).toMatch(/^edghts_\w+\/edghtsrt_\w+$/);
  expect(requested).toEqual([`/releases/v${VERSION}/${ARCHIVE}`]);
  expect(existsSync(installedPlugin(home))).toBe(true);
  await stack.preview({ ...quiet, expectNoChanges: true });
  expect((await stack.refresh(quiet)).summary.result).toBe("succeeded");
  expect((await stack.destroy(quiet)).summary.resourceChanges?.delete).toBe(3);
}
