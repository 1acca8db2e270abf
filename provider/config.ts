/**
 * Provider configuration, read at call time (never captured into the serialized provider or
 * the state): stack config `edge:baseUrl`, `edge:apiKey` (secret), `edge:dataDir`, with the
 * environment as fallback (EDGE_API_URL, EDGE_API_KEY, EDGE_DATA_DIR).
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
  };
}

export function currentSettings(env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  return {
    baseUrl: stack.baseUrl ?? (env.EDGE_API_URL || undefined),
    apiKey: stack.apiKey ?? (env.EDGE_API_KEY || undefined),
    // The engine runs providers in the project directory.
    dataDir: stack.dataDir ?? (env.EDGE_DATA_DIR || join(process.cwd(), ".edge-service")),
  };
}

const clients = new Map<string, EdgeClient>();

/** The client for the current settings (one per distinct configuration). */
export function edgeClient(settings: ProviderSettings = currentSettings()): EdgeClient {
  const key = JSON.stringify([settings.baseUrl, settings.apiKey, settings.baseUrl ? "" : settings.dataDir]);
  let client = clients.get(key);
  if (!client) {
    client = new EdgeClient(
      settings.baseUrl
        ? httpTransport({ baseUrl: settings.baseUrl, apiKey: settings.apiKey })
        : embeddedTransport({ dataDir: settings.dataDir }),
    );
    clients.set(key, client);
  }
  return client;
}
