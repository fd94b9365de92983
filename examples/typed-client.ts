/**
 * The walkthrough through the typed client (clients/typescript/): a merchant of its own, an identity and a USD
 * account, a card payment until SETTLED, a refund of part of it, and the statement.
 *
 *   OPERATOR_API_KEY=change-me npx tsx examples/typed-client.ts
 */
import { createLedgerClient, LedgerApiError, ok } from '../clients/typescript/src/index.ts';

const baseUrl = process.env.BASE_URL ?? 'http://localhost:3000';
const operatorKey = process.env.OPERATOR_API_KEY ?? 'change-me';

// A merchant (client) of its own, made by the operator route; the secret and API key are shown only here.
const created = await fetch(`${baseUrl}/operator/clients`, {
  method: 'POST', headers: { 'x-operator-key': operatorKey, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'Typed Client Shop' }),
});
if (!created.ok) throw new Error(`POST /operator/clients: ${created.status} ${await created.text()}`);
const { clientId, clientSecret, apiKey } = await created.json() as { clientId: string; clientSecret: string; apiKey: string };

// Authenticates (and renews its token), puts an Idempotency-Key on every POST, retries 429, 503 and a 409 with Retry-After.
const ledger = createLedgerClient({ baseUrl, clientId, clientSecret, apiKey, userAgent: 'typed-client-example/1.0' });

const identity = await ok(ledger.POST('/identities', { body: { type: 'ORGANIZATION', name: 'Typed Client Shop LLC', country: 'USA' } }));
const account = await ok(ledger.POST('/accounts', { body: { identityId: identity.id, type: 'CHECKING', currency: 'USD' } }));

const payment = await ok(ledger.POST('/payments', { body: {
  externalId: 'typed-order-1', identityId: identity.id, accountNumber: account.accountNumber, totalAmount: '40.00',
  currency: 'USD', type: 'PURCHASE',
  origins: [{ type: 'CARD', card: { number: '4111111111111111', holder: 'Ana Silva', expiryMonth: '12', expiryYear: '2030', cvv: '123' } }],
} }));

// The sandbox plays the card rail; the next settlement batch settles it (each minute by default). At most 2 minutes.
let status = payment.status;
for (let waited = 0; status !== 'SETTLED' && waited < 120; waited++) {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  status = (await ok(ledger.GET('/payments/{id}', { params: { path: { id: payment.id } } }))).status;
}
console.log(`payment ${payment.id}: ${status}`);
if (status !== 'SETTLED') process.exit(1);

const refund = await ok(ledger.POST('/payments/{id}/refund', { params: { path: { id: payment.id } }, body: { amount: '15.00', reason: 'one item damaged' } }));
console.log(`refund ${refund.id}: ${refund.status} ${refund.totalAmount} ${refund.currency}`);

// A refused call is a typed error: the category and the service's message naming what is wrong.
try {
  await ok(ledger.POST('/payments/{id}/refund', { params: { path: { id: payment.id } }, body: { amount: '1000.00' } }));
} catch (error) {
  if (!(error instanceof LedgerApiError)) throw error;
  console.log(`refused: ${error.statusCode} ${error.error}: ${error.message}`);
}

const statement = await ok(ledger.GET('/accounts/{id}/statement', {
  params: { path: { id: account.id }, query: { from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' } },
}));
console.log(`statement: ${statement.openingBalance} → ${statement.closingBalance} ${statement.currency}`);
for (const line of statement.lines) console.log(`  ${line.description}: ${line.amount} (balance ${line.balanceAfter})`);
