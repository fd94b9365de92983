/** Events of an internal account. Stream: `account-<accountId>`. */
import type { UpdateAccount } from '../../schemas/accounts.ts';
import type { AccountAdjustedData } from '../ledger/events.ts';

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
  | { type: 'AccountClosed'; data: { accountId: string; closedAt: string } };

export const accountStream = (accountId: string) => `account-${accountId}`;
/** Reservation of an account number: appended once with no_stream, never released, so never reused. */
export const accountNumberStream = (accountNumber: string) => `account-number-${accountNumber}`;
