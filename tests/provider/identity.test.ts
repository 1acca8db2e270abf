/**
 * The create identity (provider/identity): anchored in the stack's state, judged where the state
 * lives (a copy or a move takes a new anchor), never derived from the environment. Through the
 * engine: tests/reliability/create-identity and tests/reliability/exactly-once.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProviderProcess } from "../../provider/engine/process";
import {
  anchoredIdentity,
  anchorValue,
  assertAnchorKept,
  isAnchor,
  judgeAnchor,
  placeOf,
  type Surroundings,
  UnknownPlace,
} from "../../provider/identity";
import { backendUrl, filePath } from "../../provider/identity/place";
import type { ResourceLog } from "../../provider/lifecycle";

const URN = "urn:pulumi:test::shop::edge:index:HttpsEdgeRoute::api";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "edge-identity-unit-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const quiet: ResourceLog = { info: () => undefined, warn: () => undefined };
const heard = () => {
  const said: string[] = [];
  return { said, log: { info: () => undefined, warn: (m: string) => void said.push(m) } };
};

describe("the identity formula", () => {
  test("the SHA-256 of the anchor and the URN, differing by either", () => {
    const [a, b] = [anchorValue(), anchorValue()];
    expect(isAnchor(a) && isAnchor(b) && a !== b).toBe(true);
    const v3 = createHash("sha256")
      .update(`pulumi-edge create identity v3\n${a}\n${URN}`)
      .digest("base64url");
    expect(anchoredIdentity(a, URN)).toBe(v3);
    const ids = [
      anchoredIdentity(a, URN),
      anchoredIdentity(b, URN),
      anchoredIdentity(a, URN.replace("::api", "::web")),
      anchoredIdentity(a, URN.replace(":test::", ":prod::")),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("the anchor a run keeps (judgeAnchor)", () => {
  const anchor = "a".repeat(43);
  const here = "file:///srv/state";

  test("recorded here: kept as it is", () => {
    expect(judgeAnchor({ anchor, place: here }, here)).toEqual({
      action: "keep",
      record: { anchor, place: here },
      changed: false,
    });
  });

  test("recorded elsewhere (a copy or a move): a new anchor, and it says where from and where to", () => {
    const verdict = judgeAnchor({ anchor, place: "file:///srv/other" }, here);
    expect(verdict.action).toBe("new");
    expect(verdict.action === "new" && verdict.why).toMatch(
      /written at file:\/\/\/srv\/other and now lives at file:\/\/\/srv\/state: it is a copy or a move/,
    );
  });

  test("made where no place could be told, known now: a new anchor, said (a copy could share it)", () => {
    const verdict = judgeAnchor({ anchor }, here);
    expect(verdict.action).toBe("new");
    expect(verdict.action === "new" && verdict.why).toMatch(
      /made where the state's place could not be told, and it now lives at file:\/\/\/srv\/state/,
    );
  });

  test("no place can be told now: a recorded one may be a copy's (a new anchor); none recorded is kept", () => {
    const unknown = new UnknownPlace("encrypted login");
    const verdict = judgeAnchor({ anchor, place: here }, unknown);
    expect(verdict.action === "new" && verdict.why).toMatch(
      /written at file:\/\/\/srv\/state, and where it lives now cannot be told \(encrypted login\): it may be a copy.*PULUMI_BACKEND_URL/,
    );
    expect(judgeAnchor({ anchor }, unknown)).toEqual({ action: "keep", record: { anchor }, changed: false });
  });

  test("no anchor: a new one, nothing to say; not an anchor (edited, damaged): a new one, said", () => {
    expect(judgeAnchor({}, here)).toEqual({ action: "new" });
    for (const bad of ["short", 42, "b".repeat(44), { anchor }]) {
      const verdict = judgeAnchor({ anchor: bad, place: here }, here);
      expect(verdict.action === "new" && verdict.why).toMatch(/is not a valid anchor \(edited or damaged/);
    }
  });
});

describe("a create's anchor in fast mode", () => {
  test("one this run made is refused with PULUMI_SKIP_CHECKPOINTS (it would not be saved before the creates)", () => {
    for (const value of ["true", "TRUE", "1"]) {
      expect(() => assertAnchorKept(true, { PULUMI_SKIP_CHECKPOINTS: value })).toThrow(
        /PULUMI_SKIP_CHECKPOINTS is set.*Nothing was created\. Run this one update with checkpoints/,
      );
    }
    expect(() => assertAnchorKept(true, { PULUMI_SKIP_CHECKPOINTS: "false" })).not.toThrow();
    expect(() => assertAnchorKept(true, {})).not.toThrow();
    // One the state held before this run: fast mode is safe.
    expect(() => assertAnchorKept(false, { PULUMI_SKIP_CHECKPOINTS: "true" })).not.toThrow();
  });

  test("the provider process refuses such a create, and only such", () => {
    const env = { PULUMI_SKIP_CHECKPOINTS: "true", PULUMI_BACKEND_URL: "s3://b" };
    const host = new ProviderProcess(env, () => ({ cwd: dir, env, home: dir }));
    const renew = "renew it";
    const made = host.newAnchor();
    expect(() => host.operation(URN, { create: { record: made, renew } })).toThrow(
      /PULUMI_SKIP_CHECKPOINTS is set/,
    );
    const fromState = "c".repeat(43);
    const record = { anchor: fromState, place: "s3://b" };
    expect(host.operation(URN, { create: { record, renew } }).ctx.identity).toBe(
      anchoredIdentity(fromState, URN),
    );
  });
});

describe("the provider process's anchor", () => {
  const env = { PULUMI_BACKEND_URL: "s3://team-state" };
  const host = () => new ProviderProcess(env, () => ({ cwd: dir, env, home: dir }));

  test("a copy's new anchor is said once, however often the state is judged", () => {
    const h = host();
    const { said, log } = heard();
    const stored = { anchor: "d".repeat(43), place: "s3://old-state" };
    const first = h.anchorFor(stored, log);
    h.anchorFor(stored, log);
    expect(first.changed).toBe(true);
    expect(first.record.anchor).not.toBe(stored.anchor);
    expect(first.record.place).toBe("s3://team-state");
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/written at s3:\/\/old-state and now lives at s3:\/\/team-state/);
  });

  test("the organization names the place on a backend that is not a file", () => {
    const h = host();
    expect(h.place("acme")).toBe("s3://team-state (organization acme)");
    expect(h.place()).toBe("s3://team-state");
    const stored = { anchor: "e".repeat(43), place: "s3://team-state (organization acme)" };
    expect(h.anchorFor(stored, quiet, "acme").changed).toBe(false);
    expect(h.anchorFor(stored, quiet, "globex").record.anchor).not.toBe(stored.anchor);
  });
});

describe("a create judges its anchor where the state lives now", () => {
  const env = { PULUMI_BACKEND_URL: "s3://copy-state" };
  const host = () => new ProviderProcess(env, () => ({ cwd: dir, env, home: dir }));
  const renew = "Run `pulumi up` once without --target.";

  test("an anchor recorded elsewhere (a copy the run did not renew: --target) is refused, naming the fix", () => {
    const record = { anchor: "f".repeat(43), place: "s3://original-state" };
    expect(() => host().operation(URN, { create: { record, renew } })).toThrow(
      /recorded at s3:\/\/original-state, and its state now lives at s3:\/\/copy-state.*Nothing was created\. Run `pulumi up` once without --target\./,
    );
    // The same anchor judged here is the stack's.
    const here = { anchor: record.anchor, place: "s3://copy-state" };
    expect(host().operation(URN, { create: { record: here, renew } }).ctx.identity).toBe(
      anchoredIdentity(here.anchor, URN),
    );
  });

  test("the organization is part of the place on a shared backend", () => {
    const record = { anchor: "f".repeat(43), place: "s3://copy-state (organization acme)" };
    expect(() => host().operation(URN, { create: { record, organization: "globex", renew } })).toThrow(
      /Nothing was created/,
    );
    expect(
      host().operation(URN, { create: { record, organization: "acme", renew } }).ctx.identity,
    ).toBeDefined();
  });

  test("a new anchor is recorded with the organization, so the next run keeps it", () => {
    const h = host();
    const made = h.anchorFor({}, quiet, "acme").record;
    expect(made.place).toBe("s3://copy-state (organization acme)");
    expect(host().anchorFor(made, quiet, "acme")).toEqual({ record: made, changed: false });
  });

  test("where no place can be told, the anchor is kept, and that is said once per run", () => {
    const unknownEnv = { PULUMI_PROJECT: "nowhere" };
    const h = new ProviderProcess(unknownEnv, () => ({ cwd: dir, env: unknownEnv, home: dir }));
    const { said, log } = heard();
    const made = h.anchorFor({}, log).record;
    expect(made.place).toBeUndefined();
    expect(h.anchorFor(made, log)).toEqual({ record: made, changed: false });
    h.operation(URN, { create: { record: made, renew } });
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      /cannot be told \(no project file .*a copy of it .* would not be told apart.*PULUMI_BACKEND_URL/,
    );
  });
});

describe("where the state lives, as the CLI resolves it", () => {
  const at = (over: Partial<Surroundings> = {}): Surroundings => ({
    cwd: dir,
    env: { PULUMI_HOME: join(dir, "pulumi-home"), PULUMI_PROJECT: "shop" },
    home: join(dir, "account"),
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

  test("the project is found from the CLI's directory first (an inline program's workspace), else the program's", () => {
    const workDir = join(dir, "workspace");
    project(workDir, "backend:\n  url: s3://from-workspace\n");
    const elsewhere = join(dir, "caller");
    mkdirSync(elsewhere);
    // An inline Automation API program: the provider runs where the calling process does.
    expect(placeOf(at({ cwd: elsewhere, cliCwd: workDir }))).toBe("s3://from-workspace");
    expect(placeOf(at({ cwd: elsewhere }))).toEqual(
      new UnknownPlace(
        `no project file (Pulumi.json, Pulumi.yaml or Pulumi.yml) of project "shop" in ${elsewhere} or above`,
      ),
    );
  });

  test("every project file the CLI accepts, in its order: Pulumi.json, then .yaml, then .yml", () => {
    const json = join(dir, "json");
    mkdirSync(json);
    writeFileSync(
      join(json, "Pulumi.json"),
      JSON.stringify({ name: "shop", runtime: "nodejs", backend: { url: "s3://from-json" } }),
    );
    expect(placeOf(at({ cwd: json }))).toBe("s3://from-json");
    // Beside it, a YAML file is not the CLI's project: the JSON one is.
    project(json, "backend:\n  url: s3://from-yaml\n");
    expect(placeOf(at({ cwd: json }))).toBe("s3://from-json");
    const yml = join(dir, "yml");
    mkdirSync(yml);
    writeFileSync(join(yml, "Pulumi.yml"), "name: shop\nruntime: nodejs\nbackend:\n  url: s3://from-yml\n");
    expect(placeOf(at({ cwd: yml }))).toBe("s3://from-yml");
  });

  test("`main: src/`: found above the program's directory, and must be PULUMI_PROJECT", () => {
    project(dir, "main: src/\nbackend:\n  url: s3://team-state\n");
    const src = join(dir, "src");
    mkdirSync(src);
    // A file of another project in the program's own directory is passed over.
    writeFileSync(join(src, "Pulumi.yaml"), "name: other\nruntime: nodejs\n");
    expect(placeOf(at({ cwd: src }))).toBe("s3://team-state");
    expect(placeOf(at({ cwd: src, env: { PULUMI_PROJECT: "nope" } }))).toBeInstanceOf(UnknownPlace);
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

  test("a login file the credential store encrypted cannot be read: the place is unknown", () => {
    login(join(dir, "creds"), { $pulumiSecureStore: 1, backend: "keychain", data: "AAAA" });
    const s = at({ env: { PULUMI_CREDENTIALS_PATH: join(dir, "creds"), PULUMI_PROJECT: "shop" } });
    project(dir);
    expect(placeOf(s)).toEqual(
      new UnknownPlace(expect.stringContaining("encrypted by the credential store")),
    );
    // A backend named outright needs no login, nor a project.
    expect(placeOf({ ...s, cwd: "/", env: { ...s.env, PULUMI_BACKEND_URL: "s3://b/" } })).toBe("s3://b");
  });

  test("a file backend is one real path, however it is spelled, and names no host", () => {
    const state = join(dir, "state");
    mkdirSync(state);
    symlinkSync(state, join(dir, "link"));
    for (const written of [
      state,
      `${state}/`,
      `${state}//`,
      join(dir, "link"),
      `${dir}/x/../state`,
      "./state",
      "state",
    ]) {
      expect([written, filePath(written, dir, "/home/x")]).toEqual([written, state]);
    }
    // `~` is the account's home directory (as `user.Current()`), not $HOME.
    expect(filePath("~/state", "/elsewhere", "/home/x")).toBe("/home/x/state");
    // A path not made yet resolves through its existing parent's symlinks.
    expect(filePath(join(dir, "link", "new"), "/", "/home/x")).toBe(join(state, "new"));
    project(dir, `backend:\n  url: file://${state}?no_tmp_dir=true\n`);
    expect(placeOf(at())).toBe(`file://${state}`);
    expect(placeOf(at(), "acme")).toBe(`file://${state}`); // a file backend has no organizations
  });

  test("a relative backend.url is resolved from the CLI's working directory, else the project's", () => {
    project(dir, "main: src/\nbackend:\n  url: file://./.pulumi-state\n");
    mkdirSync(join(dir, "src"));
    const fromProgram = at({ cwd: join(dir, "src") });
    expect(placeOf(fromProgram)).toBe(`file://${dir}/.pulumi-state`);
    const cli = join(dir, "cli");
    mkdirSync(cli);
    project(cli, "backend:\n  url: file://./.pulumi-state\n");
    expect(placeOf({ ...fromProgram, cliCwd: cli })).toBe(`file://${cli}/.pulumi-state`);
  });
});
