/**
 * What the service tells its operator, in one of two formats: `text` (one line per request, as
 * before; the CLI puts the time in front) or `json` (one JSON object per line, for log pipelines:
 * Loki, Elasticsearch, CloudWatch). Never a body, a header value or a key: a request is told by
 * its id, operation, method, path, status, duration and the name of the key that made it.
 */

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** One answered request. */
export interface RequestRecord {
  /** The `Request-Id` of the answer. */
  requestId: string;
  /** The operation id of the table (`get_route`); undefined when the request matched none (404/405). */
  operation: string | undefined;
  method: string;
  /** The URL's path, without its query (a query may carry anything a client typed). */
  path: string;
  status: number;
  durationMs: number;
  /** The name of the API key that authenticated the request (`bootstrap`, or a named key's); none without one. */
  keyName: string | undefined;
}

export type LogLevel = "info" | "warn" | "error";

export interface ServiceLog {
  readonly format: LogFormat;
  request(r: RequestRecord): void;
  /**
   * Anything else the operator should know: an internal error, the database lost, readiness
   * changing. `text` is the whole line in the text format and the `msg` of the JSON object;
   * `fields` are extra members of the JSON object (the text format already says them).
   */
  event(level: LogLevel, text: string, fields?: Readonly<Record<string, string>>): void;
}

/** A log writing finished lines (no newline) to `sink`. */
export function serviceLog(sink: (line: string) => void, format: LogFormat = "text"): ServiceLog {
  if (format === "text") {
    return {
      format,
      request: (r) =>
        sink(
          `${r.method} ${r.path} ${r.status} ${r.durationMs.toFixed(1)}ms ${r.requestId}${r.keyName === undefined ? "" : ` key=${r.keyName}`}`,
        ),
      event: (_level, text) => sink(text),
    };
  }
  return {
    format,
    request: (r) =>
      sink(
        JSON.stringify({
          time: new Date().toISOString(),
          level: r.status >= 500 ? "error" : "info",
          msg: "request",
          request_id: r.requestId,
          operation: r.operation ?? null,
          method: r.method,
          path: r.path,
          status: r.status,
          duration_ms: Math.round(r.durationMs * 1000) / 1000,
          key: r.keyName ?? null,
        }),
      ),
    event: (level, text, fields) =>
      sink(JSON.stringify({ time: new Date().toISOString(), level, msg: text, ...fields })),
  };
}

/**
 * A sink for `serve`'s log stream: the lines of one turn of the event loop go out in one write.
 * On Linux a write to a pipe or a file is synchronous, one system call per line when each line is
 * written alone: under load, the request log cost a route write more CPU than its audit event
 * (BENCHMARKS.md, "The write path against the last release"). The lines wait at most until the
 * loop's check phase (setImmediate), and `flush` writes what is queued at once: `serve` calls it
 * on exit, so a stop, an error or `process.exit` loses nothing; only a kill -9 loses the lines of
 * the turn it cuts.
 */
export function batchedSink(write: (text: string) => void): {
  sink: (line: string) => void;
  flush: () => void;
} {
  let queued: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (queued.length === 0) return;
    const text = `${queued.join("\n")}\n`;
    queued = [];
    write(text);
  };
  return {
    sink: (line) => {
      queued.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
