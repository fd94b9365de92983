/**
 * What the checkout commands, jobs, records and hosted pages read of the read models
 * (projections/checkout.queries.ts implements it; the composition root wires it into `Platform.reads`). A
 * session's and a link's own facts are decided on their streams; these are the lookups a session's terms are
 * checked against and the jobs' work queues.
 */
import type { AccountStatus } from '../accounts/events.ts';
import type { DueWindow } from '../payments/ports.ts';
import type { CurrencyConfig, SessionItem, SessionStatus } from './events.ts';

/** What a session and a link show alike: what they sell and to whom. */
export interface TermsView {
  client_id: string;
  checkout_token: string;
  currency: string;
  pre_tax_amount: string;
  total_amount: string;
  items: SessionItem[];
  payment_methods_allowed: string[];
  destinations: Array<Record<string, unknown>>;
  owner: Record<string, unknown>;
  customer: Record<string, unknown> | null;
  customer_requirements: string[];
  success_url: string | null;
  failed_url: string | null;
  redirect_url: string | null;
  duration: number;
  created_at: Date;
  updated_at: Date;
  test_clock_id: string | null;
}

/** A checkout session as its answers and its hosted page show it: the checkout read model's row. */
export interface CheckoutSessionView extends TermsView {
  session_id: string;
  payment_link_id: string | null;
  status: SessionStatus;
  payment_configs: CurrencyConfig[];
  payment_id: string | null;
  expires_at: Date;
}

/** A payment link as its answers and its hosted page show it. */
export interface PaymentLinkView extends TermsView {
  link_id: string;
  active_until: Date;
  deleted: boolean;
}

/** One of the client's accounts, found by its number: what a session pays into. */
export interface CreditedAccount {
  identity_id: string;
  account_number: string;
  currency: string;
  status: AccountStatus;
}

export interface CheckoutReads {
  /**
   * For a session's or link's terms: whether the client has the owner identity, and its account of this number
   * (null when it has none, or no number is given). Lookups batched across creates.
   */
  ownerAndAccount(query: { clientId: string; identityId: string; accountNumber: string | null }): Promise<{ owner: boolean; account: CreditedAccount | null }>;
  /** The client's account of this number, or undefined when it has none. */
  account(clientId: string, accountNumber: string): Promise<CreditedAccount | undefined>;
  /** Open sessions (ATTEMPT, ACTIVE) whose expiresAt is due by `until`, soonest first, at most `limit`. */
  expiring(window: DueWindow, limit: number): Promise<Array<{ sessionId: string; clientId: string; expiresAt: Date }>>;
  /**
   * Sessions reserved for a payment (PROCESSING_PAYMENT) since `cutoff` or before, whose payment the payments read
   * model does not have, oldest reservation first, at most `limit`.
   */
  stalledReservations(cutoff: Date, limit: number): Promise<Array<{ sessionId: string; clientId: string; paymentId: string | null }>>;
}
