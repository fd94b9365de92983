// ad-hoc: sequential latency of a few write routes (not committed)
import { randomBytes, randomUUID } from 'node:crypto';
import { openDatabase } from '../src/db/database.ts';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { startService, call } from './service.ts';
import { provisionMerchant } from './dataset.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { installDatabaseCounters, databaseCounts, countsSince } from './pgCounters.ts';
installDatabaseCounters();
const url = process.env.DATABASE_URL!;
const schema = `lat_${randomBytes(3).toString('hex')}`;
const database = await openDatabase({ kind: 'postgres', connectionString: url, poolSize: 16 }, { schema });
const service = await startService(database);
try {
  const m = await provisionMerchant(service.baseUrl);
  const secret = service.services.config.providerSecret;
  const time = async (label: string, n: number, f: (i: number) => Promise<unknown>) => {
    await f(-1);
    const ts: number[] = [];
    const before = databaseCounts();
    for (let i = 0; i < n; i++) { const t = performance.now(); await f(i); ts.push(performance.now() - t); }
    const used = countsSince(before);
    ts.sort((a, b) => a - b);
    console.log(`${label}: p50 ${ts[Math.floor(n / 2)]!.toFixed(1)} ms, max ${ts[n - 1]!.toFixed(1)} ms, ${(used.queries / n).toFixed(1)} statements, ${(used.commits / n).toFixed(1)} commits per request (incl. background)`);
  };
  await time('POST /payments', 20, (i) => call(service.baseUrl, 'POST', '/payments', m.headers, { externalId: `x-${randomUUID()}`, identityId: m.identityId, type: 'PURCHASE', accountNumber: m.accounts[0]!.accountNumber, totalAmount: '10.00', currency: 'USD' }));
  await time('POST /payments/deposits unmatched', 20, (i) => {
    const body = { clientId: m.clientId, depositId: `d-${randomUUID()}`, reference: `unknown-${i}`, amount: '10.00', currency: 'USD' as const, originator: { firstName: 'Ana', documentType: 'DNI' as const, documentNumber: `doc-${i % 3}` } };
    return call(service.baseUrl, 'POST', '/payments/deposits', { 'user-agent': 'provider' }, { ...body, signature: depositSignature(secret, body) });
  });
  const parent = await call(service.baseUrl, 'POST', '/payments', m.headers, { externalId: `p-${randomUUID()}`, identityId: m.identityId, type: 'PURCHASE', accountNumber: m.accounts[0]!.accountNumber, totalAmount: '999.00', currency: 'USD' });
  await call(service.baseUrl, 'POST', '/payments/received', { 'user-agent': 'provider' }, { transactionId: parent.id, signature: providerSignature(secret, parent.id) });
  await time('POST /payments/:id/refund', 20, () => call(service.baseUrl, 'POST', `/payments/${parent.id}/refund`, m.headers, { amount: '0.01' }));
  const start = databaseCounts(); const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 5000));
  const idle = countsSince(start);
  console.log(`idle: ${(idle.queries / ((performance.now() - t0) / 1000)).toFixed(1)} statements/s, ${(idle.commits / 5).toFixed(1)} commits/s`);
} finally {
  await service.close();
  await database.close();
  await dropSchemaAndProjections(url, schema);
}
process.exit(0);
