/**
 * Two checkouts of the service side by side, from outside: each started as `npm start` runs it (on a new database
 * of the Postgres server at COMPARE_SERVER_URL, default postgres://postgres@127.0.0.1:5432), a merchant made through
 * the API, then autocannon (16 connections) on POST /payments (a push payment, a new externalId and
 * Idempotency-Key each) and one connection on a filtered GET /payments; alternating rounds, so that both see the
 * machine as it is. For comparing a change with the code before it, whatever either's `npm run bench` measures:
 *
 *   git worktree add ../before <commit> && (cd ../before && npm ci)
 *   node bench/compareTrees.mjs before=../before after=. 3
 *
 * COMPARE_SECONDS (default 10) is each measured run. Prints each round and the means; never fails on a slow machine.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import autocannon from 'autocannon';

const trees = process.argv.slice(2, 4).map((a) => { const [label, dir] = a.split('='); return { label, dir: resolve(dir) }; });
const rounds = Number(process.argv[4] ?? 3);
const SERVER = (process.env.COMPARE_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 10);
const psql = (statement) => execFileSync('psql', [`${SERVER}/postgres`, '-qc', statement]);
const results = {};

async function call(base, method, path, headers, body) {
  const r = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body ? JSON.stringify(body) : undefined });
  const json = await r.json().catch(() => null);
  if (!r.ok) throw new Error(`${method} ${path} ${r.status} ${JSON.stringify(json)}`);
  return json;
}

function load(opts) {
  return new Promise((resolve, reject) => autocannon({ connections: 16, ...opts }, (err, res) => (err ? reject(err) : resolve(res))));
}

async function once(tree, round) {
  const db = `cmp_${tree.label}_${round}_${Date.now()}`;
  psql(`create database ${db}`);
  const port = 3900 + round;
  const child = spawn('node', ['scripts/run.mjs', 'main'], {
    cwd: tree.dir, stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DATABASE_URL: `${SERVER}/${db}`, PORT: String(port), OPERATOR_API_KEY: 'cmp-op', LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '1000000', ADDRESS_RATE_LIMIT_PER_SECOND: '1000000', ADDRESS_RATE_LIMIT_BURST: '1000000' },
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      try { const r = await fetch(`${base}/ready`); if (r.ok) break; } catch {}
      if (i > 600) throw new Error('not ready');
      await new Promise((r) => setTimeout(r, 100));
    }
    const cred = await call(base, 'POST', '/operator/clients', { 'x-operator-key': 'cmp-op' }, { name: 'Cmp' });
    const { accessToken } = await call(base, 'POST', '/auth', { 'x-api-key': cred.apiKey }, { clientId: cred.clientId, clientSecret: cred.clientSecret });
    const headers = { 'x-api-key': cred.apiKey, 'user-agent': 'cmp', authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' };
    const identity = await call(base, 'POST', '/identities', headers, { type: 'ORGANIZATION', name: 'Cmp shop', country: 'BRA', email: 'shop@example.com' });
    const account = await call(base, 'POST', '/accounts', headers, { identityId: identity.id, type: 'CHECKING', currency: 'USD' });
    const template = ({ identityId: identity.id, type: 'PURCHASE', accountNumber: account.accountNumber, totalAmount: '100.00', currency: 'USD' });
    const bodyOf = () => JSON.stringify({ ...template, externalId: randomUUID() });
    const body = bodyOf();
    const post = (seconds) => load({
      url: `${base}/payments`, duration: seconds, method: 'POST',
      requests: [{ setupRequest: (req) => ({ ...req, method: 'POST', body: bodyOf(), headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
    });
    const probe = await fetch(`${base}/payments`, { method: 'POST', body, headers: { ...headers, 'idempotency-key': randomUUID() } });
    if (!probe.ok) throw new Error(`probe ${probe.status} ${await probe.text()}`);
    await post(3);
    const p = await post(SECONDS);
    const list = await load({ url: `${base}/payments?status=CREATED&limit=50`, connections: 1, duration: 5, headers });
    const row = {
      post: p.requests.average, postP50: p.latency.p50, postP99: p.latency.p99, post2xx: p['2xx'], postNon2xx: p.non2xx,
      list: list.requests.average, listP99: list.latency.p99,
    };
    (results[tree.label] ??= []).push(row);
    console.log(tree.label, round, JSON.stringify(row), 'load average', execFileSync('cat', ['/proc/loadavg']).toString().split(' ').slice(0, 3).join(' '));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    psql(`drop database ${db}`);
  }
}

for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? trees : [...trees].reverse();
  for (const tree of order) await once(tree, round);
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const { label } of trees) {
  const rows = results[label];
  console.log(label, 'POST /payments req/s', mean(rows.map((r) => r.post)).toFixed(0), 'p99', mean(rows.map((r) => r.postP99)).toFixed(0),
    '| GET /payments?status req/s (1 conn)', mean(rows.map((r) => r.list)).toFixed(0), 'p99', mean(rows.map((r) => r.listP99)).toFixed(1));
}
