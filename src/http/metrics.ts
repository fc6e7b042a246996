import type { Clock } from "../domain/clock";
import type { ReleaseHolder } from "../domain/releases/holder";
import type { Endpoint } from "./endpoint";

/** What the scrape-time gauges read. */
export interface MetricsSources {
  readonly clock: Clock;
  readonly releases: ReleaseHolder;
  readonly tokenLookups: { readonly hits: number; readonly misses: number };
  /** Resolves when the records answer, rejects otherwise. */
  readonly pingRecords: () => Promise<void>;
  /** Where rate-limit counters live now ("shared", "per-process", or a degraded shared store). */
  readonly rateLimits: () => string;
  /** keyturn's version and build id, for `keyturn_build_info`. */
  readonly version: string;
}

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/**
 * keyturn's Prometheus metrics (prom-client): requests by endpoint and status with latency, refusals
 * by code (seat_limit and rate_limited among them), activations, and gauges read at scrape time.
 * The per-request work is two counter increments and one histogram observation on label children
 * resolved once per endpoint and status.
 */
export function createMetrics(sources: MetricsSources) {
  // Loaded here, by the sites that serve /metrics (--metrics-listen), rather than by every process:
  // evaluating prom-client holds about 2 MB of heap (bench/README.md, "4a and 5a, third round").
  const { Counter, Gauge, Histogram, Registry } = require("prom-client") as typeof import("prom-client");
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: "keyturn_http_requests_total",
    help: "Requests answered, by endpoint and status",
    labelNames: ["route", "status"],
    registers,
  });
  const duration = new Histogram({
    name: "keyturn_http_request_duration_seconds",
    help: "Time to answer, by endpoint",
    labelNames: ["route"],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const refusals = new Counter({ name: "keyturn_refusals_total", help: "Refusals by endpoint and error code", labelNames: ["route", "code"], registers });
  const activations = new Counter({
    name: "keyturn_activations_total",
    help: "Successful activations and staff sign-ins (new or reused seats)",
    labelNames: ["route"],
    registers,
  });

  // Prometheus' info-metric idiom: a scrape says which build answers (after an upgrade, or across a fleet).
  new Gauge({
    name: "keyturn_build_info",
    help: "The version and build id of this process (value 1)",
    labelNames: ["version"],
    registers,
  }).set({ version: sources.version }, 1);
  new Gauge({
    name: "keyturn_release_index_releases",
    help: "Live releases in the index being served",
    registers,
    collect() {
      this.set(sources.releases.current?.size ?? 0);
    },
  });
  new Gauge({
    name: "keyturn_release_index_age_seconds",
    help: "Seconds since the index being served was built (NaN before the first)",
    registers,
    collect() {
      const at = sources.releases.builtAt;
      this.set(at === null ? Number.NaN : (sources.clock() - at) / 1000);
    },
  });
  new Gauge({
    name: "keyturn_release_folders_skipped",
    help: "Release folders the last scan skipped (see GET /api/v1/admin/releases or the log for why)",
    registers,
    collect() {
      this.set(sources.releases.skipped.size);
    },
  });
  new Gauge({
    name: "keyturn_token_cache_hit_ratio",
    help: "Share of token verifications answered from the verified-token cache since start",
    registers,
    collect() {
      const { hits, misses } = sources.tokenLookups;
      this.set(hits + misses === 0 ? 0 : hits / (hits + misses));
    },
  });
  new Gauge({
    name: "keyturn_records_up",
    help: "1 when the records (SQLite or PostgreSQL) answer",
    registers,
    async collect() {
      this.set(
        await sources.pingRecords().then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
  new Gauge({
    name: "keyturn_rate_limit_store_up",
    help: "1 when rate-limit counters are where configured (per process, or the shared Redis when set)",
    registers,
    collect() {
      this.set(sources.rateLimits().includes("unreachable") ? 0 : 1);
    },
  });

  const routeName = (e: Endpoint | undefined) => (e ? `${e.method} ${e.path}` : "unrouted");
  type RouteSeries = { duration: ReturnType<typeof duration.labels>; statuses: Map<number, ReturnType<typeof requests.labels>> };
  const perRoute = new Map<Endpoint | undefined, RouteSeries>();

  return {
    registry,
    contentType: registry.contentType,
    /** Records one answered request (`code`: the refusal's error code, if any). */
    observe(endpoint: Endpoint | undefined, status: number, code: string | undefined, seconds: number) {
      let r = perRoute.get(endpoint);
      if (!r) perRoute.set(endpoint, (r = { duration: duration.labels(routeName(endpoint)), statuses: new Map() }));
      r.duration.observe(seconds);
      let counter = r.statuses.get(status);
      if (!counter) r.statuses.set(status, (counter = requests.labels(routeName(endpoint), String(status))));
      counter.inc();
      if (code !== undefined) refusals.labels(routeName(endpoint), code).inc();
      else if (status === 200 && (endpoint?.audit === "activate" || endpoint?.audit === "sign-in")) activations.labels(routeName(endpoint)).inc();
    },
    /** The text exposition format. */
    text: () => registry.metrics(),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
