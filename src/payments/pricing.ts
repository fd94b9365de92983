/**
 * What a payment costs and what the payer pays: the pay-in method's catalog fee, and the exchange when the
 * payer pays in another currency. Rates and percentages round half-up at the result currency's scale (the only
 * place amounts are rounded); everything a caller sends is parsed exactly.
 */
import type { Catalog, CatalogNodeType } from '../catalog/catalog.ts';
import { domainInvalid } from '../domain/errors.ts';
import { applyRate, formatAmount, parseAmount, percentOf, toDecimal, zeroAmount } from '../domain/money.ts';
import type { PaymentExchange, PaymentFee } from './events.ts';

/** The method's fee on `totalAmount`, in the payment's currency. A fixed fee in another currency is converted. */
export function feesFor(catalog: Catalog, method: CatalogNodeType | undefined, totalAmount: string, currency: string): PaymentFee[] {
  if (!method) return [];
  const { fee } = method;
  let amount: string;
  if (fee.type === 'PERCENTAGE') {
    amount = formatAmount(percentOf(totalAmount, fee.value, currency), currency);
  } else if (!fee.currency || fee.currency === currency) {
    amount = formatAmount(parseAmount(fee.value, currency), currency);
  } else {
    const rate = catalog.rate(`${fee.currency}:${currency}`);
    if (rate === undefined) throw domainInvalid(`currency: the ${method.type} fee is charged in ${fee.currency}, which the catalog cannot convert to ${currency}`);
    amount = formatAmount(applyRate(fee.value, rate, currency), currency);
  }
  if (toDecimal(amount).isZero()) return [];
  return [{ name: `${method.type} fee`, type: fee.type, value: fee.value, amount, currency }];
}

export function totalFee(fees: readonly PaymentFee[], currency: string): string {
  return formatAmount(fees.reduce((sum, fee) => sum.plus(toDecimal(fee.amount)), toDecimal(zeroAmount(currency))), currency);
}

/** How many `to` one `from` buys: the catalog product `from:to`, or the inverse of `to:from`. */
export function rateBetween(catalog: Catalog, from: string, to: string): { product: string; rate: string } | null {
  const direct = catalog.rate(`${from}:${to}`);
  if (direct !== undefined) return { product: `${from}:${to}`, rate: direct };
  const inverse = catalog.rate(`${to}:${from}`);
  if (inverse === undefined || toDecimal(inverse).isZero()) return null;
  return { product: `${to}:${from}`, rate: toDecimal('1').dividedBy(toDecimal(inverse)).toDecimalPlaces(12).toString() };
}

export interface Purchase {
  purchaseAmount: string | null;
  purchaseCurrency: string | null;
  exchange: PaymentExchange | null;
}

/**
 * The payer's side. Without `purchaseCurrency` (or with the payment's own currency) there is no exchange.
 * Otherwise the catalog must price the pair; `purchaseAmount` is the merchant's quote, or the market value.
 */
export function purchaseFor(input: {
  catalog: Catalog; totalAmount: string; currency: string; purchaseAmount?: string; purchaseCurrency?: string;
  now: Date; quoteTtlSeconds: number;
}): Purchase {
  const { catalog, totalAmount, currency, purchaseCurrency } = input;
  if (input.purchaseAmount !== undefined && purchaseCurrency === undefined) {
    throw domainInvalid('purchaseCurrency: required with purchaseAmount');
  }
  if (purchaseCurrency === undefined || purchaseCurrency === currency) {
    if (input.purchaseAmount !== undefined && !parseAmount(input.purchaseAmount, currency).equals(toDecimal(totalAmount))) {
      throw domainInvalid(`purchaseAmount: in the payment’s own currency it must equal totalAmount ${totalAmount}`);
    }
    return { purchaseAmount: purchaseCurrency ? totalAmount : null, purchaseCurrency: purchaseCurrency ?? null, exchange: null };
  }
  const priced = rateBetween(catalog, currency, purchaseCurrency);
  if (!priced) throw domainInvalid(`purchaseCurrency: the catalog has no rate between ${currency} and ${purchaseCurrency}`);
  const marketValue = formatAmount(applyRate(totalAmount, priced.rate, purchaseCurrency), purchaseCurrency);
  let purchaseAmount = marketValue;
  if (input.purchaseAmount !== undefined) {
    const quoted = parseAmount(input.purchaseAmount, purchaseCurrency, { positive: true });
    purchaseAmount = formatAmount(quoted, purchaseCurrency);
  }
  if (toDecimal(purchaseAmount).isZero()) {
    throw domainInvalid(`totalAmount: ${totalAmount} ${currency} is worth less than the smallest ${purchaseCurrency} amount`);
  }
  const quotedAt = input.now.toISOString();
  return {
    purchaseAmount, purchaseCurrency,
    exchange: {
      product: priced.product, rate: priced.rate, marketValue, quotedAt,
      quoteExpiresAt: new Date(input.now.getTime() + input.quoteTtlSeconds * 1000).toISOString(),
    },
  };
}
