import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { until } from './support/until.ts';
import { LATENCY_BUCKETS, MAX_LABEL_SETS_PER_METRIC, Metrics, metricsMiddleware } from '../src/http/metrics.ts';

/** The sample lines of a rendered body whose name and labels start with `prefix`. */
function samples(text: string, prefix: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(prefix));
}

/** The value of the one sample line that starts with `prefix`. */
function sampleValue(text: string, prefix: string): number {
  const lines = samples(text, prefix);
  expect(lines, `exactly one sample starting with ${prefix}`).to.have.length(1);
  return Number(lines[0]!.slice(lines[0]!.lastIndexOf(' ') + 1));
}

describe('Metrics', () => {
  it('renders a request histogram with cumulative buckets, sum and count, and the request counter', async () => {
    const metrics = new Metrics();
    for (const seconds of [0.003, 0.005, 0.02, 0.3, 12]) metrics.observeRequest('GET', '/things/:id', 200, seconds);
    metrics.observeRequest('POST', '/things', 201, 0.04);
    const text = await metrics.render();

    const labels = 'method="GET",route="/things/:id",status="200"';
    const expected: Array<[string, number]> = [
      ['0.005', 2], ['0.01', 2], ['0.025', 3], ['0.05', 3], ['0.1', 3], ['0.25', 3],
      ['0.5', 4], ['1', 4], ['2.5', 4], ['5', 4], ['10', 4], ['+Inf', 5],
    ];
    for (const [le, count] of expected) {
      expect(text).to.include(`http_request_duration_seconds_bucket{le="${le}",${labels}} ${count}\n`);
    }
    expect(samples(text, 'http_request_duration_seconds_bucket{').filter((l) => l.includes(labels))).to.have.length(expected.length);
    expect(sampleValue(text, `http_request_duration_seconds_sum{${labels}}`)).to.be.closeTo(12.328, 1e-9);
    expect(text).to.include(`http_request_duration_seconds_count{${labels}} 5\n`);
    expect(text).to.include(`http_requests_total{${labels}} 5\n`);
    expect(text).to.include('http_requests_total{method="POST",route="/things",status="201"} 1\n');
    expect(text).to.include('http_request_duration_seconds_bucket{le="0.025",method="POST",route="/things",status="201"} 0\n');
    expect(text).to.include('http_request_duration_seconds_bucket{le="0.05",method="POST",route="/things",status="201"} 1\n');
  });

  it('writes HELP and TYPE lines once per family, before its samples, and ends with a newline', async () => {
    const metrics = new Metrics();
    metrics.observeRequest('GET', '/a', 200, 0.1);
    metrics.observeRequest('GET', '/b', 200, 0.1);
    const text = await metrics.render();
    const lines = text.split('\n');

    expect(text.endsWith('\n')).to.equal(true);
    for (const [name, type] of [
      ['http_requests_total', 'counter'], ['http_request_duration_seconds', 'histogram'],
      ['eventstore_append_duration_seconds', 'histogram'], ['projection_lag_events', 'gauge'],
      ['projection_lag_seconds', 'gauge'], ['process_uptime_seconds', 'gauge'], ['nodejs_heap_used_bytes', 'gauge'],
    ] as const) {
      expect(lines.filter((l) => l === `# TYPE ${name} ${type}`), name).to.have.length(1);
      expect(lines.filter((l) => l.startsWith(`# HELP ${name} `)), name).to.have.length(1);
      const typeAt = lines.indexOf(`# TYPE ${name} ${type}`);
      const firstSample = lines.findIndex((l) => l.startsWith(`${name}{`) || l.startsWith(`${name}_`) || l.startsWith(`${name} `));
      if (firstSample >= 0) expect(firstSample, name).to.be.greaterThan(typeAt);
    }
  });

  it('records event-store appends in an unlabelled histogram', async () => {
    const metrics = new Metrics();
    metrics.observeAppend(0.002);
    metrics.observeAppend(0.07);
    const text = await metrics.render();
    expect(text).to.include('eventstore_append_duration_seconds_bucket{le="0.005"} 1\n');
    expect(text).to.include('eventstore_append_duration_seconds_bucket{le="0.1"} 2\n');
    expect(text).to.include('eventstore_append_duration_seconds_bucket{le="+Inf"} 2\n');
    expect(sampleValue(text, 'eventstore_append_duration_seconds_sum ')).to.be.closeTo(0.072, 1e-12);
    expect(text).to.include('eventstore_append_duration_seconds_count 2\n');
  });

  it('rejects observations that are negative or not finite', async () => {
    const metrics = new Metrics();
    expect(() => metrics.observeAppend(-1)).to.throw(RangeError);
    expect(() => metrics.observeRequest('GET', '/a', 200, Number.NaN)).to.throw(RangeError);
    expect(await metrics.render()).not.to.include('http_requests_total{');
  });

  it('sets projection lag gauges, keeping the latest value', async () => {
    const metrics = new Metrics();
    metrics.setProjectionLag('balances', 10, 2.5);
    metrics.setProjectionLag('balances', 3, 0.25);
    metrics.setProjectionLag('statements', 0, 0);
    const text = await metrics.render();
    expect(text).to.include('projection_lag_events{projection="balances"} 3\n');
    expect(text).to.include('projection_lag_seconds{projection="balances"} 0.25\n');
    expect(text).to.include('projection_lag_events{projection="statements"} 0\n');
  });

  it('sets generic gauges and refuses names used by another metric type', async () => {
    const metrics = new Metrics();
    metrics.setGauge('db_pool_idle', 'Idle connections\nin the pool \\ "main".', 4, { pool: 'main' });
    metrics.setGauge('db_pool_idle', 'ignored: the first help text wins', 5, { pool: 'main' });
    metrics.setGauge('build_info', 'Build information.', 1);
    metrics.setGauge('weird_values', 'Special values.', Number.POSITIVE_INFINITY);
    const text = await metrics.render();
    expect(text).to.include('# HELP db_pool_idle Idle connections\\nin the pool \\\\ "main".\n');
    expect(text).to.include('db_pool_idle{pool="main"} 5\n');
    expect(text).to.include('build_info 1\n');
    expect(text).to.include('weird_values +Inf\n');

    expect(() => metrics.setGauge('http_requests_total', 'x', 1)).to.throw(/counter/);
    expect(() => metrics.setGauge('http_request_duration_seconds_count', 'x', 1)).to.throw(/clashes/);
    expect(() => metrics.setGauge('process_uptime_seconds', 'x', 1)).to.throw(/clashes/);
    expect(() => metrics.setGauge('not-a-name', 'x', 1)).to.throw(/invalid metric name/);
    expect(() => metrics.setGauge('ok_name', 'x', 1, { 'bad-label': 'v' })).to.throw(/invalid label name/);
  });

  it('escapes backslash, double quote and newline in label values', async () => {
    const metrics = new Metrics();
    metrics.setProjectionLag('we"ird\\name\nx', 1, 1);
    expect(await metrics.render()).to.include('projection_lag_events{projection="we\\"ird\\\\name\\nx"} 1\n');
  });

  it('renders the runtime gauges computed at render time', async () => {
    const text = await new Metrics().render();
    expect(sampleValue(text, 'process_uptime_seconds ')).to.be.greaterThan(0);
    expect(sampleValue(text, 'nodejs_heap_used_bytes ')).to.be.greaterThan(0);
  });

  it('adds the default process metrics: CPU, memory, event-loop lag, garbage collection', async () => {
    const text = await new Metrics().render();
    for (const [name, type] of [
      ['process_cpu_seconds_total', 'counter'], ['process_resident_memory_bytes', 'gauge'],
      ['nodejs_heap_size_used_bytes', 'gauge'], ['nodejs_eventloop_lag_seconds', 'gauge'],
      ['nodejs_eventloop_lag_p99_seconds', 'gauge'], ['nodejs_gc_duration_seconds', 'histogram'],
    ] as const) {
      expect(text, name).to.include(`# TYPE ${name} ${type}\n`);
    }
    expect(sampleValue(text, 'process_resident_memory_bytes ')).to.be.greaterThan(0);
  });

  it('keeps each instance\'s series in its own registry', async () => {
    const first = new Metrics();
    const second = new Metrics();
    first.observeRequest('GET', '/only-first', 200, 0.01);
    second.counter('jobs_started_total', 'Jobs started.', ['job']).inc({ job: 'expiry' });
    const [a, b] = [await first.render(), await second.render()];
    expect(a).to.include('http_requests_total{method="GET",route="/only-first",status="200"} 1\n');
    expect(b).not.to.include('/only-first');
    expect(b).to.include('jobs_started_total{job="expiry"} 1\n');
    expect(a).not.to.include('jobs_started_total');
    expect(first.contentType).to.equal('text/plain; version=0.0.4; charset=utf-8');
  });

  it('declares a counter where it is used: the same name gives the same counter, another type is refused', async () => {
    const metrics = new Metrics();
    metrics.counter('leases_total', 'Leases taken.', ['projection']).inc({ projection: 'a' });
    metrics.counter('leases_total', 'Leases taken.', ['projection']).inc({ projection: 'a' }, 2);
    metrics.counter('plain_total', 'No labels.').inc();
    const text = await metrics.render();
    expect(text).to.include('leases_total{projection="a"} 3\n');
    expect(text).to.include('plain_total 1\n');
    expect(() => metrics.gauge('leases_total', 'x')).to.throw(/counter/);
    expect(() => metrics.counter('projection_lag_events', 'x')).to.throw(/gauge/);
    expect(() => metrics.counter('process_cpu_seconds_total', 'x')).to.throw(/clashes/);
    expect(() => metrics.counter('nodejs_gc_duration_seconds_sum', 'x')).to.throw(/clashes/);
  });

  it(`folds label sets beyond ${MAX_LABEL_SETS_PER_METRIC} per metric into route="__other__"`, async () => {
    const metrics = new Metrics();
    for (let i = 0; i < MAX_LABEL_SETS_PER_METRIC; i++) metrics.observeRequest('GET', `/r${i}`, 200, 0.001);
    // Past the cap: new routes fold into one series per method and status; known routes still count.
    for (let i = 0; i < 500; i++) metrics.observeRequest('GET', `/extra${i}`, 200, 0.001);
    metrics.observeRequest('GET', '/extra-failing', 500, 0.001);
    metrics.observeRequest('GET', '/r7', 200, 0.001);
    const text = await metrics.render();

    const counterLines = samples(text, 'http_requests_total{');
    expect(counterLines).to.have.length(MAX_LABEL_SETS_PER_METRIC + 2);
    expect(text).to.include('http_requests_total{method="GET",route="__other__",status="200"} 500\n');
    expect(text).to.include('http_requests_total{method="GET",route="__other__",status="500"} 1\n');
    expect(text).to.include('http_requests_total{method="GET",route="/r7",status="200"} 2\n');
    expect(text).not.to.include('/extra');
    expect(text).to.include('http_request_duration_seconds_count{method="GET",route="__other__",status="200"} 500\n');

    // Gauges without a route label fold into a single route="__other__" series.
    for (let i = 0; i <= MAX_LABEL_SETS_PER_METRIC; i++) metrics.setProjectionLag(`p${i}`, i, 0);
    const folded = await metrics.render();
    expect(samples(folded, 'projection_lag_events{')).to.have.length(MAX_LABEL_SETS_PER_METRIC + 1);
    expect(folded).to.include(`projection_lag_events{route="__other__"} ${MAX_LABEL_SETS_PER_METRIC}\n`);
  });
});

describe('metricsMiddleware', () => {
  let server: Server;
  let baseUrl: string;
  const metrics = new Metrics();

  before(async () => {
    const app = express();
    app.use(metricsMiddleware(metrics));
    app.get('/things/:id', (req, res) => {
      res.json({ id: req.params.id });
    });
    const router = express.Router();
    router.post('/items/:itemId', (_req, res) => {
      res.status(201).end();
    });
    app.use('/nested', router);
    app.get('/metrics', async (_req, res) => {
      res.type(metrics.contentType).send(await metrics.render());
    });
    server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  });

  /** Responses can reach the client just before the server's 'finish' event, so wait for the count. */
  async function waitForCount(line: string, count: number): Promise<void> {
    await until(async () => (await metrics.render()).includes(`${line} ${count}\n`), { what: `${line} ${count}` });
  }

  it('labels requests with the matched route pattern, or "unmatched"', async () => {
    for (const id of ['1', '2', 'abc']) {
      const res = await fetch(`${baseUrl}/things/${id}`);
      expect(res.status).to.equal(200);
      await res.arrayBuffer();
    }
    for (const path of ['/nope', '/nope/again']) {
      const res = await fetch(`${baseUrl}${path}`);
      expect(res.status).to.equal(404);
      await res.arrayBuffer();
    }
    const nested = await fetch(`${baseUrl}/nested/items/42`, { method: 'POST' });
    expect(nested.status).to.equal(201);
    await nested.arrayBuffer();

    await waitForCount('http_requests_total{method="GET",route="/things/:id",status="200"}', 3);
    await waitForCount('http_requests_total{method="GET",route="unmatched",status="404"}', 2);
    await waitForCount('http_requests_total{method="POST",route="/nested/items/:itemId",status="201"}', 1);

    const text = await metrics.render();
    expect(text).to.include(
      'http_request_duration_seconds_count{method="GET",route="/things/:id",status="200"} 3\n',
    );
    expect(text).to.include(
      'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="unmatched",status="404"} 2\n',
    );
    expect(text).not.to.match(/route="\/things\/(1|2|abc)"/);
    expect(text).not.to.include('/nope');
  });

  it('serves the rendered text with the exposition content type', async () => {
    const res = await fetch(`${baseUrl}/metrics`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4; charset=utf-8$/);
    expect(await res.text()).to.include('# TYPE http_requests_total counter\n');
  });
});
