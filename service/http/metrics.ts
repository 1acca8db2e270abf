/**
 * The service's metrics, in Prometheus' text format (prom-client), one registry per app so that
 * several services in one process (tests, benchmarks) never mix their counts.
 *
 * A request costs a few additions on plain numbers: prom-client's own `inc`/`observe` hash and
 * check their label objects on every call, four of them per GET (count, latency, cache, in
 * flight); with the middleware that called them, a cached GET took 1.26× the CPU
 * (BENCHMARKS.md, "Metrics, probes and logs"). The counts are handed to prom-client
 * when scraped: its counters and gauges take them in their `collect`, and the latency histogram,
 * whose buckets prom-client cannot be given, is a metric of its own that the registry renders.
 *
 * Labels are bounded: `operation` is an operation id of the table (`get_route`, ~60 of them) or
 * `none` for a request that matched no operation (404/405), never a path; `status` is the HTTP
 * status. Names follow Prometheus' conventions: an application prefix, base units (seconds),
 * `_total` on counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { Store } from "../store/store";

/** The `operation` label of a request that matched no operation of the table. */
export const NO_OPERATION = "none";

/**
 * Upper bounds of the latency histogram, in seconds: from a cached GET (tens of µs, below the
 * first bucket) through writes (ms) to the 10 s a request may wait for a database connection and
 * more. Prometheus' default buckets start at 5 ms, where most of this service's answers are done.
 */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** What one operation's requests have come to (a handle its route keeps: see ServiceMetrics.countsOf). */
export class OperationCounts {
  /** Answers by HTTP status. */
  readonly statuses = new Map<number, number>();
  /** Requests whose duration fell in each bucket (not cumulative); the last one is +Inf. */
  readonly buckets = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  count = 0;
  seconds = 0;
  replays = 0;
}

export class ServiceMetrics {
  private readonly registry = new Registry();
  private readonly operations = new Map<string, OperationCounts>();
  private inFlight = 0;
  private cacheHits = 0;
  private cacheMisses = 0;
  private none?: OperationCounts;
  private auditEventsWritten = 0;
  private auditEventsPruned = 0;

  constructor(store: Store) {
    const registers = [this.registry];
    const counts = () => this.operations.entries();
    new Counter({
      name: "edge_service_requests_total",
      help: "Requests answered, by operation id (none: no operation matched) and HTTP status.",
      labelNames: ["operation", "status"],
      registers,
      collect() {
        this.reset();
        for (const [operation, c] of counts()) {
          for (const [status, n] of c.statuses) this.inc({ operation, status: String(status) }, n);
        }
      },
    });
    // A duck-typed metric: the registry only calls its `get()` and reads name, help, type.
    const register: unknown = Reflect.get(this.registry, "registerMetric");
    if (typeof register === "function") Reflect.apply(register, this.registry, [this.latencyHistogram()]);
    // Read when scraped (prom-client calls `collect` with the metric as `this`).
    const inFlight = () => this.inFlight;
    const cache = () => [this.cacheHits, this.cacheMisses] as const;
    new Gauge({
      name: "edge_service_requests_in_flight",
      help: "Requests received and not yet answered.",
      registers,
      collect() {
        this.set(inFlight());
      },
    });
    new Counter({
      name: "edge_service_response_cache_lookups_total",
      help: "GET answers looked up in the response cache: hit (reused, the data unchanged since) or miss (rendered).",
      labelNames: ["result"],
      registers,
      collect() {
        this.reset();
        // Both series always exist, so a hit ratio is defined before the first miss.
        const [hits, misses] = cache();
        this.inc({ result: "hit" }, hits);
        this.inc({ result: "miss" }, misses);
      },
    });
    new Counter({
      name: "edge_service_idempotent_replays_total",
      help: "Creates answered with the object an earlier create with their Idempotency-Key made.",
      labelNames: ["operation"],
      registers,
      collect() {
        this.reset();
        for (const [operation, c] of counts()) if (c.replays > 0) this.inc({ operation }, c.replays);
      },
    });
    const audit = () => [this.auditEventsWritten, this.auditEventsPruned] as const;
    new Counter({
      name: "edge_service_audit_events_written_total",
      help: "Audit events written by this replica (one per change committed).",
      registers,
      collect() {
        this.reset();
        this.inc(audit()[0]);
      },
    });
    new Counter({
      name: "edge_service_audit_events_pruned_total",
      help: "Audit events deleted by this replica's retention (--audit-retention).",
      registers,
      collect() {
        this.reset();
        this.inc(audit()[1]);
      },
    });
    const pool = store.poolStats?.bind(store);
    if (pool) {
      // Read when scraped: the pool keeps these counts itself.
      new Gauge({
        name: "edge_service_pg_pool_connections",
        help: "Connections of this replica's PostgreSQL pool: in_use (checked out by a request) or idle.",
        labelNames: ["state"],
        registers,
        collect() {
          const s = pool();
          this.set({ state: "in_use" }, s.inUse);
          this.set({ state: "idle" }, s.idle);
        },
      });
      new Gauge({
        name: "edge_service_pg_pool_waiting_requests",
        help: "Requests waiting for a PostgreSQL connection (every connection of the pool is in use).",
        registers,
        collect() {
          this.set(pool().waiting);
        },
      });
      new Gauge({
        name: "edge_service_pg_pool_max_connections",
        help: "The most connections this replica's pool opens (--pool-size).",
        registers,
        collect() {
          this.set(pool().max);
        },
      });
    }
    // CPU, memory, event-loop lag, garbage collection, open file descriptors: what every Node.js
    // service exports, under the names dashboards expect (process_*, nodejs_*).
    collectDefaultMetrics({ register: this.registry });
  }

  /**
   * `edge_service_request_duration_seconds` as the registry renders a metric: what `get()`
   * answers (prom-client's Histogram answers the same shape from its own counts).
   */
  private latencyHistogram() {
    const name = "edge_service_request_duration_seconds";
    const help = "Time from a request's arrival to its answer, by operation id.";
    return {
      name,
      help,
      type: "histogram",
      aggregator: "sum",
      get: () => {
        const values: Array<{ metricName: string; labels: Record<string, string>; value: number }> = [];
        for (const [operation, c] of this.operations) {
          if (c.count === 0) continue; // an operation never asked for has no series
          let cumulative = 0;
          for (const [i, count] of c.buckets.entries()) {
            cumulative += count;
            const le = i < LATENCY_BUCKETS.length ? String(LATENCY_BUCKETS[i]) : "+Inf";
            values.push({ metricName: `${name}_bucket`, labels: { le, operation }, value: cumulative });
          }
          values.push({ metricName: `${name}_sum`, labels: { operation }, value: c.seconds });
          values.push({ metricName: `${name}_count`, labels: { operation }, value: c.count });
        }
        return { name, help, type: "histogram", aggregator: "sum", values };
      },
    };
  }

  /**
   * The counts of one operation id: looked up once, when its route is made, so that answering a
   * request looks nothing up.
   */
  countsOf(operation: string): OperationCounts {
    let c = this.operations.get(operation);
    if (!c) this.operations.set(operation, (c = new OperationCounts()));
    return c;
  }

  requestStarted(): void {
    this.inFlight++;
  }

  /** A request answered: `counts` are its operation's, or undefined when none matched. */
  requestDone(counts: OperationCounts | undefined, status: number, seconds: number): void {
    this.inFlight--;
    const c = counts ?? (this.none ??= this.countsOf(NO_OPERATION));
    c.statuses.set(status, (c.statuses.get(status) ?? 0) + 1);
    c.count++;
    c.seconds += seconds;
    // The first bucket whose bound is not below the duration, else the last (+Inf).
    const bucket = LATENCY_BUCKETS.findIndex((bound) => !(seconds > bound));
    const i = bucket === -1 ? LATENCY_BUCKETS.length : bucket;
    c.buckets[i] = (c.buckets[i] ?? 0) + 1;
  }

  /** A keyed create answered by the object an earlier one made (`Idempotent-Replayed`). */
  replayed(operation: string): void {
    this.countsOf(operation).replays++;
  }

  /** Audit events committed with a change (see EdgeService). */
  auditWritten(n: number): void {
    this.auditEventsWritten += n;
  }

  /** Audit events deleted past the retention (see startAuditPruner). */
  auditPruned(n: number): void {
    this.auditEventsPruned += n;
  }

  /** What the GET answer cache reports (see ResponseCache). */
  readonly cache = {
    hit: () => {
      this.cacheHits++;
    },
    miss: () => {
      this.cacheMisses++;
    },
  };

  /** The exposition, in Prometheus' text format (version 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
