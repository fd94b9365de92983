/**
 * Prometheus metrics in the text exposition format (version 0.0.4), written out by hand.
 *
 * The service needs a handful of series: request latency and counts, event-store append latency,
 * projection lag and a few process gauges. That is small enough that a registry, a renderer and the
 * label-value escaping rules fit in one file, and we keep full control over cardinality.
 *
 * Format reminders (https://prometheus.io/docs/instrumenting/exposition_formats/):
 * - one `# HELP` and one `# TYPE` line per metric family, before its samples;
 * - in HELP text, backslash and newline are escaped; in label values, backslash, double quote and
 *   newline are escaped;
 * - a histogram exposes cumulative `_bucket{le="..."}` samples ending with `le="+Inf"`, then `_sum`
 *   and `_count` (and the +Inf bucket equals `_count`);
 * - the body ends with a newline.
 */
import type { Request, Response, NextFunction } from 'express';

/** The Content-Type to send with `Metrics.render()`. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Upper bounds (seconds) of the latency histogram buckets; `+Inf` is implied. */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/**
 * At most this many distinct label sets are kept per metric family; further label sets are folded into
 * an overflow series labelled route="__other__" (see `Family.seriesFor`).
 */
export const MAX_LABEL_SETS_PER_METRIC = 2_000;

/** The route label value that overflowing label sets are folded into. */
export const OVERFLOW_ROUTE = '__other__';

export type Labels = Readonly<Record<string, string>>;

type MetricType = 'counter' | 'gauge' | 'histogram';

interface Series {
  labels: Labels;
  /** Counter or gauge value; for a histogram, the sum of observations. */
  value: number;
  /** Histograms only: observations per bucket (not cumulative), one entry per finite bound. */
  bucketCounts: number[] | null;
  /** Histograms only: number of observations. */
  count: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

class Family {
  private readonly series = new Map<string, Series>();
  /** Label sets created from callers' values, i.e. not counting the overflow series. */
  private distinct = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    /**
     * Labels whose values are kept when a label set is folded into the overflow series. Only labels
     * with a small, closed set of values belong here, so that the overflow series stay few.
     */
    private readonly keptOnFold: readonly string[] = [],
    private readonly buckets: readonly number[] = [],
  ) {}

  /** The sample names this family writes, to detect clashes with other families. */
  sampleNames(): string[] {
    return this.type === 'histogram'
      ? [`${this.name}_bucket`, `${this.name}_sum`, `${this.name}_count`]
      : [this.name];
  }

  inc(labels: Labels, by = 1): void {
    this.seriesFor(labels).value += by;
  }

  set(labels: Labels, value: number): void {
    this.seriesFor(labels).value = value;
  }

  observe(labels: Labels, value: number): void {
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(`${this.name}: an observation must be a finite, non-negative number, got ${value}`);
    }
    const series = this.seriesFor(labels);
    const index = this.buckets.findIndex((bound) => value <= bound);
    // Values above the largest bound only show up in the implied +Inf bucket, i.e. in the count.
    if (index >= 0) series.bucketCounts![index]! += 1;
    series.value += value;
    series.count += 1;
  }

  /**
   * The series for a label set, created on first use.
   *
   * Why the cap: every distinct label set is a separate time series for as long as the process lives,
   * both here in memory and in Prometheus' storage. Route labels come from route patterns rather than
   * raw URLs, so in normal operation the number of label sets is small; but a bug (say, a raw path
   * reaching the route label) or a caller recording unbounded values would otherwise grow memory and
   * the scrape without limit and can knock over the monitoring system. Past the cap, new label sets are
   * folded into one overflow series per combination of the labels in `keptOnFold`, with
   * route="__other__". Totals stay correct, only the breakdown is lost, and a visible "__other__" series
   * is the signal that something produces too many label sets. The overflow series themselves are not
   * counted against the cap; there are few of them because only small, closed label sets are kept.
   */
  private seriesFor(labels: Labels): Series {
    const key = labelKey(labels);
    const existing = this.series.get(key);
    if (existing) return existing;
    if (this.distinct < MAX_LABEL_SETS_PER_METRIC) {
      const created = this.create(key, labels);
      this.distinct += 1;
      return created;
    }
    const folded: Record<string, string> = {};
    for (const name of this.keptOnFold) {
      const value = labels[name];
      if (value !== undefined) folded[name] = value;
    }
    folded.route = OVERFLOW_ROUTE;
    const foldedKey = labelKey(folded);
    return this.series.get(foldedKey) ?? this.create(foldedKey, folded);
  }

  private create(key: string, labels: Labels): Series {
    for (const name of Object.keys(labels)) {
      if (!LABEL_NAME.test(name) || name.startsWith('__') || (this.type === 'histogram' && name === 'le')) {
        throw new Error(`${this.name}: invalid label name ${JSON.stringify(name)}`);
      }
    }
    const series: Series = {
      labels: { ...labels },
      value: 0,
      bucketCounts: this.type === 'histogram' ? this.buckets.map(() => 0) : null,
      count: 0,
    };
    this.series.set(key, series);
    return series;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`);
    for (const series of this.series.values()) {
      if (series.bucketCounts === null) {
        out.push(`${this.name}${formatLabels(series.labels)} ${formatValue(series.value)}`);
        continue;
      }
      let cumulative = 0;
      series.bucketCounts.forEach((n, i) => {
        cumulative += n;
        const le = formatValue(this.buckets[i]!);
        out.push(`${this.name}_bucket${formatLabels(series.labels, le)} ${cumulative}`);
      });
      out.push(
        `${this.name}_bucket${formatLabels(series.labels, '+Inf')} ${series.count}`,
        `${this.name}_sum${formatLabels(series.labels)} ${formatValue(series.value)}`,
        `${this.name}_count${formatLabels(series.labels)} ${series.count}`,
      );
    }
  }
}

/** Gauges computed when rendering, rather than stored. */
const RUNTIME_GAUGES: ReadonlyArray<{ name: string; help: string; read: () => number }> = [
  { name: 'process_uptime_seconds', help: 'Seconds since the process started.', read: () => process.uptime() },
  { name: 'nodejs_heap_used_bytes', help: 'V8 heap in use, in bytes.', read: () => process.memoryUsage().heapUsed },
];

export class Metrics {
  private readonly families = new Map<string, Family>();
  /** Every sample name written by a family or a runtime gauge, to reject clashing names. */
  private readonly sampleNames = new Set<string>(RUNTIME_GAUGES.map((g) => g.name));

  private readonly requestsTotal = this.register(new Family(
    'http_requests_total', 'HTTP requests handled, by method, route pattern and status code.', 'counter', ['method', 'status'],
  ));
  private readonly requestDuration = this.register(new Family(
    'http_request_duration_seconds', 'Time from receiving an HTTP request to finishing its response, in seconds.',
    'histogram', ['method', 'status'], LATENCY_BUCKETS,
  ));
  private readonly appendDuration = this.register(new Family(
    'eventstore_append_duration_seconds', 'Time taken to append events to the event store, in seconds.',
    'histogram', [], LATENCY_BUCKETS,
  ));
  private readonly projectionLagEvents = this.register(new Family(
    'projection_lag_events', 'Events between a projection checkpoint and the head of the event feed.', 'gauge',
  ));
  private readonly projectionLagSeconds = this.register(new Family(
    'projection_lag_seconds', 'Age in seconds of the newest event a projection has not processed yet.', 'gauge',
  ));
  private readonly leasesAcquired = this.register(new Family(
    'projection_lease_acquired_total',
    'Times this process took a projection\'s lease: at start, or over from a holder that stopped or whose lease expired.',
    'counter',
  ));
  private readonly leasesLost = this.register(new Family(
    'projection_lease_lost_total',
    'Times this process lost a projection\'s lease: taken by another instance, or not renewed before it expired.',
    'counter',
  ));

  /** Records one handled HTTP request. `route` must be a route pattern, never a raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    // Observe first: it rejects invalid durations before anything is counted.
    this.requestDuration.observe(labels, seconds);
    this.requestsTotal.inc(labels);
  }

  /** Records how long one append to the event store took. */
  observeAppend(seconds: number): void {
    this.appendDuration.observe({}, seconds);
  }

  setProjectionLag(projection: string, lagEvents: number, lagSeconds: number): void {
    this.projectionLagEvents.set({ projection }, lagEvents);
    this.projectionLagSeconds.set({ projection }, lagSeconds);
  }

  /** Counts a lease this process took or lost; `by` 0 shows a projection's series before its first change. */
  countLeaseChange(projection: string, change: 'acquired' | 'lost', by = 1): void {
    (change === 'acquired' ? this.leasesAcquired : this.leasesLost).inc({ projection }, by);
  }

  /**
   * Sets a gauge, registering it on first use. The first `help` given for a name is the one rendered.
   * Throws when the name is not a valid metric name or is already used by a metric of another type.
   */
  setGauge(name: string, help: string, value: number, labels: Labels = {}): void {
    let family = this.families.get(name);
    if (family === undefined) {
      family = this.register(new Family(name, help, 'gauge'));
    } else if (family.type !== 'gauge') {
      throw new Error(`metric ${name} is already registered as a ${family.type}`);
    }
    family.set(labels, value);
  }

  /** All metrics in the Prometheus text format 0.0.4; send with `PROMETHEUS_CONTENT_TYPE`. */
  render(): string {
    const out: string[] = [];
    for (const family of this.families.values()) family.render(out);
    for (const gauge of RUNTIME_GAUGES) {
      out.push(`# HELP ${gauge.name} ${escapeHelp(gauge.help)}`, `# TYPE ${gauge.name} gauge`, `${gauge.name} ${formatValue(gauge.read())}`);
    }
    return `${out.join('\n')}\n`;
  }

  private register(family: Family): Family {
    if (!METRIC_NAME.test(family.name)) throw new Error(`invalid metric name ${JSON.stringify(family.name)}`);
    const names = family.sampleNames();
    const clash = names.find((n) => this.sampleNames.has(n));
    if (clash !== undefined) throw new Error(`metric name ${family.name} clashes with an existing metric (${clash})`);
    for (const n of names) this.sampleNames.add(n);
    this.families.set(family.name, family);
    return family;
  }
}

/**
 * Express middleware recording every request in `http_requests_total` and
 * `http_request_duration_seconds`, timed from this middleware to the response's 'finish' event. Mount it
 * before the routes. Requests whose connection closes before the response finishes are not recorded.
 *
 * The route label is the matched route pattern (`req.baseUrl + req.route.path`, e.g. "/things/:id"), or
 * "unmatched" when no route handled the request. It is never the raw URL: URLs carry ids and arbitrary
 * client input, which would create a series per distinct value. Caveats: a router mounted on a path
 * with parameters puts the actual values in `req.baseUrl`, so mount routers on fixed paths; and a
 * request that matched a route whose handler passed it on with `next()` keeps that route's label.
 */
export function metricsMiddleware(metrics: Metrics): (req: Request, res: Response, next: NextFunction) => void {
  return function recordRequestMetrics(req, res, next) {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observeRequest(req.method, routeLabel(req), res.statusCode, seconds);
    });
    next();
  };
}

function routeLabel(req: Request): string {
  const route: unknown = req.route;
  if (typeof route !== 'object' || route === null || !('path' in route)) return 'unmatched';
  const path = typeof route.path === 'string' ? route.path : String(route.path);
  return `${req.baseUrl}${path}`;
}

/** A stable key for a label set: the same labels in any order give the same key. */
function labelKey(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((name) => [name, labels[name]]));
}

/** `{a="x",b="y"}` with label names sorted, an optional `le` last, or '' when there are no labels. */
function formatLabels(labels: Labels, le?: string): string {
  const pairs = Object.keys(labels).sort().map((name) => `${name}="${escapeLabelValue(labels[name]!)}"`);
  if (le !== undefined) pairs.push(`le="${le}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** Label values: backslash, double quote and line feed are escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** HELP text: backslash and line feed are escaped (double quotes are not). */
function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
