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
 */
import { resolve } from "node:path";
import type { ClientTlsNames } from "../sdk/client-tls";
import { isPemText } from "../sdk/pem";

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

/** The stack config key of each setting. */
const KEY = {
  baseUrl: "edge:baseUrl",
  apiKey: "edge:apiKey",
  dataDir: "edge:dataDir",
  requestTimeoutMs: "edge:requestTimeoutMs",
  requestDeadlineMs: "edge:requestDeadlineMs",
  caCertificate: "edge:caCertificate",
  clientCertificate: "edge:clientCertificate",
  clientKey: "edge:clientKey",
} as const satisfies Record<keyof ProviderSettings, string>;

/** How errors name the settings of a transport to a service: each config key, with its variable. */
export const SETTING_NAMES: ClientTlsNames = {
  baseUrl: `${KEY.baseUrl} (EDGE_API_URL)`,
  caCertificate: `${KEY.caCertificate} (EDGE_CA_CERTIFICATE)`,
  clientCertificate: `${KEY.clientCertificate} (EDGE_CLIENT_CERTIFICATE)`,
  clientKey: `${KEY.clientKey} (EDGE_CLIENT_KEY)`,
};

/** The settings a stack's config states (`edge:*` keys), none of the fallbacks. */
export function stackSettings(config: StackConfig): Partial<ProviderSettings> {
  return {
    baseUrl: config.get(KEY.baseUrl) || undefined,
    apiKey: config.get(KEY.apiKey) || undefined,
    dataDir: config.get(KEY.dataDir) || undefined,
    requestTimeoutMs: timeout(config.get(KEY.requestTimeoutMs), KEY.requestTimeoutMs),
    requestDeadlineMs: timeout(config.get(KEY.requestDeadlineMs), KEY.requestDeadlineMs),
    caCertificate: config.get(KEY.caCertificate) || undefined,
    clientCertificate: config.get(KEY.clientCertificate) || undefined,
    clientKey: config.get(KEY.clientKey) || undefined,
  };
}

/**
 * The config keys whose stack values the settings can take under `env` (see settingsOf): an
 * `EDGE_API_KEY` in the environment wins over `edge:apiKey`, so that key's value is not needed.
 */
export function configKeysRead(env: NodeJS.ProcessEnv): string[] {
  const unread = new Set<string>();
  if (apiKeyFromEnv(env)) unread.add(KEY.apiKey);
  if (clientCertificateFromEnv(env)) [KEY.clientCertificate, KEY.clientKey].forEach((k) => unread.add(k));
  return Object.values(KEY).filter((k) => !unread.has(k));
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
  // A file's path is the program's directory's, as the provider (run there) reads it.
  const pem = (value: string | undefined) =>
    value === undefined || isPemText(value) ? value : resolve(programDir, value);
  const client = clientCertificateFromEnv(env) ?? stack;
  return {
    baseUrl: stack.baseUrl ?? (env.EDGE_API_URL || undefined),
    apiKey: apiKeyFromEnv(env) ?? stack.apiKey,
    caCertificate: pem(stack.caCertificate ?? (env.EDGE_CA_CERTIFICATE || undefined)),
    clientCertificate: pem(client.clientCertificate),
    clientKey: pem(client.clientKey),
    // Relative to the program's directory, as the provider (run there) reads it.
    dataDir: resolve(programDir, stack.dataDir ?? (env.EDGE_DATA_DIR || ".edge-service")),
    requestTimeoutMs:
      stack.requestTimeoutMs ?? timeout(env.EDGE_REQUEST_TIMEOUT_MS, "EDGE_REQUEST_TIMEOUT_MS"),
    requestDeadlineMs:
      stack.requestDeadlineMs ?? timeout(env.EDGE_REQUEST_DEADLINE_MS, "EDGE_REQUEST_DEADLINE_MS"),
  };
}

/** The TLS settings of `settings`, as a transport takes them. */
export const tlsOf = (settings: ProviderSettings) => ({
  caCertificate: settings.caCertificate,
  clientCertificate: settings.clientCertificate,
  clientKey: settings.clientKey,
});

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
