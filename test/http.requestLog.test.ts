import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import express from 'express';
import { createLogger } from '../src/logging.ts';
import { errorHandler } from '../src/http/errors.ts';
import { requestContext } from '../src/http/requestContext.ts';
import { until } from './support/until.ts';

describe('request logging', () => {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger('info', destination);
  let server: Server;
  let baseUrl: string;

  before(async () => {
    const app = express();
    app.use(requestContext(logger));
    app.get('/things/:id', (req, res) => {
      req.caller = { kind: 'client', clientId: 'client-7' };
      req.log.info({
        provisioned: { clientSecret: 'cs-secret', apiKey: 'ak-secret' }, password: 'pw-secret',
        auth: { accessToken: 'at-secret' }, token: 'tk-secret',
      }, 'provisioned');
      res.json({ id: req.params.id });
    });
    app.get('/crash', () => {
      throw new Error('boom');
    });
    app.use(errorHandler(logger));
    server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  });

  /** The log lines of one request, once its closing "request" line has been written. */
  async function linesOf(requestId: string): Promise<Array<Record<string, unknown>>> {
    await until(() => lines.some((l) => l.requestId === requestId && l.msg === 'request'), { what: `request line of ${requestId}` });
    return lines.filter((l) => l.requestId === requestId);
  }

  it('echoes a sane X-Request-Id, replaces an insane one, and logs one line per request in the documented shape', async () => {
    const given = await fetch(`${baseUrl}/things/42?x=1`, {
      headers: { 'x-request-id': 'trace-123', authorization: 'Bearer tok-secret', 'x-api-key': 'key-secret' },
    });
    expect(given.headers.get('x-request-id')).to.equal('trace-123');
    await given.arrayBuffer();

    const request = (await linesOf('trace-123')).find((l) => l.msg === 'request')!;
    expect(Object.keys(request).sort()).to.deep.equal(
      ['caller', 'hostname', 'level', 'method', 'ms', 'msg', 'path', 'pid', 'requestId', 'status', 'time'].sort());
    expect(request).to.include({ method: 'GET', path: '/things/42', status: 200, caller: 'client-7', level: 30 });
    expect(request.ms).to.be.a('number').and.to.be.at.least(0);

    const insane = await fetch(`${baseUrl}/things/1`, { headers: { 'x-request-id': 'no spaces <or> markup' } });
    await insane.arrayBuffer();
    const made = insane.headers.get('x-request-id')!;
    expect(made).to.match(/^[0-9a-f-]{36}$/);
    const anonymous = await fetch(`${baseUrl}/nowhere`);
    await anonymous.arrayBuffer();
    expect((await linesOf(anonymous.headers.get('x-request-id')!)).find((l) => l.msg === 'request'))
      .to.include({ caller: 'anonymous', status: 404 });
  });

  it('carries the request id on the lines a handler writes, with keys, secrets, passwords and tokens redacted', async () => {
    const response = await fetch(`${baseUrl}/things/9`, { headers: { 'x-request-id': 'redaction-1' } });
    await response.arrayBuffer();
    const own = (await linesOf('redaction-1')).find((l) => l.msg === 'provisioned')!;
    expect(own.provisioned).to.deep.equal({ clientSecret: '[redacted]', apiKey: '[redacted]' });
    expect(own).to.deep.include({ password: '[redacted]', token: '[redacted]', auth: { accessToken: '[redacted]' } });
    expect(JSON.stringify(lines)).not.to.match(/cs-secret|ak-secret|pw-secret|at-secret|tk-secret|tok-secret|key-secret/);
  });

  it('logs a failing request\'s error with its request id, and its request line with status 500', async () => {
    const response = await fetch(`${baseUrl}/crash`, { headers: { 'x-request-id': 'crash-1' } });
    expect(response.status).to.equal(500);
    await response.arrayBuffer();
    const own = await linesOf('crash-1');
    expect(own.find((l) => l.msg === 'request failed')?.err).to.include({ message: 'boom' });
    expect(own.find((l) => l.msg === 'request')).to.include({ status: 500, path: '/crash', level: 30 });
  });
});
