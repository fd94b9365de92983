/**
 * What the attempts context reads of its read model (projections/attempts.queries.ts implements it; the
 * composition root wires it into `Platform.reads`). An attempt is decided on its own stream; its answer is the
 * row the read model will hold.
 */
import type { PaymentExchange, PaymentFee, SettlementPeriod } from '../payments/events.ts';
import type { PaymentAttemptCreatedData, StoredAttemptNode } from './events.ts';

/** An attempt as its answers show it: the attempts read model's row. */
export interface AttemptView {
  attempt_id: string;
  client_id: string;
  external_id: string | null;
  identity_id: string;
  identity_external_id: string | null;
  account_id: string;
  account_number: string;
  total_amount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  purchase_amount: string | null;
  purchase_currency: string | null;
  exchange: PaymentExchange | null;
  origins: StoredAttemptNode[];
  destinations: StoredAttemptNode[];
  fees: PaymentFee[];
  fee_amount: string;
  method: string | null;
  settlement: SettlementPeriod;
  customer_id: string | null;
  created_at: Date;
}

export interface AttemptReads {
  /** The attempt as the read model will show it once it has its creation. */
  viewOf(created: PaymentAttemptCreatedData): AttemptView;
}
