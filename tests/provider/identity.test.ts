/**
 * The create identity (provider/identity): anchored in the stack's state once it holds an anchor,
 * derived from the environment (as the CLI resolves the backend) before. Through the engine:
 * tests/reliability/create-identity and tests/reliability/exactly-once.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  anchoredIdentity,
  createIdentityOf,
  derivedIdentity,
  isAnchor,
  newAnchor,
} from "../../provider/identity";
import {
  backendUrl,
  deriveInstance,
  normaliseBackend,
  type Surroundings,
  UnknownInstance,
} from "../../provider/identity/instance";
import { assertRecoverable, RECOVERY_WINDOW_HOURS } from "../../provider/lifecycle/held";

const URN = "urn:pulumi:test::shop::pulumi-edge:index:HttpsEdgeRoute::api";
const INSTANCE = { backend: "file://ci-7/srv/state", salt: "v1:abc" };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-identity-unit-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("the identity formulas", () => {
  test("the derived identity is pulumi-edge 0.2.0's, byte for byte (a create lost by 0.2.0 is found)", () => {
    const v2 = createHash("sha256")
      .update(`pulumi-edge create identity v2\n${INSTANCE.backend}\n${INSTANCE.salt}\n${URN}`)
      .digest("base64url");
    expect(derivedIdentity(URN, INSTANCE)).toBe(v2);
  });

  test("the anchored identity differs by anchor and URN, and from the derived one", () => {
    const [a, b] = [newAnchor(), newAnchor()];
    expect(isAnchor(a) && isAnchor(b) && a !== b).toBe(true);
    const ids = [
      anchoredIdentity(a, URN),
      anchoredIdentity(b, URN),
      anchoredIdentity(a, URN.replace("::api", "::web")),
      anchoredIdentity(a, URN.replace(":test::", ":prod::")),
      derivedIdentity(URN, INSTANCE),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(anchoredIdentity(a, URN)).toBe(anchoredIdentity(a, URN));
  });
});

describe("which identity a create carries", () => {
  const checkpoints = {};
  const fast = { PULUMI_SKIP_CHECKPOINTS: "true" };
  const unknown = new UnknownInstance("the CLI's login file is encrypted");

  test("an anchor read from the state: that anchor's identity, proven, and nothing derived", () => {
    const fromState = "a".repeat(43); // not made by this process
    for (const env of [checkpoints, fast]) {
      expect(createIdentityOf(URN, fromState, env, INSTANCE)).toEqual({
        identity: anchoredIdentity(fromState, URN),
        proven: true,
      });
    }
  });

  test("an anchor made in this run, with checkpoints: the anchor's, naming the derived one as prior", () => {
    const anchor = newAnchor();
    expect(createIdentityOf(URN, anchor, checkpoints, INSTANCE)).toEqual({
      identity: anchoredIdentity(anchor, URN),
      prior: derivedIdentity(URN, INSTANCE),
      proven: true,
    });
  });

  test("an anchor made in this run, in fast mode (lost with a killed run): the derived identity itself", () => {
    const anchor = newAnchor();
    for (const value of ["true", "TRUE", "1"]) {
      expect(createIdentityOf(URN, anchor, { PULUMI_SKIP_CHECKPOINTS: value }, INSTANCE)).toEqual({
        identity: derivedIdentity(URN, INSTANCE),
        proven: false,
      });
    }
    expect(createIdentityOf(URN, anchor, { PULUMI_SKIP_CHECKPOINTS: "false" }, INSTANCE).proven).toBe(true);
  });

  test("where the environment cannot be read, nothing is derived, and it says so", () => {
    const anchor = newAnchor();
    for (const env of [checkpoints, fast]) {
      const id = createIdentityOf(URN, anchor, env, unknown);
      expect(id).toEqual({
        identity: anchoredIdentity(anchor, URN),
        proven: true,
        warning: expect.any(String),
      });
      expect(id.warning).toMatch(
        /cannot tell which backend holds this stack \(the CLI's login file is encrypted\)/,
      );
    }
  });
});

describe("the stack instance, as the CLI resolves it", () => {
  const at = (over: Partial<Surroundings> = {}): Surroundings => ({
    cwd: dir,
    env: { PULUMI_HOME: join(dir, "pulumi-home") },
    home: join(dir, "account"),
    host: "ci-7",
    ...over,
  });
  const project = (root: string, extra = "") => {
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, "Pulumi.yaml"), `name: shop\nruntime: nodejs\n${extra}`);
  };
  const login = (folder: string, creds: unknown) => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "credentials.json"), JSON.stringify(creds));
  };

  test("the project is found above the program's directory (`main: src/`), and must be PULUMI_PROJECT", () => {
    project(dir, "main: src/\nbackend:\n  url: s3://team-state\n");
    writeFileSync(join(dir, "Pulumi.test.yaml"), "encryptionsalt: v1:salt\n");
    const src = join(dir, "src");
    mkdirSync(src);
    // A file of another project in the program's own directory is passed over.
    writeFileSync(join(src, "Pulumi.yaml"), "name: other\nruntime: nodejs\n");
    const env = { PULUMI_PROJECT: "shop" };
    expect(deriveInstance("test", at({ cwd: src, env }))).toEqual({
      backend: "s3://team-state",
      salt: "v1:salt",
    });
    expect(deriveInstance("test", at({ cwd: src, env: { PULUMI_PROJECT: "nope" } }))).toEqual(
      new UnknownInstance(`no Pulumi.yaml of project "nope" in ${src} or above it`),
    );
  });

  test("the salt comes from the project's stackConfigDir; none is ''", () => {
    project(dir, "stackConfigDir: config\nbackend:\n  url: s3://x\n");
    mkdirSync(join(dir, "config"));
    writeFileSync(join(dir, "config", "Pulumi.test.yaml"), "encryptedkey: kms-key-blob\n");
    expect(deriveInstance("org/test", at())).toEqual({ backend: "s3://x", salt: "kms-key-blob" });
    expect(deriveInstance("prod", at())).toEqual({ backend: "s3://x", salt: "" });
  });

  test("PULUMI_BACKEND_URL, then backend.url, then the login in PULUMI_CREDENTIALS_PATH, PULUMI_HOME, ~/.pulumi, then Pulumi Cloud", () => {
    const s = at();
    expect(backendUrl({}, { ...s, env: {} })).toBe("https://api.pulumi.com");
    login(join(s.home, ".pulumi"), { current: "https://account-home.example" });
    expect(backendUrl({}, { ...s, env: {} })).toBe("https://account-home.example");
    login(join(dir, "pulumi-home"), { current: "https://pulumi-home.example", accessTokens: {} });
    expect(backendUrl({}, s)).toBe("https://pulumi-home.example");
    login(join(dir, "creds"), { current: "file:///logged/in/elsewhere" });
    const withCreds = { ...s, env: { ...s.env, PULUMI_CREDENTIALS_PATH: join(dir, "creds") } };
    expect(backendUrl({}, withCreds)).toBe("file:///logged/in/elsewhere");
    expect(backendUrl({ backend: { url: "azblob://project" } }, withCreds)).toBe("azblob://project");
    expect(
      backendUrl(
        { backend: { url: "azblob://project" } },
        { ...withCreds, env: { ...withCreds.env, PULUMI_BACKEND_URL: "gs://env" } },
      ),
    ).toBe("gs://env");
  });

  test("a login file the credential store encrypted cannot be read: the instance is unknown", () => {
    login(join(dir, "creds"), { $pulumiSecureStore: 1, backend: "keychain", data: "AAAA" });
    const s = at({ env: { PULUMI_CREDENTIALS_PATH: join(dir, "creds") } });
    expect(backendUrl({}, s)).toEqual(
      new UnknownInstance(expect.stringContaining("encrypted by the credential store")),
    );
    project(dir);
    expect(deriveInstance("test", s)).toBeInstanceOf(UnknownInstance);
    // A backend named outright needs no login.
    expect(deriveInstance("test", { ...s, env: { ...s.env, PULUMI_BACKEND_URL: "s3://b" } })).toEqual({
      backend: "s3://b",
      salt: "",
    });
  });

  test("a file backend is one real path on this host, however it is spelled", () => {
    const s = at();
    const state = join(dir, "state");
    mkdirSync(state);
    symlinkSync(state, join(dir, "link"));
    const want = `file://ci-7${state}`;
    for (const url of [
      `file://${state}`,
      `file://${state}/`,
      `file://${state}//`,
      `file://${join(dir, "link")}`,
      `file://${dir}/x/../state`,
      `file://${state}?no_tmp_dir=true`,
      "file://./state",
      "file://state",
    ]) {
      expect([url, normaliseBackend(url, dir, s)]).toEqual([url, want]);
    }
    // `~` is the account's home directory (as `user.Current()`), not $HOME.
    expect(normaliseBackend("file://~/state", "/elsewhere", s)).toBe(`file://ci-7${join(s.home, "state")}`);
    expect(normaliseBackend("file://~", "/elsewhere", s)).toBe(`file://ci-7${s.home}`);
    // Relative to the CLI's working directory: another directory is another backend.
    expect(normaliseBackend("file://./state", join(dir, "sub"), s)).toBe(
      `file://ci-7${join(dir, "sub", "state")}`,
    );
    // A path not made yet resolves through its existing parent's symlinks.
    expect(normaliseBackend(`file://${join(dir, "link", "new")}`, "/", s)).toBe(
      `file://ci-7${join(state, "new")}`,
    );
    // Other URLs: one spelling without a trailing slash.
    expect(normaliseBackend("https://api.pulumi.com/", dir, s)).toBe("https://api.pulumi.com");
  });

  test("a relative backend.url is resolved from the CLI's working directory, else the project's", () => {
    project(dir, "main: src/\nbackend:\n  url: file://./.pulumi-state\n");
    mkdirSync(join(dir, "src"));
    const fromProgram = at({ cwd: join(dir, "src") });
    expect(deriveInstance("test", fromProgram)).toEqual({
      backend: `file://ci-7${dir}/.pulumi-state`,
      salt: "",
    });
    expect(deriveInstance("test", { ...fromProgram, cliCwd: "/srv/run" })).toEqual({
      backend: "file://ci-7/srv/run/.pulumi-state",
      salt: "",
    });
  });
});

describe("the recovery window of derived identities", () => {
  const take = {
    importType: "edge:index:HttpsEdgeRoute",
    importId: "edghts_1/edghtsrt_2",
    dynamic: "set `adopt: true`",
  };
  const now = Date.parse("2026-11-25T12:00:00Z");
  const ago = (hours: number) => new Date(now - hours * 3_600_000).toISOString();

  test("an object made within it is taken back (a first update killed in fast mode)", () => {
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
