/**
 * The package's two commands as a user runs them, through the bins npm links
 * (node_modules/.bin, what `npx edge-service` and `npx pulumi-edge` run; `npm run build` links
 * them in a checkout): --help and --version answer on stdout with exit 0, a mistyped command
 * line says what was wrong and exits 2.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const VERSION = (require("../../package.json") as { version: string }).version;

function run(bin: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(join(engine.ROOT, "node_modules", ".bin", bin), args, { encoding: "utf8", env });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.each([
  {
    bin: "edge-service",
    usage: /^usage: edge-service serve .*edge-service request .*edge-service migrate /s,
  },
  {
    bin: "pulumi-edge",
    usage: /^usage: pulumi-edge migrate-to-packaged \[--stack NAME\] \[--cwd DIR\] \[--yes\]/,
  },
])("$bin", ({ bin, usage }) => {
  test("--help prints the usage on stdout and exits 0", () => {
    for (const flag of ["--help", "-h"]) {
      const r = run(bin, [flag]);
      expect([r.code, r.stderr]).toEqual([0, ""]);
      expect(r.stdout).toMatch(usage);
      expect(r.stdout).toMatch(/--help \| --version/);
    }
  });

  test("--version prints the package's version", () => {
    expect(run(bin, ["--version"])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
  });

  test("an unknown option is a usage error naming it", () => {
    const r = run(bin, ["--no-such-option"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      new RegExp(`^${bin}: Unknown option '--no-such-option'.*run ${bin} --help`, "s"),
    );
  });

  test("no command is a usage error", () => {
    const r = run(bin, []);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(usage);
  });
});

test("pulumi-edge migrate-to-packaged --help is the usage too", () => {
  const r = run("pulumi-edge", ["migrate-to-packaged", "--help"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/Pulumi\.yaml's backend\.url/);
});

test("pulumi-edge export --help is its usage; a mistyped flag of it is a usage error", () => {
  const help = run("pulumi-edge", ["export", "--help"]);
  expect([help.code, help.stderr]).toEqual([0, ""]);
  expect(help.stdout).toMatch(/^usage: pulumi-edge export \[--edge ID\]\.\.\./);
  expect(run("pulumi-edge", ["--help"]).stdout).toMatch(/^ +pulumi-edge export \[--edge ID\]/m);
  const bad = run("pulumi-edge", ["export", "--edges", "x"]);
  expect([bad.code, bad.stdout]).toEqual([2, ""]);
  expect(bad.stderr).toMatch(/^pulumi-edge export: Unknown option '--edges'.*run pulumi-edge export --help/s);
  const stray = run("pulumi-edge", ["export", "everything"]);
  expect(stray.code).toBe(2);
});

test("pulumi-edge migrate-to-packaged without a pulumi CLI says so", () => {
  // Only node's own directory on PATH: no pulumi anywhere.
  const r = run("pulumi-edge", ["migrate-to-packaged"], { ...process.env, PATH: dirname(process.execPath) });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^pulumi-edge: no `pulumi` on PATH: install the Pulumi CLI/);
});
