/** Events of an internal account. Stream: `account-<accountId>`. */
import type { UpdateAccount } from '../../schemas/accounts.ts';
import type {
  AccountAdjustedData, AccountCreditedData, AccountFundsHeldData, AccountHoldDebitedData, AccountHoldReleasedData,
} from '../ledger/events.ts';

export type AccountStatus = 'PENDING' | 'ACTIVE' | 'BLOCKED';

export interface AccountOpenedData {
  accountId: string;
  clientId: string;
  identityId: string;
  externalId: string | null;
  type: 'CHECKING' | 'ASSET' | 'SAVINGS' | 'ESCROW' | 'FEE';
  custody: 'PLATFORM' | 'PARTNER_BANK' | 'SELF';
  currency: string;
  name: string | null;
  accountNumber: string;
  accountHolder: string | null;
  country: string | null;
  parentId: string | null;
  openedAt: string;
}

export type AccountEvent =
  | { type: 'AccountOpened'; data: AccountOpenedData }
  | { type: 'AccountUpdated'; data: { accountId: string; changes: Omit<UpdateAccount, 'status'>; updatedAt: string } }
  | { type: 'AccountStatusChanged'; data: { accountId: string; from: AccountStatus; to: AccountStatus; changedAt: string } }
  /** An operator's test deposit or correction; the ledger posts it against the currency's adjustments account. */
  | { type: 'AccountAdjusted'; data: AccountAdjustedData }
  /** The account's answer to a settlement of a payment to it: credited... */
  | { type: 'AccountCredited'; data: AccountCreditedData; id?: string }
  /** ...or refused, because the account was not ACTIVE when asked (the payment becomes UNSETTLED). */
  | { type: 'AccountCreditRefused'; data: AccountCreditRefusedData; id?: string }
  | { type: 'AccountFundsHeld'; data: AccountFundsHeldData }
  | { type: 'AccountHoldReleased'; data: AccountHoldReleasedData }
  | { type: 'AccountHoldDebited'; data: AccountHoldDebitedData }
  | { type: 'AccountClosed'; data: { accountId: string; closedAt: string } };

export interface AccountCreditRefusedData {
  accountId: string;
  clientId: string;
  paymentId: string;
  reason: 'ACCOUNT_NOT_ACTIVE';
  /** The account's status when it refused: BLOCKED, PENDING, or CLOSED (deleted). */
  status: AccountStatus | 'CLOSED';
  settlementBatchId: string | null;
  at: string;
}

export const accountStream = (accountId: string) => `account-${accountId}`;
/** Reservation of an account number: appended once with no_stream, never released, so never reused. */
export const accountNumberStream = (accountNumber: string) => `account-number-${accountNumber}`;
