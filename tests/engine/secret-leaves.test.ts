/**
 * Secret leaves, not secret modules, through the real engine on both faces. The program gives the
 * credentials (OIDC and OAuth `clientSecret`, webhook `secret`) as plain strings it does not mark
 * secret (from the environment, so no config file holds them):
 * - no form of any of them is in `pulumi stack export` or any backend file, and the state holds
 *   them as secrets leaf by leaf: the rest of each module is readable;
 * - a change of the OIDC issuer, in the program or out of band (drift, `preview --refresh`),
 *   shows in `preview --diff` field by field (`issuer: "…" => "…"`), not as `oidc: [secret]`;
 * - a changed clientSecret shows as `[secret]`, never its value.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { pulumiCli, specWorkspace } from "../packaged/support/plugin";
import type { Workspace } from "../support/workspace";
import {
  backendText,
  expectNowhere,
  quiet,
  type RecordingServer,
  recordingServer,
  setSpec,
  stateExport,
  stateFiles,
} from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const SECRETS = {
  EDGE_TEST_OIDC_SECRET: "oidc-leaf-5c1e0a-never-in-state",
  EDGE_TEST_OIDC_SECRET_2: "oidc-leaf-rotated-77d3b9-never-in-state",
  EDGE_TEST_OAUTH_SECRET: "oauth-leaf-2b9f4d-never-in-state",
  EDGE_TEST_WEBHOOK_SECRET: "whsec-leaf-e04a61-never-in-state",
};
Object.assign(process.env, SECRETS); // the program (and the plugin) inherit the test's environment

const ISSUER = "https://id.example.com";
const oidc = (issuer: string, secretVar = "EDGE_TEST_OIDC_SECRET") => ({
  issuer,
  clientId: "shop",
  clientSecret: `env:${secretVar}`,
  scopes: ["openid"],
});
const spec = (issuer = ISSUER, secretVar?: string) => ({
  edges: ["e"],
  routes: [
    {
      name: "oidc",
      edge: "e",
      args: { matchType: "path_prefix", match: "/oidc", oidc: oidc(issuer, secretVar) },
    },
    {
      name: "oauth",
      edge: "e",
      args: {
        matchType: "path_prefix",
        match: "/oauth",
        oauth: {
          provider: {
            github: { clientId: "gh-app", clientSecret: "env:EDGE_TEST_OAUTH_SECRET", teams: ["o/t"] },
          },
        },
      },
    },
    {
      name: "hooks",
      edge: "e",
      args: {
        matchType: "path_prefix",
        match: "/hooks",
        webhookVerification: { provider: "github", secret: "env:EDGE_TEST_WEBHOOK_SECRET" },
      },
    },
  ],
});

const SIG = "4dabf18193072939515e22adb298388d";
type Res = { type: string; urn: string; inputs?: Record<string, any>; outputs?: Record<string, any> };

describe.each(["packaged", "dynamic"] as const)("%s face", (face) => {
  let ws: Workspace;
  let server: RecordingServer;
  let stack: Stack;
  let edgeId: string;
  let routeId: string;

  const routes = async (): Promise<Res[]> => {
    const state = JSON.parse(await stateExport(stack, ws.stateDir)) as { deployment: { resources: Res[] } };
    return state.deployment.resources.filter((r) => r.type.endsWith("HttpsEdgeRoute"));
  };
  const expectNoSecretAnywhere = async () => {
    const texts = [await stateExport(stack, ws.stateDir), ...stateFiles(ws.stateDir).map(backendText)];
    for (const s of Object.values(SECRETS)) expectNowhere(s, texts);
  };
  const preview = (args: string[]) => pulumiCli(ws, ["preview", "--diff", ...args], "leaves");

  beforeAll(async () => {
    ws = specWorkspace(face, `leaves-${face}`);
    server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-leaves-${face}-`)));
    stack = await engine.directoryStack({ workDir: ws.dir, stackName: "leaves", stateDir: ws.stateDir });
    await stack.setConfig("edge:baseUrl", { value: server.url });
    await setSpec(stack, spec());
    await stack.up(quiet);
    edgeId = ((await stack.outputs()).edgeIds!.value as Record<string, string>).e!;
    for await (const r of server.client.allRoutes(edgeId)) {
      if (r.match !== "/oidc") continue;
      routeId = r.id;
      // The service got the value the program gave.
      expect(r.oidc?.client_secret).toBe(SECRETS.EDGE_TEST_OIDC_SECRET);
    }
    expect(routeId).toBeDefined();
  });

  afterAll(async () => {
    await stack?.destroy(quiet).catch(() => undefined);
    await server?.close();
    ws?.cleanup();
  });

  test("no credential is in the state or any backend file; only the leaves are secret", async () => {
    await expectNoSecretAnywhere();
    const byMatch = new Map((await routes()).map((r) => [r.inputs?.match as string, r]));
    const o = byMatch.get("/oidc")!;
    for (const side of [o.inputs!, o.outputs!]) {
      expect(side.oidc[SIG]).toBeUndefined(); // the module is not secret whole
      expect(side.oidc).toMatchObject({ issuer: ISSUER, clientId: "shop", scopes: ["openid"] });
      expect(side.oidc.clientSecret).toMatchObject({
        [SIG]: expect.any(String),
        ciphertext: expect.any(String),
      });
    }
    const gh = byMatch.get("/oauth")!.outputs!.oauth.provider.github;
    expect(gh).toMatchObject({ clientId: "gh-app", teams: ["o/t"] });
    expect(gh.clientSecret).toMatchObject({ ciphertext: expect.any(String) });
    const hook = byMatch.get("/hooks")!.outputs!.webhookVerification;
    expect(hook).toMatchObject({ provider: "github", secret: { ciphertext: expect.any(String) } });
  });

  test("a program change of the issuer shows field by field; the clientSecret stays [secret]", async () => {
    await setSpec(stack, spec("https://id2.example.com", "EDGE_TEST_OIDC_SECRET_2"));
    try {
      const out = await preview([]);
      expect(out).toMatch(/~ oidc\s*:/);
      expect(out).toMatch(/~ issuer\s*:\s*"https:\/\/id\.example\.com" => "https:\/\/id2\.example\.com"/);
      // The packaged face's detailed diff names the changed secret leaf; the dynamic face's preview
      // is the engine's own diff of inputs, which prints the leaf as [secret] without a marker.
      expect(out).toMatch(
        face === "packaged"
          ? /~ clientSecret\s*:\s*\[secret\] => \[secret\]/
          : /clientSecret\s*:\s*\[secret\]/,
      );
      expect(out).not.toMatch(/oidc\s*:\s*\[secret\]/);
      for (const s of Object.values(SECRETS)) expect(out).not.toContain(s);
      // The change is applied, the new secret with it, and the state still holds none.
      await stack.up(quiet);
      const route = await server.client.getRoute(edgeId, routeId);
      expect(route.oidc).toMatchObject({
        issuer: "https://id2.example.com",
        client_secret: SECRETS.EDGE_TEST_OIDC_SECRET_2,
      });
      await expectNoSecretAnywhere();
    } finally {
      await setSpec(stack, spec());
    }
  });

  test("drift of the issuer shows in preview --refresh --diff field by field", async () => {
    await server.client.updateRoute(edgeId, routeId, {
      oidc: {
        issuer: "https://drifted.example.com",
        client_id: "shop",
        client_secret: SECRETS.EDGE_TEST_OIDC_SECRET,
        scopes: ["openid"],
      },
    });
    const out = await preview(["--refresh"]);
    expect(out).toMatch(/~ issuer\s*:\s*"https:\/\/drifted\.example\.com" => "https:\/\/id\.example\.com"/);
    expect(out).not.toMatch(/oidc\s*:\s*\[secret\]/);
    for (const s of Object.values(SECRETS)) expect(out).not.toContain(s);
    // The refreshed state holds the secret leaf encrypted too.
    await stack.up({ ...quiet, refresh: true });
    expect((await server.client.getRoute(edgeId, routeId)).oidc?.issuer).toBe(ISSUER);
    await expectNoSecretAnywhere();
    await stack.preview({ ...quiet, refresh: true, expectNoChanges: true });
  });
});
