import { randomUUID } from "node:crypto";
import type { Transport } from "./types";

export interface HttpTransportOptions {
  /** Base URL of a running edge service, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Per-attempt timeout. Default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 5. */
  retries?: number;
  /** First backoff delay; doubles each retry, with full jitter. Default 200 ms. */
  backoffMs?: number;
  /** Longest wait between attempts, whatever Retry-After says. Default 30 s. */
  maxDelayMs?: number;
  /**
   * Send every POST with a fresh `Idempotency-Key` (kept across its retries). The bundled service
   * then answers a repeated create with what the first one created, so a POST carrying a key is
   * retried like any other request. Default false.
   */
  idempotencyKeys?: boolean;
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
/** Connection errors that prove the request never reached the server. */
const NEVER_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
/** Connection errors after which the server may or may not have acted. */
const MAYBE_SENT = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED", "ETIMEDOUT"]);

/**
 * fetch to a running service, with the bearer key, a per-request timeout, and retries with
 * exponential backoff and jitter on 429/502/503/504 and connection errors, honouring
 * Retry-After. A POST (create) is retried only when it provably never reached the server:
 * connection refused, or a 429 (refused before any handler ran) — unless it carries an
 * `Idempotency-Key` (see `idempotencyKeys`): then a repeat cannot create twice.
 */
export function httpTransport(opts: HttpTransportOptions): Transport {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  new URL(baseUrl); // fail early on a malformed URL
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const retries = opts.retries ?? 5;
  const backoffMs = opts.backoffMs ?? 200;
  const maxDelayMs = opts.maxDelayMs ?? 30_000;

  return {
    baseUrl,
    async send(request) {
      const body = request.body ? await request.arrayBuffer() : undefined;
      const headers = new Headers(request.headers);
      if (opts.apiKey) headers.set("authorization", `Bearer ${opts.apiKey}`);
      if (request.method === "POST" && opts.idempotencyKeys && !headers.has("idempotency-key")) {
        headers.set("idempotency-key", randomUUID());
      }
      // A create may be repeated only when the server can tell the repeat from a new create.
      const isCreate = request.method === "POST" && !headers.has("idempotency-key");
      const target = request.url; // built by the client on baseUrl, path prefix included

      for (let attempt = 0; ; attempt++) {
        const last = attempt >= retries;
        let response: Response;
        try {
          response = await fetch(target, {
            method: request.method,
            headers,
            body,
            signal: AbortSignal.timeout(timeoutMs),
            redirect: "manual",
          });
        } catch (error) {
          const code = errorCode(error);
          const retryable =
            NEVER_SENT.has(code) || (!isCreate && (MAYBE_SENT.has(code) || code === "TimeoutError"));
          if (last || !retryable) throw connectionError(error, baseUrl, code);
          await sleep(backoff(attempt, backoffMs, maxDelayMs));
          continue;
        }
        const retryable = RETRYABLE_STATUS.has(response.status) && (!isCreate || response.status === 429);
        if (last || !retryable) return response;
        const wait =
          retryAfterMs(response.headers.get("retry-after")) ?? backoff(attempt, backoffMs, maxDelayMs);
        await response.body?.cancel();
        await sleep(Math.min(wait, maxDelayMs));
      }
    },
  };
}

function backoff(attempt: number, base: number, max: number): number {
  return Math.random() * Math.min(max, base * 2 ** attempt); // "full jitter"
}

function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function errorCode(error: unknown): string {
  const e = error as { name?: unknown; code?: unknown; cause?: { code?: unknown; name?: unknown } };
  // String codes only: a timeout is a DOMException whose legacy numeric `code` (23) is no code of ours.
  const found = [e?.cause?.code, e?.code, e?.cause?.name, e?.name].find((c) => typeof c === "string");
  return found ?? "unknown";
}

function connectionError(error: unknown, baseUrl: string, code: string): Error {
  const hint =
    code === "ECONNREFUSED"
      ? `is the service running? start it with 'npx edge-service serve' or unset edge:baseUrl to use the embedded service`
      : code === "TimeoutError"
        ? "the service did not answer in time"
        : "check the URL and the network";
  return new Error(`cannot reach the edge service at ${baseUrl} (${code}): ${hint}`, { cause: error });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
