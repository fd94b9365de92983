import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../src/db/database.ts';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { startService, call } from './service.ts';
import { provisionMerchant } from './dataset.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { providerSignature } from '../src/payments/routes.ts';
const log: string[] = [];
let on = false;
const proto = pg.Client.prototype as any; const orig = proto.query;
proto.query = function (...args: any[]) { if (on) { const t = typeof args[0] === 'string' ? args[0] : args[0]?.text; log.push(`${(performance.now() - t0).toFixed(1).padStart(7)} ${String(t).replace(/\s+/g, ' ').slice(0, 150)}`); } return orig.apply(this, args); };
let t0 = 0;
const url = process.env.DATABASE_URL!;
const schema = `tr_${randomBytes(3).toString('hex')}`;
const database = await openDatabase({ kind: 'postgres', connectionString: url, poolSize: 16 }, { schema });
const service = await startService(database);
const which = process.argv[2] ?? 'payment';
try {
  const m = await provisionMerchant(service.baseUrl);
  const secret = service.services.config.providerSecret;
  const parent = await call(service.baseUrl, 'POST', '/payments', m.headers, { externalId: `p-${randomUUID()}`, identityId: m.identityId, type: 'PURCHASE', accountNumber: m.accounts[0]!.accountNumber, totalAmount: '999.00', currency: 'USD' });
  await call(service.baseUrl, 'POST', '/payments/received', { 'user-agent': 'provider' }, { transactionId: parent.id, signature: providerSignature(secret, parent.id) });
  const dep = (i: number) => { const body = { clientId: m.clientId, depositId: `d-${randomUUID()}`, reference: `unknown-${i}`, amount: '10.00', currency: 'USD' as const, originator: { firstName: 'Ana', documentType: 'DNI' as const, documentNumber: `doc-1` } }; return call(service.baseUrl, 'POST', '/payments/deposits', { 'user-agent': 'provider' }, { ...body, signature: depositSignature(secret, body) }); };
  const act = (i: number) => which === 'payment' ? call(service.baseUrl, 'POST', '/payments', { ...m.headers, 'idempotency-key': randomUUID() }, { externalId: `x-${randomUUID()}`, identityId: m.identityId, type: 'PURCHASE', accountNumber: m.accounts[0]!.accountNumber, totalAmount: '10.00', currency: 'USD' })
    : which === 'deposit' ? dep(i) : call(service.baseUrl, 'POST', `/payments/${parent.id}/refund`, { ...m.headers, 'idempotency-key': randomUUID() }, { amount: '0.01' });
  await act(0); await act(1);
  await new Promise((r) => setTimeout(r, 300));
  on = true; t0 = performance.now();
  await act(2);
  log.push(`${(performance.now() - t0).toFixed(1).padStart(7)} ---- answered`);
  await new Promise((r) => setTimeout(r, 300));
  on = false;
  console.log(log.join('\n'));
} finally { await service.close(); await database.close(); await dropSchemaAndProjections(url, schema); }
process.exit(0);
