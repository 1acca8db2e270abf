/**
 * The package as users get it: `npm pack`, installed into a fresh Pulumi project outside this
 * repository, deployed against the embedded service; then the project moves to another path
 * and its state still refreshes and destroys (the state carries no paths and no project code).
 * The same installed package serves the packaged face: its plugin runs from node_modules.
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
  expect(providers).toHaveLength(4);
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
  expect(destroy.summary.resourceChanges?.delete).toBe(5);
});

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
      "plugins:\n  providers:\n    - name: edge\n      version: 0.1.0\n      path: node_modules/pulumi-edge/bin\n",
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
