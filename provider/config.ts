/**
 * Provider configuration, read at call time (never captured into the serialized provider or
 * the state): stack config `edge:baseUrl`, `edge:apiKey` (secret), `edge:dataDir`,
 * `edge:requestTimeoutMs`, `edge:requestDeadlineMs`, `edge:caCertificate`,
 * `edge:clientCertificate`, `edge:clientKey` (secret), with the environment as fallback
 * (EDGE_API_URL, EDGE_DATA_DIR, EDGE_REQUEST_TIMEOUT_MS, EDGE_REQUEST_DEADLINE_MS,
 * EDGE_CA_CERTIFICATE).
 *
 * The credentials are the exception: `EDGE_API_KEY`, when set, wins over `edge:apiKey`, and
 * `EDGE_CLIENT_CERTIFICATE` with `EDGE_CLIENT_KEY` over `edge:clientCertificate` and
 * `edge:clientKey` (the pair from one place). The environment of the `pulumi` command is always
 * the current one, while the configuration a provider is handed on `refresh` and `destroy` can be
 * the one saved at the last update (the dynamic face's, unless `--run-program`): a CI job that
 * gives its own credentials by the environment never runs on ones someone else left in the state.
 *
 * The settings' rules live here too (a private key kept in clear, settings a deploy refuses), and
 * nothing heavier than reading files: a program loads this module to check its settings where it
 * still has them (./resources/glue). The client for the settings is ./client's.
 */
import { resolve } from "node:path";
import { type ClientTlsNames, clientTls } from "../sdk/client-tls";
import { holdsPrivateKey, isPemText } from "../sdk/pem";

export interface ProviderSettings {
  /** A running edge service; absent means the embedded in-process service. */
  baseUrl?: string;
  apiKey?: string;
  /** Data directory of the embedded service. Default `<project dir>/.edge-service`. */
  dataDir: string;
  /** Per-attempt timeout of HTTP requests to `baseUrl`, in ms. Default: the transport's (30 s). */
  requestTimeoutMs?: number;
  /** Bound on one call to `baseUrl`, its retries included, in ms. Default: the transport's (60 s). */
  requestDeadlineMs?: number;
  /** A CA trusted besides the system's for an https:// `baseUrl`: PEM text, or a file's absolute path. */
  caCertificate?: string;
  /** The client certificate presented to the service (mutual TLS): PEM text, or a file's absolute path. */
  clientCertificate?: string;
  /** Its private key: PEM text, or a file's absolute path. */
  clientKey?: string;
}

/** A stack's config as the engine hands it to a provider. */
export interface StackConfig {
  get(key: string): string | undefined;
}

/**
 * Every setting, declared once: its stack config key, the environment variable that stands in for
 * it (the credentials' win over the stack's: see configKeysRead), and `pem` for those that take PEM
 * text or a PEM file's path (relative to the program's directory).
 */
export const SETTINGS = {
  baseUrl: { key: "edge:baseUrl", env: "EDGE_API_URL" },
  apiKey: { key: "edge:apiKey", env: "EDGE_API_KEY" },
  dataDir: { key: "edge:dataDir", env: "EDGE_DATA_DIR" },
  requestTimeoutMs: { key: "edge:requestTimeoutMs", env: "EDGE_REQUEST_TIMEOUT_MS" },
  requestDeadlineMs: { key: "edge:requestDeadlineMs", env: "EDGE_REQUEST_DEADLINE_MS" },
  caCertificate: { key: "edge:caCertificate", env: "EDGE_CA_CERTIFICATE", pem: true },
  clientCertificate: { key: "edge:clientCertificate", env: "EDGE_CLIENT_CERTIFICATE", pem: true },
  clientKey: { key: "edge:clientKey", env: "EDGE_CLIENT_KEY", pem: true },
} as const satisfies Record<keyof ProviderSettings, { key: `edge:${string}`; env: string; pem?: true }>;

type Setting = keyof typeof SETTINGS;
/** The settings that take PEM text or a PEM file's path. */
type PemSetting = { [K in Setting]: (typeof SETTINGS)[K] extends { pem: true } ? K : never }[Setting];
const isSetting = (k: string): k is Setting => Object.hasOwn(SETTINGS, k);
export const PEM_SETTINGS: readonly PemSetting[] = Object.keys(SETTINGS).filter(
  (k): k is PemSetting => isSetting(k) && "pem" in SETTINGS[k],
);

/** How errors name the settings of a transport to a service: each config key, with its variable. */
export const SETTING_NAMES: ClientTlsNames = {
  baseUrl: `${SETTINGS.baseUrl.key} (${SETTINGS.baseUrl.env})`,
  caCertificate: `${SETTINGS.caCertificate.key} (${SETTINGS.caCertificate.env})`,
  clientCertificate: `${SETTINGS.clientCertificate.key} (${SETTINGS.clientCertificate.env})`,
  clientKey: `${SETTINGS.clientKey.key} (${SETTINGS.clientKey.env})`,
};

/** The environment variable of a stack config key of ours, if it has one. */
const envOf = (key: string): string | undefined => Object.values(SETTINGS).find((s) => s.key === key)?.env;

/**
 * Why the value of config key `key`, not set as a secret, must not be kept: it holds a private key
 * (sdk/pem, `holdsPrivateKey`: anywhere in it, a certificate's combined file too); undefined when
 * it holds none. The engine keeps a provider's settings in the stack's state as they were typed
 * (the dynamic face's: the whole stack config), and `pulumi config` keeps them in
 * Pulumi.<stack>.yaml: a key belongs there encrypted, or in its file. The one rule of both faces
 * and of `pulumi-edge drift`.
 */
export function plaintextKeyProblem(key: string, value: string): string | undefined {
  if (!holdsPrivateKey(value)) return undefined;
  const env = envOf(key);
  return (
    `${key} holds a private key in plaintext, and the engine would save it in the state as it is. ` +
    `Set it as a secret (pulumi config set --secret ${key} -- "$(cat <file>)"), give the file's path instead` +
    (env ? `, or give it in ${env}` : "") +
    "."
  );
}

/**
 * Why input `path` of a resource, not marked secret, must not be kept as `value`: it holds a
 * private key (the rule of plaintextKeyProblem, for what a program gives a resource); undefined
 * when it holds none. It starts with the path, as a check failure that names no property does
 * (provider/model/failures.ts); both faces name the resource with it.
 */
export function plaintextKeyInputProblem(path: string, value: string): string | undefined {
  if (!holdsPrivateKey(value)) return undefined;
  return (
    `${path} holds a private key in plaintext, and the engine would save it in the state as it is: ` +
    "make it a secret (pulumi.secret(...) in TypeScript, pulumi.Output.secret(...) in Python, " +
    "pulumi.ToSecret(...) in Go; or read it with config.requireSecret from a value set with pulumi config set --secret)"
  );
}

/** The settings a stack's config states (`edge:*` keys), none of the fallbacks. */
export function stackSettings(config: StackConfig): Partial<ProviderSettings> {
  return {
    baseUrl: config.get(SETTINGS.baseUrl.key) || undefined,
    apiKey: config.get(SETTINGS.apiKey.key) || undefined,
    dataDir: config.get(SETTINGS.dataDir.key) || undefined,
    requestTimeoutMs: timeout(config.get(SETTINGS.requestTimeoutMs.key), SETTINGS.requestTimeoutMs.key),
    requestDeadlineMs: timeout(config.get(SETTINGS.requestDeadlineMs.key), SETTINGS.requestDeadlineMs.key),
    caCertificate: config.get(SETTINGS.caCertificate.key) || undefined,
    clientCertificate: config.get(SETTINGS.clientCertificate.key) || undefined,
    clientKey: config.get(SETTINGS.clientKey.key) || undefined,
  };
}

/**
 * The config keys whose stack values the settings can take under `env` (see settingsOf): an
 * `EDGE_API_KEY` in the environment wins over `edge:apiKey`, so that key's value is not needed.
 */
export function configKeysRead(env: NodeJS.ProcessEnv): string[] {
  const unread = new Set<string>();
  if (apiKeyFromEnv(env)) unread.add(SETTINGS.apiKey.key);
  if (clientCertificateFromEnv(env))
    [SETTINGS.clientCertificate.key, SETTINGS.clientKey.key].forEach((k) => unread.add(k));
  return Object.values(SETTINGS)
    .map((s) => s.key)
    .filter((k) => !unread.has(k));
}

/** The API key of the environment, which wins over the stack's `edge:apiKey` (CI holds it there). */
const apiKeyFromEnv = (env: NodeJS.ProcessEnv): string | undefined => env.EDGE_API_KEY || undefined;

/**
 * The client certificate and key of the environment, which win over the stack's as a pair: one
 * of them set there takes both from there (a missing half is then an error naming it).
 */
function clientCertificateFromEnv(
  env: NodeJS.ProcessEnv,
): Pick<ProviderSettings, "clientCertificate" | "clientKey"> | undefined {
  const clientCertificate = env.EDGE_CLIENT_CERTIFICATE || undefined;
  const clientKey = env.EDGE_CLIENT_KEY || undefined;
  return clientCertificate === undefined && clientKey === undefined
    ? undefined
    : { clientCertificate, clientKey };
}

function timeout(value: string | undefined, name: string): number | undefined {
  if (!value) return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 1)
    throw new Error(`${name} must be a positive integer (milliseconds), got "${value}"`);
  return ms;
}

/** The settings of a command run outside the engine (no stack config): the environment's, in its directory. */
export function environmentSettings(env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  return resolveSettings({}, env, process.cwd());
}

/**
 * The settings of a provider configured with `config` (a stack's `edge:*` config) in the program
 * directory `programDir`, with the environment's fallbacks: what the provider of that stack runs
 * with (the engine runs providers in the program's directory).
 */
export function settingsFor(
  config: StackConfig,
  env: NodeJS.ProcessEnv,
  programDir: string,
): ProviderSettings {
  return resolveSettings(stackSettings(config), env, programDir);
}

/** The settings `stack` states, with the environment's fallbacks, in the program directory `programDir`. */
export function resolveSettings(
  stack: Partial<ProviderSettings>,
  env: NodeJS.ProcessEnv,
  programDir: string,
): ProviderSettings {
  const client = clientCertificateFromEnv(env) ?? stack;
  const settings: ProviderSettings = {
    baseUrl: stack.baseUrl ?? (env.EDGE_API_URL || undefined),
    apiKey: apiKeyFromEnv(env) ?? stack.apiKey,
    caCertificate: stack.caCertificate ?? (env.EDGE_CA_CERTIFICATE || undefined),
    clientCertificate: client.clientCertificate,
    clientKey: client.clientKey,
    // Relative to the program's directory, as the provider (run there) reads it.
    dataDir: resolve(programDir, stack.dataDir ?? (env.EDGE_DATA_DIR || ".edge-service")),
    requestTimeoutMs:
      stack.requestTimeoutMs ?? timeout(env.EDGE_REQUEST_TIMEOUT_MS, "EDGE_REQUEST_TIMEOUT_MS"),
    requestDeadlineMs:
      stack.requestDeadlineMs ?? timeout(env.EDGE_REQUEST_DEADLINE_MS, "EDGE_REQUEST_DEADLINE_MS"),
  };
  // A file's path is the program's directory's, as the provider (run there) reads it.
  for (const k of PEM_SETTINGS) {
    const value = settings[k];
    if (value !== undefined && !isPemText(value)) settings[k] = resolve(programDir, value);
  }
  return settings;
}

/**
 * That `settings` can be used as a deploy uses them, checked before any call: the URL, and the CA
 * and the client certificate and key read and parsed (sdk/client-tls, what the HTTP transport
 * connects with: each failure an error naming its setting and what to give instead). The embedded service takes no TLS setting. Every place
 * that runs on settings a deploy would refuse calls this first: a refresh, a drift check.
 */
export function checkSettings(settings: ProviderSettings): void {
  if (settings.baseUrl) clientTls(settings.baseUrl, tlsOf(settings), SETTING_NAMES);
}

/** The TLS settings of `settings`, as a transport takes them. */
export const tlsOf = (settings: ProviderSettings) => ({
  caCertificate: settings.caCertificate,
  clientCertificate: settings.clientCertificate,
  clientKey: settings.clientKey,
});

/** A stack's config as `pulumi config --json` gives it: each key's value, and whether it is a secret. */
export type ConfigEntries = Readonly<Record<string, { value?: string; secret?: boolean } | undefined>>;

/**
 * Why a deploy of a stack with config `config` would refuse its settings, or undefined: a private
 * key in a setting not set as a secret (plaintextKeyProblem), or settings that cannot be used
 * (checkSettings), with the environment's fallbacks, in the program directory `programDir`. What
 * `pulumi-edge drift` checks first, so that no drift check passes on settings `up` refuses.
 */
export function refusedSettings(
  config: ConfigEntries,
  env: NodeJS.ProcessEnv,
  programDir: string,
): string | undefined {
  for (const { key } of Object.values(SETTINGS)) {
    const entry = config[key];
    const problem = entry?.value && !entry.secret ? plaintextKeyProblem(key, entry.value) : undefined;
    if (problem) return problem;
  }
  try {
    checkSettings(settingsFor({ get: (key) => config[key]?.value }, env, programDir));
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/**
 * The stack's current configuration of package `edge` (keys without the `edge:` prefix, secrets
 * decrypted), which the engine hands every plugin it starts in `PULUMI_CONFIG`, refresh and
 * destroy included; undefined where it does not.
 */
export function engineConfig(env: NodeJS.ProcessEnv = process.env): Record<string, unknown> | undefined {
  if (!env.PULUMI_CONFIG) return undefined;
  try {
    const parsed: unknown = JSON.parse(env.PULUMI_CONFIG);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? Object.fromEntries(Object.entries(parsed))
      : undefined;
  } catch {
    return undefined;
  }
}
