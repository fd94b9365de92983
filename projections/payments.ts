/**
 * Read model of payments: one row per payment with every listing filter and sort as a column, the nodes, fees
 * and exchange as JSON, and one row per review document. Every value comes from the events (timestamps
 * included), so a rebuild gives identical rows.
 */
import { sql, type Kysely } from 'kysely';
import { defineProjector, type EventHandler } from '../src/projection/projector.ts';
import type { PaymentEventData, PaymentEventType, PaymentStatus } from '../src/payments/events.ts';
import type { PaymentFee, PaymentExchange, PaymentFlow, SettlementPeriod } from '../src/payments/events.ts';
import type { PaymentNode } from '../schemas/paymentNodes.ts';

/** Statuses a payment can still expire from (directly, or under review having come from one). */
export const EXPIRABLE_STATUSES: readonly PaymentStatus[] = ['CREATED', 'PENDING', 'AUTHORIZED', 'CAPTURED', 'REQUIRES_REVIEW'];

async function setup(trx: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE payments (
      payment_id           text PRIMARY KEY,
      client_id            text NOT NULL,
      external_id          text NOT NULL,
      identity_id          text NOT NULL,
      identity_external_id text,
      identity_email       text,
      account_id           text NOT NULL,
      account_number       text NOT NULL,
      total_amount         numeric NOT NULL,
      currency             text NOT NULL,
      description          text,
      product              text,
      type                 text NOT NULL,
      status               text NOT NULL,
      resume_status        text,
      purchase_amount      text,
      purchase_currency    text,
      exchange             jsonb,
      origins              jsonb NOT NULL,
      destinations         jsonb NOT NULL,
      fees                 jsonb NOT NULL,
      fee_amount           text NOT NULL,
      flow                 text NOT NULL,
      method               text,
      settlement           text NOT NULL,
      customer_id          text,
      checkout_session_id  text,
      expires_at           timestamptz,
      payable_until        timestamptz,
      created_at           timestamptz NOT NULL,
      updated_at           timestamptz NOT NULL,
      authorized_at        timestamptz,
      captured_at          timestamptz,
      received_at          timestamptz,
      received_amount      text,
      settled_at           timestamptz,
      expired_at           timestamptz,
      unsettled_at         timestamptz,
      unsettled_reason     text,
      failed_at            timestamptz,
      failure_reason       text,
      settlement_batch_id  text,
      review_documents     integer NOT NULL DEFAULT 0,
      UNIQUE (client_id, external_id)
    )`.execute(trx);
  // The default listing order, and each filter followed by that order, so a filtered page is an index range.
  await sql`CREATE INDEX payments_client_created ON payments (client_id, created_at DESC, payment_id DESC)`.execute(trx);
  for (const column of ['status', 'identity_id', 'account_number', 'type']) {
    await sql.raw(`CREATE INDEX payments_client_${column} ON payments (client_id, ${column}, created_at DESC, payment_id DESC)`).execute(trx);
  }
  await sql`CREATE INDEX payments_client_checkout ON payments (client_id, checkout_session_id) WHERE checkout_session_id IS NOT NULL`.execute(trx);
  // The jobs' work queues: received payments waiting for a settlement batch, payable ones waiting to expire.
  await sql`CREATE INDEX payments_awaiting_batch ON payments (received_at) WHERE status = 'RECEIVED' AND settlement <> 'INSTANT'`.execute(trx);
  await sql.raw(`CREATE INDEX payments_payable_until ON payments (payable_until)
    WHERE status IN (${EXPIRABLE_STATUSES.map((s) => `'${s}'`).join(', ')}) AND payable_until IS NOT NULL`).execute(trx);
  await sql`
    CREATE TABLE payment_documents (
      document_id  text PRIMARY KEY,
      payment_id   text NOT NULL,
      client_id    text NOT NULL,
      type         text NOT NULL,
      url          text,
      content_type text,
      created_at   timestamptz NOT NULL
    )`.execute(trx);
  await sql`CREATE INDEX payment_documents_payment ON payment_documents (payment_id, created_at)`.execute(trx);
}

type Data<T extends PaymentEventType> = PaymentEventData<T>;

/** A status change and the timestamp column it stamps. */
function transition<T extends PaymentEventType>(
  stamp: (data: Data<T>) => Record<string, unknown> = () => ({}),
): EventHandler {
  return async (trx, event) => {
    const data = event.data as Data<T>;
    const { paymentId, to, at } = data as unknown as { paymentId: string; to: PaymentStatus; at: string };
    await trx.updateTable('payments')
      .set({ status: to, updated_at: at, ...stamp(data) })
      .where('payment_id', '=', paymentId).execute();
  };
}

export const paymentsProjector = defineProjector({
  name: 'payments',
  version: 1,
  tables: ['payments', 'payment_documents'],
  setup,
  handlers: {
    async PaymentCreated(trx, event) {
      const d = event.data as Data<'PaymentCreated'>;
      const payableUntil = [d.expiresAt, d.exchange?.quoteExpiresAt].filter((t): t is string => !!t)
        .sort((a, b) => Date.parse(a) - Date.parse(b))[0] ?? null;
      await trx.insertInto('payments').values({
        payment_id: d.paymentId, client_id: d.clientId, external_id: d.externalId, identity_id: d.identityId,
        identity_external_id: d.identityExternalId, identity_email: d.identityEmail, account_id: d.accountId,
        account_number: d.accountNumber, total_amount: d.totalAmount, currency: d.currency, description: d.description,
        product: d.product, type: d.type, status: 'CREATED', purchase_amount: d.purchaseAmount,
        purchase_currency: d.purchaseCurrency, exchange: d.exchange ? JSON.stringify(d.exchange) : null,
        origins: JSON.stringify(d.origins), destinations: JSON.stringify(d.destinations), fees: JSON.stringify(d.fees),
        fee_amount: d.feeAmount, flow: d.flow, method: d.method, settlement: d.settlement, customer_id: d.customerId,
        checkout_session_id: d.checkoutSessionId, expires_at: d.expiresAt, payable_until: payableUntil,
        created_at: d.createdAt, updated_at: d.createdAt,
      }).execute();
    },
    PaymentPending: transition(),
    PaymentAuthorized: transition<'PaymentAuthorized'>((d) => ({ authorized_at: d.at })),
    PaymentCaptured: transition<'PaymentCaptured'>((d) => ({ captured_at: d.at })),
    PaymentReceived: transition<'PaymentReceived'>((d) => ({ received_at: d.at, received_amount: d.receivedAmount })),
    PaymentSettled: transition<'PaymentSettled'>((d) => ({ settled_at: d.at, settlement_batch_id: d.settlementBatchId })),
    PaymentUnsettled: transition<'PaymentUnsettled'>((d) => ({
      unsettled_at: d.at, unsettled_reason: d.reason, settlement_batch_id: d.settlementBatchId,
    })),
    PaymentExpired: transition<'PaymentExpired'>((d) => ({ expired_at: d.at })),
    PaymentFailed: transition<'PaymentFailed'>((d) => ({ failed_at: d.at, failure_reason: d.reason })),
    PaymentReviewRequired: transition<'PaymentReviewRequired'>((d) => ({ resume_status: d.from })),
    PaymentReviewApproved: transition<'PaymentReviewApproved'>(() => ({ resume_status: null })),
    PaymentReviewRejected: transition<'PaymentReviewRejected'>((d) => ({
      resume_status: null, failed_at: d.at, failure_reason: 'REVIEW_REJECTED',
    })),
    async PaymentDocumentAttached(trx, event) {
      const d = event.data as Data<'PaymentDocumentAttached'>;
      const payment = await trx.updateTable('payments')
        .set((eb) => ({ review_documents: eb('review_documents', '+', 1), updated_at: d.document.attachedAt }))
        .where('payment_id', '=', d.paymentId).returning('client_id').executeTakeFirstOrThrow();
      await trx.insertInto('payment_documents').values({
        document_id: d.document.documentId, payment_id: d.paymentId, client_id: payment.client_id, type: d.document.type,
        url: d.document.url, content_type: d.document.contentType, created_at: d.document.attachedAt,
      }).execute();
    },
  },
});

export interface PaymentRow {
  payment_id: string;
  client_id: string;
  external_id: string;
  identity_id: string;
  identity_external_id: string | null;
  identity_email: string | null;
  account_id: string;
  account_number: string;
  total_amount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  status: PaymentStatus;
  resume_status: PaymentStatus | null;
  purchase_amount: string | null;
  purchase_currency: string | null;
  exchange: PaymentExchange | null;
  origins: PaymentNode[];
  destinations: PaymentNode[];
  fees: PaymentFee[];
  fee_amount: string;
  flow: PaymentFlow;
  method: string | null;
  settlement: SettlementPeriod;
  customer_id: string | null;
  checkout_session_id: string | null;
  expires_at: Date | null;
  payable_until: Date | null;
  created_at: Date;
  updated_at: Date;
  authorized_at: Date | null;
  captured_at: Date | null;
  received_at: Date | null;
  received_amount: string | null;
  settled_at: Date | null;
  expired_at: Date | null;
  unsettled_at: Date | null;
  unsettled_reason: string | null;
  failed_at: Date | null;
  failure_reason: string | null;
  settlement_batch_id: string | null;
  review_documents: number;
}
