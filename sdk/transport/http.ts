import { randomUUID } from "node:crypto";
import { ERROR_CODES, errorField } from "../contract";
import {
  type ClientTlsNames,
  type ClientTlsSettings,
  fetchFor,
  TRANSPORT_TLS_NAMES,
  tlsFailure,
} from "./tls";
import type { RetryNotice, SendOptions, Transport } from "./types";

export interface HttpTransportOptions {
  /** Base URL of a running edge service, e.g. https://edge.example.com or http://127.0.0.1:8080 */
  baseUrl: string;
  /**
   * For an https:// base URL: a CA to trust besides the system's, a client certificate to
   * present (mutual TLS). A certificate the client cannot accept (untrusted, expired, for another
   * host) fails the call at once, never retried, naming the setting that fixes it.
   */
  tls?: ClientTlsSettings;
  /** What the caller calls `baseUrl` and each `tls` setting, in errors (default: these options' names). */
  settingNames?: ClientTlsNames;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Per-attempt timeout. Default 30 s. */
  timeoutMs?: number;
  /**
   * Bound on the whole call, retries and waits included: no attempt starts, and none runs, past
   * it. Default 60 s.
   */
  deadlineMs?: number;
  /** Retries after the first attempt, at most (the deadline usually comes first). Default 10. */
  retries?: number;
  /** First backoff delay; doubles each retry, with full jitter. Default 200 ms. */
  backoffMs?: number;
  /** Longest wait between attempts, whatever Retry-After says. Default 10 s. */
  maxDelayMs?: number;
  /**
   * Send every POST with a fresh `Idempotency-Key` (kept across its retries). The bundled service
   * then answers a repeated create with what the first one created, so a POST carrying a key is
   * retried like any other request. Default false.
   */
  idempotencyKeys?: boolean;
}

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([429, 502, 503, 504]);
/** Connection errors that prove the request never reached the server. */
const NEVER_SENT: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
/** Connection errors after which the server may or may not have acted. */
const MAYBE_SENT: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "ETIMEDOUT",
]);

/** How long a call may go on, retries included, unless the caller says (`deadlineMs`). */
export const DEFAULT_DEADLINE_MS = 60_000;

/**
 * fetch to a running service, with the bearer key, a per-attempt timeout, and retries with
 * exponential backoff and jitter on 429/502/503/504 and connection errors, honouring
 * Retry-After, all within one deadline for the whole call. A POST (create) is retried only when it
 * provably never reached the server or changed nothing: connection refused, a 429 (refused before
 * any handler ran), a 503 ERR_EDGE_507 (the storage refused the write: disk full, read-only) —
 * unless it carries an `Idempotency-Key` (see `idempotencyKeys`): then a repeat cannot create
 * twice. Each retry is told to the caller first (`SendOptions.onRetry`).
 */
export function httpTransport(opts: HttpTransportOptions): Transport {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  const tls = opts.tls ?? {};
  const names = opts.settingNames ?? TRANSPORT_TLS_NAMES;
  const send = fetchFor(baseUrl, tls, names); // settings that cannot be used (the URL too) fail here, named
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const retries = opts.retries ?? 10;
  const backoffMs = opts.backoffMs ?? 200;
  const maxDelayMs = opts.maxDelayMs ?? 10_000;

  return {
    baseUrl,
    async send(request, options: SendOptions = {}) {
      const body = request.body ? await request.arrayBuffer() : undefined;
      const headers = new Headers(request.headers);
      if (opts.apiKey) headers.set("authorization", `Bearer ${opts.apiKey}`);
      if (request.method === "POST" && opts.idempotencyKeys && !headers.has("idempotency-key")) {
        headers.set("idempotency-key", randomUUID());
      }
      // A create may be repeated only when the server can tell the repeat from a new create.
      const isCreate = request.method === "POST" && !headers.has("idempotency-key");
      const target = request.url; // built by the client on baseUrl, path prefix included
      const operation = `${request.method} ${new URL(target).pathname}`;
      const deadline = Date.now() + deadlineMs;
      /** The retry after a failed attempt, or undefined when none is allowed or there is no time left. */
      const nextRetry = (attempt: number, reason: string, waitMs: number): RetryNotice | undefined => {
        const delayMs = Math.min(waitMs, maxDelayMs);
        const remainingMs = deadline - Date.now() - delayMs;
        if (attempt > retries || remainingMs <= 0) return undefined;
        return { operation, attempt, reason, delayMs, remainingMs };
      };
      const waitFor = async (retry: RetryNotice) => {
        options.onRetry?.(retry);
        await sleep(retry.delayMs);
      };

      for (let attempt = 1; ; attempt++) {
        const attemptMs = Math.max(1, Math.min(timeoutMs, deadline - Date.now()));
        let response: Response;
        try {
          response = await send(target, {
            method: request.method,
            headers,
            body,
            signal: AbortSignal.timeout(attemptMs),
          });
        } catch (error) {
          const code = errorCode(error);
          // The same certificate would meet the next attempt: told now, with what fixes it.
          const refused = tlsFailure(error, code, baseUrl, tls, names);
          if (refused) throw refused;
          const retryable =
            NEVER_SENT.has(code) || (!isCreate && (MAYBE_SENT.has(code) || code === "TimeoutError"));
          const reason = code === "TimeoutError" ? `no answer within ${secondsText(attemptMs)}` : code;
          const retry = retryable
            ? nextRetry(attempt, reason, backoff(attempt, backoffMs, maxDelayMs))
            : undefined;
          if (!retry) throw connectionError(error, baseUrl, code, { attempts: attempt, deadlineMs, reason });
          await waitFor(retry);
          continue;
        }
        const retryable =
          RETRYABLE_STATUS.has(response.status) &&
          (!isCreate || response.status === 429 || (await changedNothing(response)));
        const wait =
          retryAfterMs(response.headers.get("retry-after")) ?? backoff(attempt, backoffMs, maxDelayMs);
        const retry = retryable ? nextRetry(attempt, `${response.status} from the service`, wait) : undefined;
        if (!retry) return response;
        await response.body?.cancel();
        await waitFor(retry);
      }
    },
  };
}

/**
 * A 503 whose body says the service stored nothing (its storage refused the write: disk full,
 * read-only), so that even a create without an Idempotency-Key may be sent again.
 */
async function changedNothing(response: Response): Promise<boolean> {
  if (response.status !== 503) return false;
  try {
    const body: unknown = await response.clone().json();
    return errorField(body, "error_code") === ERROR_CODES.storageUnavailable.code;
  } catch {
    return false; // not our error shape (a proxy's 503): whether it was stored is unknown
  }
}

const secondsText = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Wait after the `attempt`-th failure (1-based): exponential, "full jitter". */
function backoff(attempt: number, base: number, max: number): number {
  return Math.random() * Math.min(max, base * 2 ** (attempt - 1));
}

function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function errorCode(error: unknown): string {
  const cause = errorField(error, "cause");
  // String codes only: a timeout is a DOMException whose legacy numeric `code` (23) is no code of ours.
  const found = [
    errorField(cause, "code"),
    errorField(error, "code"),
    errorField(cause, "name"),
    errorField(error, "name"),
  ].find((c) => typeof c === "string");
  return typeof found === "string" ? found : "unknown";
}

function connectionError(
  error: unknown,
  baseUrl: string,
  code: string,
  tried: { attempts: number; deadlineMs: number; reason: string },
): Error {
  const hint =
    code === "ECONNREFUSED"
      ? `is the service running? start it with 'npx edge-service serve' or unset edge:baseUrl to use the embedded service`
      : code === "TimeoutError"
        ? "the service did not answer in time"
        : code === "UND_ERR_SOCKET" && baseUrl.startsWith("http:")
          ? "the connection was closed without an answer; a service that serves TLS closes plain-HTTP connections so: if it does, use an https:// URL"
          : "check the URL and the network";
  const attempts =
    tried.attempts > 1
      ? ` after ${tried.attempts} attempts within the call's deadline of ${secondsText(tried.deadlineMs)} (last: ${tried.reason})`
      : "";
  return new Error(`cannot reach the edge service at ${baseUrl} (${code})${attempts}: ${hint}`, {
    cause: error,
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
