/**
 * Prometheus metrics, kept and rendered by prom-client in a registry of this service instance's own (tests
 * start several instances in one process; each must count only its own requests).
 *
 * What this file adds to prom-client: the service's named series (request latency and counts, event-store
 * append latency, projection lag), the default process metrics (CPU, memory, event-loop lag, GC), and a bound
 * on the number of label sets per metric (see `LabelSetCap`), which prom-client leaves to its callers.
 */
import type { Request, Response, NextFunction } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Upper bounds (seconds) of the latency histogram buckets; `+Inf` is implied. */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/**
 * At most this many distinct label sets (series) are kept per metric; further label sets are folded into an
 * overflow series labelled route="__other__" (see `LabelSetCap`).
 */
export const MAX_LABEL_SETS_PER_METRIC = 2_000;

/** The route label value that overflowing label sets are folded into. */
export const OVERFLOW_ROUTE = '__other__';

export type Labels = Readonly<Record<string, string>>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Why the cap: every distinct label set is a separate time series for as long as the process lives, both here
 * in memory and in Prometheus' storage. Route labels come from route patterns rather than raw URLs, so in
 * normal operation the number of label sets is small; but a bug (say, a raw path reaching the route label) or
 * a caller recording unbounded values would otherwise grow memory and the scrape without limit and can knock
 * over the monitoring system. Past the cap, new label sets are folded into one overflow series per combination
 * of the labels in `keptOnFold`, with route="__other__". Totals stay correct, only the breakdown is lost, and
 * a visible "__other__" series is the signal that something produces too many label sets. The overflow series
 * are not counted against the cap; there are few of them because only small, closed label sets are kept.
 */
class LabelSetCap {
  private readonly seen = new Set<string>();

  /** `keptOnFold`: labels with a small, closed set of values, kept in the overflow series. */
  constructor(private readonly keptOnFold: readonly string[]) {}

  /** The labels to record under: `labels` itself, or past the cap its overflow series. */
  bound(labels: Labels): Labels {
    const key = labelKey(labels);
    if (this.seen.has(key)) return labels;
    if (this.seen.size < MAX_LABEL_SETS_PER_METRIC) {
      this.seen.add(key);
      return labels;
    }
    // Built in the order of `labels`, which is the order prom-client writes them in.
    const folded: Record<string, string> = {};
    for (const [name, value] of Object.entries(labels)) {
      if (name === 'route') folded.route = OVERFLOW_ROUTE;
      else if (this.keptOnFold.includes(name)) folded[name] = value;
    }
    folded.route = OVERFLOW_ROUTE;
    return folded;
  }
}

/** A counter whose label sets are capped. */
export interface CappedCounter { inc(labels?: Labels, by?: number): void }
/** A gauge whose label sets are capped. */
export interface CappedGauge { set(labels: Labels, value: number): void }

export class Metrics {
  private readonly registry = new Registry();
  /** Every sample name a metric in the registry writes, to refuse a metric whose samples would clash. */
  private readonly sampleNames = new Set<string>();
  /** The type of every metric in the registry, by name. */
  private readonly types = new Map<string, string>();
  /** Metrics declared through `counter`/`gauge`, by name, so a second declaration gets the same one. */
  private readonly declared = new Map<string, { type: 'counter' | 'gauge'; metric: CappedCounter | CappedGauge }>();

  private readonly requestLabels = new LabelSetCap(['method', 'status']);
  private readonly requestsTotal: Counter;
  private readonly requestDuration: Histogram;
  private readonly appendDuration: Histogram;
  private readonly projectionLagEvents: CappedGauge;
  private readonly projectionLagSeconds: CappedGauge;
  private readonly webhookDeliveries: CappedCounter;
  private readonly webhookAttemptDuration: Histogram;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    for (const metric of this.registry.getMetricsAsArray()) {
      for (const name of samplesOf(metric.name, String(metric.type))) this.sampleNames.add(name);
      this.types.set(metric.name, String(metric.type));
    }
    const registers = [this.registry];
    this.requestsTotal = this.reserve(new Counter({
      name: 'http_requests_total', help: 'HTTP requests handled, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'], registers,
    }));
    this.requestDuration = this.reserve(new Histogram({
      name: 'http_request_duration_seconds', help: 'Time from receiving an HTTP request to finishing its response, in seconds.',
      labelNames: ['method', 'route', 'status'], buckets: [...LATENCY_BUCKETS], registers,
    }));
    this.appendDuration = this.reserve(new Histogram({
      name: 'eventstore_append_duration_seconds', help: 'Time taken to append events to the event store, in seconds.',
      buckets: [...LATENCY_BUCKETS], registers,
    }));
    this.projectionLagEvents = this.gauge('projection_lag_events',
      'Events between a projection checkpoint and the head of the event feed.', ['projection']);
    this.projectionLagSeconds = this.gauge('projection_lag_seconds',
      'Age in seconds of the newest event a projection has not processed yet.', ['projection']);
    this.webhookDeliveries = this.counter('webhook_delivery_attempts_total',
      'Webhook delivery attempts made by this process, by outcome: delivered, retrying (failed, tried again later), dropped (failed, past 24 hours), lease_lost.',
      ['outcome']);
    this.webhookAttemptDuration = this.reserve(new Histogram({
      name: 'webhook_attempt_duration_seconds', help: 'Time of one webhook delivery attempt, from sending to the end of the answer (at most 10 s), in seconds.',
      buckets: [...LATENCY_BUCKETS], registers,
    }));
    this.reserve(new Gauge({
      name: 'process_uptime_seconds', help: 'Seconds since the process started.', registers,
      collect() { this.set(process.uptime()); },
    }));
    this.reserve(new Gauge({
      name: 'nodejs_heap_used_bytes', help: 'V8 heap in use, in bytes.', registers,
      collect() { this.set(process.memoryUsage().heapUsed); },
    }));
  }

  /** The Content-Type to send `render()`'s text with (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Records one handled HTTP request. `route` must be a route pattern, never a raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    // Checked first: an invalid duration is refused before anything is counted.
    checkObservation('http_request_duration_seconds', seconds);
    const labels = this.requestLabels.bound({ method, route, status: String(status) });
    this.requestDuration.observe(labels, seconds);
    this.requestsTotal.inc(labels);
  }

  /** Records how long one append to the event store took. */
  observeAppend(seconds: number): void {
    checkObservation('eventstore_append_duration_seconds', seconds);
    this.appendDuration.observe(seconds);
  }

  /** One webhook delivery attempt of this process, and what became of the delivery. */
  observeWebhookAttempt(outcome: string, seconds: number): void {
    checkObservation('webhook_attempt_duration_seconds', seconds);
    this.webhookDeliveries.inc({ outcome });
    this.webhookAttemptDuration.observe(seconds);
  }

  /** The webhook outbox as this process last measured it. */
  setWebhookOutbox(pending: number, oldestAgeSeconds: number): void {
    this.setGauge('webhook_outbox_pending', 'Webhook deliveries waiting to be delivered (endpoints enabled).', pending);
    this.setGauge('webhook_outbox_oldest_age_seconds', 'Age of the oldest pending webhook delivery, in seconds (0 when none).', oldestAgeSeconds);
  }

  setProjectionLag(projection: string, lagEvents: number, lagSeconds: number): void {
    this.projectionLagEvents.set({ projection }, lagEvents);
    this.projectionLagSeconds.set({ projection }, lagSeconds);
  }

  /**
   * A change of a projection's lease in this process: taken (at start, or over from a holder that stopped or whose
   * lease expired) or lost (taken by another instance, or not renewed before it expired). `by` 0 declares the
   * series at zero, so a dashboard sees it before the first change.
   */
  countLeaseChange(projection: string, change: 'acquired' | 'lost', by = 1): void {
    const counter = change === 'acquired'
      ? this.counter('projection_lease_acquired_total',
        'Times this process took a projection\'s lease: at start, or over from a holder that stopped or whose lease expired.', ['projection'])
      : this.counter('projection_lease_lost_total',
        'Times this process lost a projection\'s lease: taken by another instance, or not renewed before it expired.', ['projection']);
    counter.inc({ projection }, by);
  }

  /**
   * A counter, declared where it is used: the first call registers it, later calls with the same name get the
   * same counter (the first `help` and `labelNames` stand). Label sets past the cap fold into route="__other__".
   * Throws when the name is invalid or taken by a metric of another type, or its samples clash with another's.
   */
  counter(name: string, help: string, labelNames: readonly string[] = []): CappedCounter {
    return this.declare(name, 'counter', () => {
      const counter = this.reserve(new Counter({ name, help, labelNames: withRoute(labelNames), registers: [this.registry] }));
      const cap = new LabelSetCap([]);
      return { inc: (labels: Labels = {}, by = 1) => counter.inc(cap.bound(labels), by) };
    });
  }

  /** A gauge, declared where it is used; the same rules as `counter`. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): CappedGauge {
    return this.declare(name, 'gauge', () => {
      const gauge = this.reserve(new Gauge({ name, help, labelNames: withRoute(labelNames), registers: [this.registry] }));
      const cap = new LabelSetCap([]);
      return { set: (labels: Labels, value: number) => gauge.set(cap.bound(labels), value) };
    });
  }

  /** Sets a gauge, declaring it (with the names of `labels` as its label names) on first use. */
  setGauge(name: string, help: string, value: number, labels: Labels = {}): void {
    this.gauge(name, help, Object.keys(labels)).set(labels, value);
  }

  /** All metrics in the Prometheus text format 0.0.4; send with `contentType`. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  private declare<M extends CappedCounter | CappedGauge>(name: string, type: 'counter' | 'gauge', create: () => M): M {
    const existing = this.declared.get(name);
    if (existing !== undefined) {
      if (existing.type !== type) throw new Error(`metric ${name} is already registered as a ${existing.type}`);
      return existing.metric as M;
    }
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`);
    const taken = this.types.get(name);
    if (taken !== undefined && taken !== type) throw new Error(`metric ${name} is already registered as a ${taken}`);
    if (taken !== undefined) throw new Error(`metric name ${name} clashes with an existing metric (${name})`);
    const metric = create();
    this.declared.set(name, { type, metric });
    return metric;
  }

  /** Records the sample names of a metric just registered; refuses (and unregisters) one that clashes. */
  private reserve<M extends Counter | Gauge | Histogram>(created: M): M {
    const metric = created as unknown as { name: string; type: string };
    const names = samplesOf(metric.name, metric.type);
    const clash = names.find((n) => this.sampleNames.has(n));
    if (clash !== undefined) {
      this.registry.removeSingleMetric(metric.name);
      throw new Error(`metric name ${metric.name} clashes with an existing metric (${clash})`);
    }
    for (const n of names) this.sampleNames.add(n);
    this.types.set(metric.name, metric.type);
    return created;
  }
}

/**
 * Express middleware recording every request in `http_requests_total` and `http_request_duration_seconds`,
 * timed from this middleware to the response's 'finish' event. Mount it before the routes. Requests whose
 * connection closes before the response finishes are not recorded.
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

function checkObservation(metric: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${metric}: an observation must be a finite, non-negative number, got ${value}`);
  }
}

/** Declared label names plus `route`, which an overflow series carries; refuses invalid names up front. */
function withRoute(labelNames: readonly string[]): string[] {
  for (const name of labelNames) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new Error(`invalid label name ${JSON.stringify(name)}`);
  }
  return labelNames.includes('route') ? [...labelNames] : [...labelNames, 'route'];
}

/** The sample names a metric of this type writes (a summary's quantiles are samples of its own name). */
function samplesOf(name: string, type: string): string[] {
  return type === 'histogram' || type === 'summary' ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
}

/** A stable key for a label set: the same labels in any order give the same key. */
function labelKey(labels: Labels): string {
  let key = '';
  for (const name of Object.keys(labels).sort()) key += `${name}\u0000${labels[name]}\u0001`;
  return key;
}
