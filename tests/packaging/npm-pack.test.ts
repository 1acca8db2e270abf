/**
 * The package as users get it: `npm pack`, installed into a fresh Pulumi project outside this
 * repository, deployed against the embedded service; then the project moves to another path
 * and its state still refreshes and destroys (the state carries no paths and no project code).
 * The same installed package serves the packaged face: its plugin runs from node_modules.
 * Beside the tarball, `npm pack` writes the Python SDK's wheel and the Go SDK's module: each is
 * installed from the file by its own language's tools, outside this repository, and used.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { quiet } from "../engine/support/harness";
import { runCommand as run, venvWithWheel } from "../support/command";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const PROGRAM = `
import * as pulumi from "@pulumi/pulumi";
import { HttpsEdge, HttpsEdgeRoute, TlsEdge, TlsEdgeIpRestriction } from "pulumi-edge";

const edge = new HttpsEdge("web", { hostports: ["packaged.example.com:443"] });
const route = new HttpsEdgeRoute("api", {
  edgeId: edge.id,
  matchType: "path_prefix",
  match: "/api",
  backend: { backendId: "bkd_api" },
  requestHeaders: { add: { "X-Packaged": "yes" } },
  oidc: { issuer: "https://login.example.com", clientId: "c", clientSecret: pulumi.secret("packaged-oidc-secret") },
});
const tls = new TlsEdge("tcp", {});
new TlsEdgeIpRestriction("allow", { edgeId: tls.id, ipPolicyIds: ["ipp_1"] });
export const routeUri = route.uri;
`;

let base: string;
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "edge-packaged-"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

test("npm pack → fresh project → up; moved elsewhere, the state refreshes and destroys", async () => {
  execFileSync("npm", ["pack", "--pack-destination", base, "--loglevel=error"], { cwd: engine.ROOT });
  const tarball = readdirSync(base).find((f) => f.endsWith(".tgz"))!;
  expect(tarball).toMatch(/^pulumi-edge-.*\.tgz$/);

  const first = join(base, "project-a");
  mkdirSync(first);
  writeFileSync(
    join(first, "package.json"),
    JSON.stringify({
      name: "consumer",
      private: true,
      main: "index.ts",
      dependencies: { "pulumi-edge": `file:${join(base, tarball)}`, "@pulumi/pulumi": engine.PULUMI_VERSION },
      // As in Pulumi's own TypeScript template.
      devDependencies: { typescript: require("typescript/package.json").version },
    }),
  );
  writeFileSync(
    join(first, "Pulumi.yaml"),
    "name: consumer\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n",
  );
  writeFileSync(
    join(first, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: "ES2022",
        module: "commonjs",
        moduleResolution: "node10",
        esModuleInterop: true,
        skipLibCheck: true,
      },
      files: ["index.ts"],
    }),
  );
  writeFileSync(join(first, "index.ts"), PROGRAM);
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: first,
  });
  // Compiled JS and type declarations only.
  const installed = join(first, "node_modules", "pulumi-edge");
  expect(existsSync(join(installed, "dist", "index.d.ts"))).toBe(true);
  expect(existsSync(join(installed, "provider"))).toBe(false);

  const stateDir = join(base, "state");
  const stack = await engine.directoryStack({ workDir: first, stateDir });
  await stack.up(quiet);
  expect(existsSync(join(first, ".edge-service", "edge.db"))).toBe(true); // the embedded default
  await stack.preview({ ...quiet, expectNoChanges: true });

  const deployment = (await stack.exportStack()).deployment as {
    resources: Array<{ type: string; outputs?: any }>;
  };
  const providers = deployment.resources
    .filter((r) => r.outputs?.__provider)
    .map((r) => r.outputs.__provider as string);
  expect(providers).toHaveLength(5); // the four resources and the stack's anchor (provider/identity)
  for (const code of providers) {
    // Only what the dynamic provider host needs: a module whose handler() returns the provider.
    expect(code).toMatch(/^exports\.handler = \(\) => require\("pulumi-edge\/runtime"\)\.handlers\.\w+;\n$/);
    expect(code).not.toContain(base); // no absolute paths
    expect(code).not.toMatch(/edgeClient|planRoute|zod/); // no project code by value
  }

  const second = join(base, "moved", "project-b");
  mkdirSync(join(base, "moved"));
  renameSync(first, second);
  const moved = await engine.directoryStack({ workDir: second, stateDir });
  const refresh = await moved.refresh(quiet);
  expect(refresh.summary.result).toBe("succeeded");
  await moved.preview({ ...quiet, expectNoChanges: true });
  const destroy = await moved.destroy(quiet);
  expect(destroy.summary.resourceChanges?.delete).toBe(6);
}, 600_000); // npm pack builds the SDKs and six archives, then npm install and four engine runs

test("the installed package carries the plugin and every generated SDK; the plugin runs from node_modules", async () => {
  const project = join(base, "moved", "project-b");
  const installed = join(project, "node_modules", "pulumi-edge");
  for (const file of [
    "bin/pulumi-resource-edge",
    "dist/provider/plugin/index.js",
    "dist/packaged/index.d.ts",
    "dist/sdks/python/pyproject.toml",
    "dist/sdks/go/edge/httpsEdgeRoute.go",
  ]) {
    expect([file, existsSync(join(installed, file))]).toEqual([file, true]);
  }
  const packaged = join(base, "packaged");
  mkdirSync(packaged);
  // The user's layout: the plugin where npm put it, in the project's node_modules.
  renameSync(join(project, "node_modules"), join(packaged, "node_modules"));
  writeFileSync(
    join(packaged, "package.json"),
    JSON.stringify({ name: "consumer-packaged", private: true, main: "index.ts" }),
  );
  writeFileSync(
    join(packaged, "Pulumi.yaml"),
    "name: consumer-packaged\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n" +
      `plugins:\n  providers:\n    - name: edge\n      version: ${VERSION}\n      path: node_modules/pulumi-edge/bin\n`,
  );
  writeFileSync(join(packaged, "tsconfig.json"), readFileSync(join(project, "tsconfig.json")));
  writeFileSync(
    join(packaged, "index.ts"),
    `import * as edge from "pulumi-edge/packaged";
const web = new edge.HttpsEdge("web", { hostports: ["packaged.example.com:443"] });
export const route = new edge.HttpsEdgeRoute("api", { edgeId: web.id, matchType: "exact_path", match: "/p", compression: {} }).id;
`,
  );
  const stack = await engine.directoryStack({ workDir: packaged, stateDir: join(base, "state-packaged") });
  const up = await stack.up(quiet);
  expect(up.outputs.route!.value).toMatch(/^edghts_\w+\/edghtsrt_\w+$/);
  await stack.preview({ ...quiet, expectNoChanges: true });
  await stack.destroy(quiet);
});

const VERSION = (require("../../package.json") as { version: string }).version;

test("beside the tarball: the Python SDK's wheel, which pip installs from the file into a virtualenv of its own", async () => {
  const wheel = join(base, `pulumi_edge-${VERSION}-py3-none-any.whl`);
  expect(existsSync(wheel)).toBe(true);
  const venv = join(base, "venv");
  // As the guide says: the wheel and the Pulumi SDK at the engine's version, nothing else named.
  await venvWithWheel(venv, wheel, engine.PULUMI_VERSION);
  const out = await run(
    join(venv, "bin/python"),
    [
      "-c",
      [
        "import importlib.metadata as m, json, pathlib, pulumi, pulumi_edge",
        "plugin = json.loads((pathlib.Path(pulumi_edge.__file__).parent / 'pulumi-plugin.json').read_text())",
        "print(m.version('pulumi'), m.version('pulumi_edge'), plugin['name'], plugin['version'])",
        "print(pulumi_edge.HttpsEdgeRoute.__name__, pulumi_edge.MatchType.PATH_PREFIX.value)",
      ].join("\n"),
    ],
    base,
  );
  // The SDK asks the engine for the plugin `edge` at the package's version, which Pulumi.yaml declares.
  expect(out.trim().split("\n")).toEqual([
    `${engine.PULUMI_VERSION} ${VERSION} edge ${VERSION}`,
    "HttpsEdgeRoute path_prefix",
  ]);
});

test("beside the tarball: the Go SDK's module, which a program outside this repository builds on with a replace", async () => {
  const goModule = join(base, `pulumi-edge-go-${VERSION}`);
  expect(existsSync(join(goModule, "go.mod"))).toBe(true);
  const program = join(base, "go-consumer");
  mkdirSync(program);
  writeFileSync(
    join(program, "main.go"),
    `package main

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
\t\t_, err = edge.NewHttpsEdgeRoute(ctx, "api", &edge.HttpsEdgeRouteArgs{
\t\t\tEdgeId: web.ID().ToStringOutput(), MatchType: edge.MatchTypePathPrefix, Match: pulumi.String("/api"),
\t\t})
\t\treturn err
\t})
}
`,
  );
  // The guide's steps, with the user's go: no GOFLAGS, no workspace file of this repository.
  const env = { GOFLAGS: "", GOWORK: "off" };
  await run("go", ["mod", "init", "example.com/consumer"], program, env);
  // The Pulumi Go SDK pinned to the engine's version: a bare `go mod tidy` would take the newest.
  await run(
    "go",
    [
      "mod",
      "edit",
      `-replace=github.com/pulumi-edge/pulumi-edge/sdk/go=../pulumi-edge-go-${VERSION}`,
      `-require=github.com/pulumi-edge/pulumi-edge/sdk/go@v${VERSION}`,
      `-require=github.com/pulumi/pulumi/sdk/v3@v${engine.PULUMI_VERSION}`,
    ],
    program,
    env,
  );
  await run("go", ["mod", "tidy"], program, env);
  expect(await run("go", ["list", "-m", "github.com/pulumi/pulumi/sdk/v3"], program, env)).toBe(
    `github.com/pulumi/pulumi/sdk/v3 v${engine.PULUMI_VERSION}\n`,
  );
  await run("go", ["build", "-o", "consumer", "."], program, env);
  expect(existsSync(join(program, "consumer"))).toBe(true);
});

test("beside the tarball: the plugin and the service as one archive per platform, and their checksums.txt", () => {
  const sums = readFileSync(join(base, "checksums.txt"), "utf8");
  for (const platform of ["linux-amd64", "linux-arm64", "darwin-arm64"]) {
    for (const program of ["pulumi-resource-edge", "edge-service"]) {
      const archive = `${program}-v${VERSION}-${platform}.tar.gz`;
      // sha256sum's format: what `sha256sum -c` and `pulumi plugin install --checksum` take.
      const sha = execFileSync("sha256sum", [archive], { cwd: base, encoding: "utf8" });
      expect(sums).toContain(sha);
      const listing = execFileSync("tar", ["-tzf", join(base, archive)], { encoding: "utf8" }).split("\n");
      expect(listing).toEqual(
        expect.arrayContaining([program, `${program}.js`, "node_modules/libsql/index.js"]),
      );
    }
  }
});
