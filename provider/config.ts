/**
 * Provider configuration, read at call time (never captured into the serialized provider or
 * the state): stack config `edge:baseUrl`, `edge:apiKey` (secret), `edge:dataDir`,
 * `edge:requestTimeoutMs`, `edge:requestDeadlineMs`, with the environment as fallback
 * (EDGE_API_URL, EDGE_DATA_DIR, EDGE_REQUEST_TIMEOUT_MS, EDGE_REQUEST_DEADLINE_MS).
 *
 * The credential is the exception: `EDGE_API_KEY`, when set, wins over `edge:apiKey`. The
 * environment of the `pulumi` command is always the current one, while the configuration a
 * provider is handed on `refresh` and `destroy` can be the one saved at the last update (the
 * dynamic face's, unless `--run-program`): a CI job that gives its own key by the environment
 * never runs on a key someone else left in the state.
 */
import { resolve } from "node:path";
import { EdgeClient } from "../sdk/client";
import { embeddedTransport, httpTransport } from "../sdk/transport";

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
} as const satisfies Record<keyof ProviderSettings, string>;

/** The settings a stack's config states (`edge:*` keys), none of the fallbacks. */
export function stackSettings(config: StackConfig): Partial<ProviderSettings> {
  return {
    baseUrl: config.get(KEY.baseUrl) || undefined,
    apiKey: config.get(KEY.apiKey) || undefined,
    dataDir: config.get(KEY.dataDir) || undefined,
    requestTimeoutMs: timeout(config.get(KEY.requestTimeoutMs), KEY.requestTimeoutMs),
    requestDeadlineMs: timeout(config.get(KEY.requestDeadlineMs), KEY.requestDeadlineMs),
  };
}

/**
 * The config keys whose stack values the settings can take under `env` (see settingsOf): an
 * `EDGE_API_KEY` in the environment wins over `edge:apiKey`, so that key's value is not needed.
 */
export function configKeysRead(env: NodeJS.ProcessEnv): string[] {
  const keys: string[] = Object.values(KEY);
  return apiKeyFromEnv(env) ? keys.filter((k) => k !== KEY.apiKey) : keys;
}

/** The API key of the environment, which wins over the stack's `edge:apiKey` (CI holds it there). */
const apiKeyFromEnv = (env: NodeJS.ProcessEnv): string | undefined => env.EDGE_API_KEY || undefined;

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
  return {
    baseUrl: stack.baseUrl ?? (env.EDGE_API_URL || undefined),
    apiKey: apiKeyFromEnv(env) ?? stack.apiKey,
    // Relative to the program's directory, as the provider (run there) reads it.
    dataDir: resolve(programDir, stack.dataDir ?? (env.EDGE_DATA_DIR || ".edge-service")),
    requestTimeoutMs:
      stack.requestTimeoutMs ?? timeout(env.EDGE_REQUEST_TIMEOUT_MS, "EDGE_REQUEST_TIMEOUT_MS"),
    requestDeadlineMs:
      stack.requestDeadlineMs ?? timeout(env.EDGE_REQUEST_DEADLINE_MS, "EDGE_REQUEST_DEADLINE_MS"),
  };
}

/** Clients by their settings: a cache, which changes nothing but how often a transport is made. */
const clients = new Map<string, EdgeClient>();

/** The client for `settings` (one per distinct configuration). */
export function edgeClient(settings: ProviderSettings): EdgeClient {
  const key = JSON.stringify([
    settings.baseUrl,
    settings.apiKey,
    settings.baseUrl ? [settings.requestTimeoutMs, settings.requestDeadlineMs] : settings.dataDir,
  ]);
  let client = clients.get(key);
  if (!client) {
    client = new EdgeClient(
      settings.baseUrl
        ? httpTransport({
            baseUrl: settings.baseUrl,
            apiKey: settings.apiKey,
            timeoutMs: settings.requestTimeoutMs,
            deadlineMs: settings.requestDeadlineMs,
            // Creates carry an Idempotency-Key (the resource's identity, else a fresh one): a create
            // whose answer was lost is retried safely.
            idempotencyKeys: true,
          })
        : embeddedTransport({ dataDir: settings.dataDir }),
    );
    clients.set(key, client);
  }
  return client;
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
