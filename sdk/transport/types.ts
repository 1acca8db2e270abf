/**
 * The thin transport between the typed client and the service: one interface, two
 * implementations with the same behaviour. The client never knows which one it has.
 */
export interface Transport {
  /** Origin that request URLs are built on. */
  readonly baseUrl: string;
  send(request: Request, options?: SendOptions): Promise<Response>;
}

/** What a caller of one request wants to be told while it runs. */
export interface SendOptions {
  /** Told before each retry: what failed, and when the next attempt goes out. */
  onRetry?: (notice: RetryNotice) => void;
}

/** One failed attempt that will be retried. */
export interface RetryNotice {
  /** `METHOD /path`. */
  operation: string;
  /** 1-based number of the attempt that failed. */
  attempt: number;
  /** What happened to it, for people: `no answer within 30 s`, `503 from the service`, `ECONNREFUSED`. */
  reason: string;
  /** Wait before the next attempt. */
  delayMs: number;
  /** Time left before the call's deadline, when the next attempt starts. */
  remainingMs: number;
}
