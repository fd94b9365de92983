/**
 * What the payment commands, jobs and answers read of the read models (projections/payments.queries.ts implements
 * it; the composition root wires it into `Platform.reads`). Facts the payment's own stream owns are read from
 * the stream; these are the lookups a create checks its input against and the jobs' work queues.
 */
import type { PaymentNode } from '../../schemas/paymentNodes.ts';
import type { AccountStatus } from '../accounts/events.ts';
import type { CompanionStatus } from '../deposits/events.ts';
import type { PaymentEvent, PaymentExchange, PaymentFee, PaymentFlow, PaymentStatus, SettlementPeriod } from './events.ts';

/** A payment as its answers show it (the flat record, the detailed shape): the payments read model's row. */
export interface PaymentView {
  payment_id: string;
  client_id: string;
  external_id: string;
  /** Null on a deposit awaiting assignment (as are the account's fields). */
  identity_id: string | null;
  identity_external_id: string | null;
  account_number: string | null;
  total_amount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  /** A payment's status, or a deposit companion's (which may also be CANCELLED). */
  status: PaymentStatus | CompanionStatus;
  purchase_amount: string | null;
  purchase_currency: string | null;
  exchange: PaymentExchange | null;
  origins: PaymentNode[];
  destinations: PaymentNode[];
  fees: PaymentFee[];
  fee_amount: string;
  flow: PaymentFlow;
  settlement: SettlementPeriod;
  customer_id: string | null;
  checkout_session_id: string | null;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  authorized_at: Date | null;
  captured_at: Date | null;
  received_at: Date | null;
  settled_at: Date | null;
  expired_at: Date | null;
  unsettled_at: Date | null;
  unsettled_reason: string | null;
  failed_at: Date | null;
  failure_reason: string | null;
  settlement_batch_id: string | null;
  review_documents: number;
  refunded_at: Date | null;
  reconciliation_status: string | null;
  related_payment_id: string | null;
  parent_payment_id: string | null;
  test_clock_id: string | null;
}

/** What a payment kept on a stream of another kind is (a refund child, a deposit, a companion), as a refusal names it. */
export type PaymentKind = Pick<PaymentView, 'client_id' | 'type' | 'parent_payment_id'>;

/** The identity and the account a create names, both its client's, and the client's review thresholds (USD). */
export interface PayerAndAccount {
  identity: { identity_id: string; email: string | null } | null;
  account: { account_id: string; account_number: string; identity_id: string; currency: string; status: AccountStatus } | null;
  /** The client's own review thresholds (USD), each null where the environment's default applies. */
  thresholds: { review_threshold_basic_usd: string | null; review_threshold_standard_usd: string | null } | null;
}

/** An account an ACCOUNT node names, as the node is checked against it. */
export interface NodeAccount {
  account_number: string;
  currency: string;
  status: AccountStatus;
}

/** Which work a time-driven run takes: the objects of no clock (`clockId` null) or of one clock, due by `until`. */
export interface DueWindow {
  clockId: string | null;
  until: Date;
}

export interface PaymentReads {
  /** The payment as the read model has it, of any client; undefined when it has none. */
  kindOf(paymentId: string): Promise<PaymentKind | undefined>;
  /** For a create: the identity and the account it names, and the client's thresholds (lookups batched across creates). */
  payerAndAccount(query: { clientId: string; identityId: string; accountNumber: string }): Promise<PayerAndAccount>;
  /** The client's accounts of these numbers (those it has). */
  nodeAccounts(clientId: string, accountNumbers: readonly string[]): Promise<NodeAccount[]>;
  /** The payment as the read model will show it once it has these events (its first one a creation). */
  viewOf(events: readonly PaymentEvent[]): PaymentView;
  /**
   * RECEIVED payments awaiting a settlement batch (not INSTANT), at most `limit`: of no clock, oldest receipt
   * first; of a clock, those whose settlement date (receipt + `daysByPeriod`) is due by `until`, soonest first.
   */
  awaitingSettlement(window: DueWindow, daysByPeriod: Readonly<Record<'T+1' | 'T+2', number>>, limit: number):
    Promise<Array<{ paymentId: string; clientId: string; settlesAt: Date }>>;
  /** Payments still payable whose `payable_until` is due by `until`, soonest first, at most `limit`. */
  payableUntilDue(window: DueWindow, limit: number): Promise<Array<{ paymentId: string; clientId: string; payableUntil: Date }>>;
}
