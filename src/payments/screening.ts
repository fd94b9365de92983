/**
 * Who reviews a payment before it runs (README, "Payments"): the payer's operation level against the payment's
 * USD-equivalent amount. INACTIVE payers are refused at once; BASIC payers (and payments without a customer)
 * are reviewed from the BASIC threshold, STANDARD from the STANDARD threshold, FULL never.
 */
import type { Catalog } from '../catalog/catalog.ts';
import type { OperationLevel } from '../customers/events.ts';
import { toDecimal, type Decimal } from '../domain/money.ts';
import type { Screening } from './decider.ts';

export interface ReviewThresholds {
  basicUsd: string;
  standardUsd: string;
}

/** The amount in USD at the catalog's rate, or null when the catalog has no way to price it. */
export function usdEquivalent(catalog: Catalog, amount: string, currency: string): Decimal | null {
  if (currency === 'USD') return toDecimal(amount);
  const rate = catalog.rate(`${currency}:USD`) ?? catalog.rate(`${currency}:USDC`);
  if (rate !== undefined) return toDecimal(amount).times(toDecimal(rate));
  const inverse = catalog.rate(`USD:${currency}`);
  return inverse !== undefined ? toDecimal(amount).dividedBy(toDecimal(inverse)) : null;
}

export function screenPayment(input: {
  catalog: Catalog; thresholds: ReviewThresholds; operationLevel: OperationLevel; totalAmount: string; currency: string;
  providerReview: string | null;
}): Screening {
  const { operationLevel } = input;
  if (operationLevel === 'INACTIVE') return { outcome: 'BLOCK', reason: 'CUSTOMER_INACTIVE' };
  if (input.providerReview) return { outcome: 'REVIEW', reason: input.providerReview };
  if (operationLevel === 'FULL') return { outcome: 'CLEAR' };
  const usd = usdEquivalent(input.catalog, input.totalAmount, input.currency);
  // Unpriceable amounts are reviewed rather than waved through.
  if (usd === null) return { outcome: 'REVIEW', reason: 'NO_USD_RATE' };
  const threshold = operationLevel === 'STANDARD' ? input.thresholds.standardUsd : input.thresholds.basicUsd;
  return usd.greaterThanOrEqualTo(toDecimal(threshold))
    ? { outcome: 'REVIEW', reason: `AMOUNT_ABOVE_${operationLevel}_THRESHOLD` }
    : { outcome: 'CLEAR' };
}
