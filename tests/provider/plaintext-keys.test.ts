/**
 * A private key is found wherever it appears, by one rule (provider/config.ts over sdk/pem's
 * `holdsPrivateKey`), and the settings a deploy would refuse are refused wherever the engine uses
 * them. The units both faces and `pulumi-edge drift` stand on; tests/engine/https-service.test.ts
 * runs them through the engine, for every setting that takes PEM text or a path.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  PEM_SETTINGS,
  plaintextKeyInputProblem,
  plaintextKeyProblem,
  refusedSettings,
  SETTINGS,
} from "../../provider/config";
import { ProviderProcess } from "../../provider/engine/process";
import { secret } from "../../provider/engine/secrets";
import { EdgeProvider } from "../../provider/plugin/provider";
import { PROVIDER_CONFIG } from "../../provider/plugin/schema";
import { holdsPrivateKey } from "../../sdk/pem";
import { makePki, type Pki } from "../support/pki";

const CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";
const KEYS = [
  "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END PRIVATE KEY-----\n",
  "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n",
  "-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\n-----END EC PRIVATE KEY-----\n",
  "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHz\n-----END ENCRYPTED PRIVATE KEY-----\n",
  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\n-----END OPENSSH PRIVATE KEY-----\n",
  "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG (cut short, no END line)",
];
const KEY = KEYS[0]!;
/** A real CA (openssl), for the settings a deploy reads and parses. */
let pki: Pki;
/** A CA bundle whose second block is not a certificate: what `up` refuses. */
let GARBAGE_CA: string;
beforeAll(() => {
  pki = makePki();
  GARBAGE_CA = `${pki.caPem}-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n`;
});
afterAll(() => pki?.cleanup());

test("holdsPrivateKey: a private key of any PEM kind, anywhere in the text; a certificate or a path holds none", () => {
  for (const key of KEYS) {
    expect(holdsPrivateKey(key)).toBe(true);
    expect(holdsPrivateKey(`${CERT}${key}`)).toBe(true); // a combined file
  }
  for (const none of [CERT, "certs/client.pem", "/etc/edge/client.key", "PRIVATE KEY", ""])
    expect(holdsPrivateKey(none)).toBe(false);
});

test("the settings that take PEM text or a path are declared once, and the schema describes each as such", () => {
  expect(PEM_SETTINGS.length).toBeGreaterThan(0);
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const described = PROVIDER_CONFIG[name]?.description ?? "";
    expect({ name, pem: "pem" in setting }).toEqual({ name, pem: /\bPEM\b/.test(described) });
  }
  expect(Object.keys(SETTINGS).sort()).toEqual(Object.keys(PROVIDER_CONFIG).sort());
});

test.each(Object.values(SETTINGS))(
  "$key: a private key in it, not set as a secret, is refused naming the setting and --secret",
  ({ key, env }) => {
    const problem = plaintextKeyProblem(key, `${CERT}${KEY}`);
    expect(problem).toContain(`${key} holds a private key in plaintext`);
    expect(problem).toContain(`pulumi config set --secret ${key}`);
    expect(problem).toContain(`or give it in ${env}`);
    expect(plaintextKeyProblem(key, CERT)).toBeUndefined();
    expect(plaintextKeyProblem(key, "certs/client.pem")).toBeUndefined();
  },
);

test("an input holding a private key is named with how each language marks it secret", () => {
  const problem = plaintextKeyInputProblem("saml.idpMetadata", KEY)!;
  expect(problem).toMatch(/^saml\.idpMetadata holds a private key in plaintext/);
  for (const how of ["pulumi.secret(", "pulumi.Output.secret(", "pulumi.ToSecret(", "--secret"])
    expect(problem).toContain(how);
  expect(plaintextKeyInputProblem("description", "text")).toBeUndefined();
});

describe("refusedSettings: what `pulumi-edge drift` checks before it judges a stack", () => {
  const dir = mkdtempSync(join(tmpdir(), "refused-settings-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const https = { "edge:baseUrl": { value: "https://edge.example.com:8443" } };

  test.each(PEM_SETTINGS)("%s holding a private key: refused unless it is a secret", (name) => {
    const key = SETTINGS[name].key;
    const plain = { ...https, [key]: { value: `${CERT}${KEY}`, secret: false } };
    expect(refusedSettings(plain, {}, dir)).toContain(`${key} holds a private key in plaintext`);
    const asSecret = { ...https, [key]: { value: `${CERT}${KEY}`, secret: true } };
    expect(refusedSettings(asSecret, {}, dir) ?? "").not.toContain("plaintext");
  });

  test("settings a deploy cannot use are refused with the deploy's words; usable ones pass", () => {
    expect(refusedSettings({ ...https, "edge:caCertificate": { value: GARBAGE_CA } }, {}, dir)).toMatch(
      /^edge:caCertificate \(EDGE_CA_CERTIFICATE\): certificate 2 of 2 cannot be parsed/,
    );
    expect(refusedSettings({ "edge:baseUrl": { value: "edge.example.com:8443" } }, {}, dir)).toBe(
      'edge:baseUrl (EDGE_API_URL) "edge.example.com:8443" is not an http:// or https:// URL: give the service\'s, e.g. https://edge.example.com:8443',
    );
    expect(
      refusedSettings(
        { "edge:baseUrl": { value: "http://127.0.0.1:8080" }, "edge:caCertificate": { value: pki.caPem } },
        {},
        dir,
      ),
    ).toMatch(/is plain HTTP: nothing would be verified/);
    // A file that is not there, named by its setting and path (relative to the program).
    expect(refusedSettings({ ...https, "edge:caCertificate": { value: "certs/ca.pem" } }, {}, dir)).toBe(
      `edge:caCertificate (EDGE_CA_CERTIFICATE) (${join(dir, "certs/ca.pem")}): no such file`,
    );
    // The environment's settings count as a deploy's do.
    expect(refusedSettings(https, { EDGE_CA_CERTIFICATE: GARBAGE_CA }, dir)).toMatch(/certificate 2 of 2/);
    expect(refusedSettings({ "edge:baseUrl": { value: "http://127.0.0.1:8080" } }, {}, dir)).toBeUndefined();
    expect(refusedSettings({}, {}, dir)).toBeUndefined(); // the embedded service
  });
});

describe("the packaged plugin", () => {
  const URN = "urn:pulumi:dev::keys::pulumi:providers:edge::default_0_2_0";
  const EXPLICIT = "urn:pulumi:dev::keys::pulumi:providers:edge::mine";
  const dir = mkdtempSync(join(tmpdir(), "plugin-keys-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const plugin = () => new EdgeProvider(new ProviderProcess({}, () => ({ cwd: dir, env: {}, home: dir })));

  test("CheckConfig: settings a deploy would refuse fail it, named; none while a value is unknown", () => {
    const { failures } = plugin().checkConfig(
      URN,
      {},
      {
        baseUrl: "https://edge.example.com:8443",
        caCertificate: GARBAGE_CA,
      },
    );
    expect(failures).toEqual([
      {
        property: "",
        reason: expect.stringMatching(/^edge:caCertificate \(EDGE_CA_CERTIFICATE\): certificate 2 of 2/),
      },
    ]);
    const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    expect(plugin().checkConfig(URN, {}, { baseUrl: unknown, caCertificate: GARBAGE_CA }).failures).toEqual(
      [],
    );
  });

  test("CheckConfig: the API key is kept secret whatever came; a setting holding a private key is kept as it came", () => {
    const { inputs } = plugin().checkConfig(
      URN,
      {},
      { apiKey: "k", clientKey: KEY, clientCertificate: CERT },
    );
    expect(inputs.apiKey).toEqual(secret("k"));
    expect(inputs.clientKey).toBe(KEY); // Configure judges it, with the engine's secret marks
    const path = plugin().checkConfig(URN, {}, { clientKey: "certs/client.key" }).inputs;
    expect(path.clientKey).toEqual(secret("certs/client.key"));
  });

  test.each(PEM_SETTINGS)(
    "Configure after this run's CheckConfig: %s holding a private key is refused unless the engine marked it secret",
    (name) => {
      const value = `${CERT}${KEY}`;
      const configured = (urn: string, provider: string, args: Record<string, unknown>) => () => {
        const p = plugin();
        p.checkConfig(urn, {}, {});
        p.configure({ args, variables: {}, name: provider, urn });
      };
      expect(configured(URN, "default_0_2_0", { [name]: value })).toThrow(
        `edge:${name} holds a private key in plaintext, and the engine would save it in the state as it is. Set it as a secret (pulumi config set --secret edge:${name}`,
      );
      expect(configured(EXPLICIT, "mine", { [name]: value })).toThrow(
        `provider "mine": input ${name} holds a private key in plaintext`,
      );
      expect(configured(URN, "default_0_2_0", { [name]: secret(value) })).not.toThrow();
      // A refresh or a destroy configures from the state, without CheckConfig: nothing new is saved.
      const p = plugin();
      expect(() =>
        p.configure({ args: { [name]: value }, variables: {}, name: "default_0_2_0", urn: URN }),
      ).not.toThrow();
    },
  );

  test("Check: a private key in a resource input not marked secret fails, named without its value", async () => {
    const urn = "urn:pulumi:dev::keys::edge:index:HttpsEdge::web";
    const { failures } = await plugin().check(urn, {}, { description: `${CERT}${KEY}`, hostports: [] });
    expect(failures).toEqual([
      { property: "", reason: expect.stringMatching(/^description holds a private key in plaintext/) },
    ]);
    expect(JSON.stringify(failures)).not.toContain("MIGHAgEAMBMG");
    const marked = await plugin().check(urn, {}, { description: secret(KEY), hostports: [] });
    expect(marked.failures).toEqual([]);
    // A credential leaf is kept secret whatever came: no failure.
    const route = "urn:pulumi:dev::keys::edge:index:HttpsEdgeRoute::api";
    const leaf = await plugin().check(
      route,
      {},
      {
        edgeId: "edghts_000000000000000000000000001",
        matchType: "path_prefix",
        match: "/",
        webhookVerification: { provider: "github", secret: KEY },
      },
    );
    expect(leaf.failures).toEqual([]);
  });
});
