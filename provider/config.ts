/**
 * Provider configuration, read at call time (never captured into the serialized provider or
 * the state): stack config `edge:baseUrl`, `edge:apiKey` (secret), `edge:dataDir`,
 * `edge:requestTimeoutMs`, `edge:requestDeadlineMs`, with the environment as fallback
 * (EDGE_API_URL, EDGE_API_KEY, EDGE_DATA_DIR, EDGE_REQUEST_TIMEOUT_MS, EDGE_REQUEST_DEADLINE_MS).
 */
import { join } from "node:path";
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

interface StackConfig {
  get(key: string): string | undefined;
}

let stack: Partial<ProviderSettings> = {};

/** Called by the engine (through the dynamic provider's `configure`) with the stack's config. */
export function configureFromStack(config: StackConfig): void {
  stack = {
    baseUrl: config.get("edge:baseUrl") || undefined,
    apiKey: config.get("edge:apiKey") || undefined,
    dataDir: config.get("edge:dataDir") || undefined,
    requestTimeoutMs: timeout(config.get("edge:requestTimeoutMs"), "edge:requestTimeoutMs"),
    requestDeadlineMs: timeout(config.get("edge:requestDeadlineMs"), "edge:requestDeadlineMs"),
  };
}

function timeout(value: string | undefined, name: string): number | undefined {
  if (!value) return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 1)
    throw new Error(`${name} must be a positive integer (milliseconds), got "${value}"`);
  return ms;
}

export function currentSettings(env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  return {
    baseUrl: stack.baseUrl ?? (env.EDGE_API_URL || undefined),
    apiKey: stack.apiKey ?? (env.EDGE_API_KEY || undefined),
    // The engine runs providers in the project directory.
    dataDir: stack.dataDir ?? (env.EDGE_DATA_DIR || join(process.cwd(), ".edge-service")),
    requestTimeoutMs:
      stack.requestTimeoutMs ?? timeout(env.EDGE_REQUEST_TIMEOUT_MS, "EDGE_REQUEST_TIMEOUT_MS"),
    requestDeadlineMs:
      stack.requestDeadlineMs ?? timeout(env.EDGE_REQUEST_DEADLINE_MS, "EDGE_REQUEST_DEADLINE_MS"),
  };
}

const clients = new Map<string, EdgeClient>();

/** The client for the current settings (one per distinct configuration). */
export function edgeClient(settings: ProviderSettings = currentSettings()): EdgeClient {
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
