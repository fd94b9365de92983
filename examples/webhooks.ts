/**
 * Webhooks with the Standard Webhooks library (`npm install standardwebhooks`): a receiver in this process checks
 * each delivery with it, an endpoint is registered for it, a signed ping is asked for, and a payment's deliveries
 * arrive; the delivery log and the events feed show the same events.
 *
 *   OPERATOR_API_KEY=change-me npx tsx examples/webhooks.ts
 */
import { createServer } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { createLedgerClient, ok } from '../clients/typescript/src/index.ts';

const baseUrl = process.env.BASE_URL ?? 'http://localhost:3000';
const operatorKey = process.env.OPERATOR_API_KEY ?? 'change-me';
const created = await fetch(`${baseUrl}/operator/clients`, {
  method: 'POST', headers: { 'x-operator-key': operatorKey, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'Webhooks Shop' }),
});
if (!created.ok) throw new Error(`POST /operator/clients: ${created.status} ${await created.text()}`);
const credentials = await created.json() as { clientId: string; clientSecret: string; apiKey: string };
const ledger = createLedgerClient({ baseUrl, ...credentials, userAgent: 'webhooks-example/1.0' });

// The receiver: verified deliveries are kept by event type; anything else gets 400.
const verified: Array<{ eventType: string; transaction?: { id: string; status: string } }> = [];
let signingKey: Webhook | null = null;
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    try {
      // Throws unless webhook-signature matches webhook-id, webhook-timestamp (within 5 minutes) and the raw body.
      verified.push(signingKey!.verify(Buffer.concat(chunks).toString('utf8'), request.headers as Record<string, string>) as typeof verified[number]);
      response.writeHead(204).end();
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      response.writeHead(400).end();
    }
  });
});
await new Promise<void>((resolve) => receiver.listen(Number(process.env.RECEIVER_PORT ?? 4000), '127.0.0.1', resolve));
const { port } = receiver.address() as { port: number };

// No secretKey sent: the service generates one in the Standard Webhooks form (whsec_…), answered only here.
const endpoint = await ok(ledger.POST('/webhooks', { body: { url: `http://127.0.0.1:${port}/hooks`, description: 'example receiver' } }));
signingKey = new Webhook(endpoint.secretKey!);
await ok(ledger.POST('/webhooks/{id}/test', { params: { path: { id: endpoint.id } } }));

const shop = await ok(ledger.POST('/identities', { body: { type: 'ORGANIZATION', name: 'Webhooks Shop LLC', country: 'USA' } }));
const account = await ok(ledger.POST('/accounts', { body: { identityId: shop.id, type: 'CHECKING', currency: 'USD' } }));
const payment = await ok(ledger.POST('/payments', { body: {
  externalId: 'webhooks-order-1', identityId: shop.id, accountNumber: account.accountNumber, totalAmount: '25.00',
  currency: 'USD', type: 'PURCHASE',
  origins: [{ type: 'CARD', card: { number: '4111111111111111', holder: 'Ana Silva', expiryMonth: '12', expiryYear: '2030', cvv: '123' } }],
} }));

// At most 2 minutes: the settlement batch runs each minute by default.
const settled = () => verified.some((d) => d.eventType === 'payment.settled' && d.transaction?.id === payment.id);
for (let waited = 0; !settled() && waited < 240; waited++) await new Promise((resolve) => setTimeout(resolve, 500));
receiver.close();
console.log('verified:', verified.map((d) => d.eventType + (d.transaction ? ` ${d.transaction.status}` : '')).join(', '));
if (!settled()) process.exit(1);

const deliveries = await ok(ledger.GET('/webhooks/{id}/deliveries', { params: { path: { id: endpoint.id }, query: { status: 'DELIVERED' } } }));
console.log(`delivery log: ${deliveries.results.length} delivered`);
const feed = await ok(ledger.GET('/events', { params: { query: { type: 'payment.settled' } } }));
console.log(`events feed: ${feed.results.map((e) => `${e.eventType} ${e.occurredAt}`).join(', ')}; next cursor ${feed.next}`);
