/**
 * The client of the edge service for a provider's settings (./config): over HTTP(S) to a running
 * service, or the embedded one in this process. Apart from the settings, which a program reads
 * too: a program never loads a transport (the engine's provider process does).
 */
import { EdgeClient } from "../sdk/client";
import { httpTransport } from "../sdk/transport";
import { embeddedTransport } from "../service/embedded";
import { type ProviderSettings, SETTING_NAMES, tlsOf } from "./config";

/** Clients by their settings: a cache, which changes nothing but how often a transport is made. */
const clients = new Map<string, EdgeClient>();

/** The client for `settings` (one per distinct configuration). */
export function edgeClient(settings: ProviderSettings): EdgeClient {
  const tls = tlsOf(settings);
  const key = JSON.stringify([
    settings.baseUrl,
    settings.apiKey,
    settings.baseUrl ? [settings.requestTimeoutMs, settings.requestDeadlineMs, tls] : settings.dataDir,
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
            tls,
            settingNames: SETTING_NAMES,
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
