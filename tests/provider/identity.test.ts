/**
 * The create identity names one stack instance (provider/identity): the backend the CLI resolves,
 * the settings file's salt and the URN. Through the engine: tests/reliability/create-identity.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { createIdentity, currentBackend, normaliseBackend } from "../../provider/identity";
import { assertRecoverable, RECOVERY_WINDOW_HOURS } from "../../provider/lifecycle/held";

const URN = "urn:pulumi:test::shop::pulumi-edge:index:HttpsEdgeRoute::api";
const host = hostname();

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-identity-unit-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("the identity", () => {
  test("is the same for the same backend, salt and URN, and differs when any of them does", () => {
    const a = { backend: "file:///state/a", salt: "v1:abc" };
    expect(createIdentity(URN, a)).toBe(createIdentity(URN, { ...a }));
    const others = [
      createIdentity(URN, { ...a, backend: "file:///state/b" }),
      createIdentity(URN, { ...a, salt: "v1:def" }),
      createIdentity(URN, { ...a, salt: "" }),
      createIdentity(URN.replace("::api", "::web"), a),
      createIdentity(URN.replace(":test::", ":prod::"), a),
    ];
    expect(new Set([createIdentity(URN, a), ...others]).size).toBe(others.length + 1);
  });

  test("two backends without any salt (--config-file, Pulumi Cloud secrets) still differ", () => {
    expect(createIdentity(URN, { backend: "s3://team-a-state", salt: "" })).not.toBe(
      createIdentity(URN, { backend: "s3://team-b-state", salt: "" }),
    );
  });
});

describe("the backend, as the CLI selects it", () => {
  const env = (vars: Record<string, string>): NodeJS.ProcessEnv => ({
    PULUMI_HOME: join(dir, "home"),
    ...vars,
  });
  const login = (current: string) => {
    mkdirSync(join(dir, "home"), { recursive: true });
    writeFileSync(join(dir, "home", "credentials.json"), JSON.stringify({ current, accounts: {} }));
  };

  test("PULUMI_BACKEND_URL first, then the project's backend.url, then the stored login, then Pulumi Cloud", () => {
    expect(currentBackend(dir, undefined, env({}))).toBe("https://api.pulumi.com");
    login("https://pulumi.internal.example/");
    expect(currentBackend(dir, undefined, env({}))).toBe("https://pulumi.internal.example");
    expect(currentBackend(dir, { backend: { url: "s3://project-state" } }, env({}))).toBe(
      "s3://project-state",
    );
    expect(
      currentBackend(
        dir,
        { backend: { url: "s3://project-state" } },
        env({ PULUMI_BACKEND_URL: "gs://env-state" }),
      ),
    ).toBe("gs://env-state");
  });

  test("reads the project's Pulumi.yaml when not given", () => {
    writeFileSync(join(dir, "Pulumi.yaml"), "name: shop\nruntime: nodejs\nbackend:\n  url: azblob://state\n");
    expect(currentBackend(dir, undefined, env({}))).toBe("azblob://state");
  });

  test("a file backend is one absolute path on this host, however it is spelled", () => {
    const home = { HOME: homedir() };
    expect(normaliseBackend("file://~", dir, home)).toBe(`file://${host}${homedir()}`);
    expect(normaliseBackend("file://~/state/", dir, home)).toBe(`file://${host}${join(homedir(), "state")}`);
    expect(normaliseBackend("file://./state", dir, home)).toBe(`file://${host}${join(dir, "state")}`);
    expect(normaliseBackend("file://state?no_legacy=true", dir, home)).toBe(
      `file://${host}${join(dir, "state")}`,
    );
    expect(normaliseBackend(`file://${dir}/state/../state`, "/elsewhere", home)).toBe(
      `file://${host}${join(dir, "state")}`,
    );
    // The same path under two project directories (two checkouts) is still one backend when absolute.
    expect(normaliseBackend("file:///srv/state", dir, home)).toBe(
      normaliseBackend("file:///srv/state", "/x", home),
    );
  });
});

describe("the recovery window", () => {
  const take = {
    importType: "edge:index:HttpsEdgeRoute",
    importId: "edghts_1/edghtsrt_2",
    dynamic: "set `adopt: true`",
  };
  const now = Date.parse("2026-11-25T12:00:00Z");
  const ago = (hours: number) => new Date(now - hours * 3_600_000).toISOString();

  test("an object made within it is taken back (a lost answer, a killed run)", () => {
    expect(() => assertRecoverable("route", "edghtsrt_2", ago(0), take, now)).not.toThrow();
    expect(() =>
      assertRecoverable("route", "edghtsrt_2", ago(RECOVERY_WINDOW_HOURS - 0.1), take, now),
    ).not.toThrow();
    // Without a creation time (a module), the identity alone decides.
    expect(() => assertRecoverable("module", "edgtls_1", undefined, take, now)).not.toThrow();
  });

  test("an older one is refused, naming it and the command that takes it on purpose", () => {
    expect(() => assertRecoverable("route", "edghtsrt_2", ago(RECOVERY_WINDOW_HOURS + 1), take, now)).toThrow(
      /route edghtsrt_2 was made 25 hours ago .* `pulumi import edge:index:HttpsEdgeRoute <name> edghts_1\/edghtsrt_2` \(packaged provider\), or set `adopt: true`/,
    );
    expect(() => assertRecoverable("route", "edghtsrt_2", ago(24 * 9), take, now)).toThrow(
      /was made 9 days ago/,
    );
  });
});
