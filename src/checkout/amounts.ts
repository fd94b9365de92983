/**
 * What a session or link costs, computed from its items (DESIGN section 13): each item's tax is FIXED (an
 * amount at the currency's scale) or PERCENTAGE (of its preTaxAmount, rounded half-up at the currency's scale,
 * the only rounding here); an item's totalAmount is preTaxAmount + tax.amount; the session's amounts are the
 * sums. Amounts a client sends alongside (an item's totalAmount or tax.amount, the session's totals) must equal
 * the computed ones: a disagreement is a 400 naming the field. Then the payment configs: per currency the payer
 * may pay in, the product, the catalog's rate, and per allowed method what the payer pays.
 */
import type { Catalog } from '../catalog/catalog.ts';
import { domainInvalid } from '../domain/errors.ts';
import { AmountError, applyRate, formatAmount, parseAmount, percentOf, toDecimal, zeroAmount, type Decimal } from '../domain/money.ts';
import type { CurrencyConfig, SessionItem } from './events.ts';

export interface ItemInput {
  description: string;
  preTaxAmount: string;
  totalAmount?: string;
  tax?: { name: string; type: 'FIXED' | 'PERCENTAGE'; value: string; amount?: string } | null;
}

export interface Totals {
  items: SessionItem[];
  preTaxAmount: string;
  totalAmount: string;
}

function parsed(field: string, text: string, currency: string, positive = false): Decimal {
  try {
    return parseAmount(text, currency, { positive });
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`${field}: ${error.message}`);
    throw error;
  }
}

function agrees(field: string, sent: string | undefined, computed: string, currency: string): void {
  if (sent === undefined) return;
  if (!parsed(field, sent, currency).equals(toDecimal(computed))) {
    throw domainInvalid(`${field}: ${sent} disagrees with the items, which come to ${computed} ${currency}`);
  }
}

/** The tax of one item at the currency's scale: FIXED as sent, PERCENTAGE half-up. */
export function taxAmount(preTaxAmount: string, tax: { type: 'FIXED' | 'PERCENTAGE'; value: string }, currency: string, field = 'tax'): string {
  if (tax.type === 'FIXED') return formatAmount(parsed(`${field}.value`, tax.value, currency), currency);
  // A percentage is a plain decimal (any number of decimals), whatever the currency's scale.
  const percent = toDecimal(tax.value);
  return formatAmount(percentOf(preTaxAmount, percent, currency), currency);
}

export function computeTotals(items: readonly ItemInput[], currency: string, sent: { preTaxAmount?: string; totalAmount?: string }): Totals {
  let preTax = toDecimal(zeroAmount(currency));
  let total = toDecimal(zeroAmount(currency));
  const computed = items.map((item, n): SessionItem => {
    const at = `items[${n}]`;
    const preTaxAmount = formatAmount(parsed(`${at}.preTaxAmount`, item.preTaxAmount, currency), currency);
    let tax: SessionItem['tax'] = null;
    if (item.tax) {
      const amount = taxAmount(preTaxAmount, item.tax, currency, `${at}.tax`);
      agrees(`${at}.tax.amount`, item.tax.amount, amount, currency);
      tax = { name: item.tax.name, type: item.tax.type, value: item.tax.value, amount };
    }
    const totalAmount = formatAmount(toDecimal(preTaxAmount).plus(toDecimal(tax?.amount ?? '0')), currency);
    agrees(`${at}.totalAmount`, item.totalAmount, totalAmount, currency);
    preTax = preTax.plus(toDecimal(preTaxAmount));
    total = total.plus(toDecimal(totalAmount));
    return { description: item.description, preTaxAmount, totalAmount, tax };
  });
  const totals = { items: computed, preTaxAmount: formatAmount(preTax, currency), totalAmount: formatAmount(total, currency) };
  agrees('preTaxAmount', sent.preTaxAmount, totals.preTaxAmount, currency);
  agrees('totalAmount', sent.totalAmount, totals.totalAmount, currency);
  if (!total.greaterThan(0)) throw domainInvalid('items: the total must be greater than zero');
  return totals;
}

/** The catalog's pay-in methods among `allowed`; a method that cannot pay in is refused, naming it. */
export function checkAllowedMethods(catalog: Catalog, allowed: readonly string[]): void {
  allowed.forEach((type, n) => {
    const node = catalog.nodeType(type);
    if (!node) throw domainInvalid(`paymentMethodsAllowed[${n}]: unknown node type ${type}`);
    if (!node.directions.includes('PAY_IN')) throw domainInvalid(`paymentMethodsAllowed[${n}]: ${type} is pay-out only; a payer cannot pay with it`);
  });
}

/**
 * Per currency the payer may pay in: the session's own (`CUR:CUR`, rate 1) first, then each currency the catalog
 * prices from it (`CUR:OTHER`) that one of the allowed methods moves. A method is enabled when it moves the
 * currency and the amount is within its limits there.
 */
export function paymentConfigsFor(catalog: Catalog, currency: string, totalAmount: string, allowed: readonly string[]): CurrencyConfig[] {
  const currencies = [currency, ...Object.keys(catalog.fxRates)
    .filter((product) => product.startsWith(`${currency}:`)).map((product) => product.split(':')[1]!)
    .filter((other) => other !== currency && allowed.some((type) => (catalog.nodeType(type)?.currencies as readonly string[] | undefined)?.includes(other)))];
  return currencies.map((target) => {
    const rate = target === currency ? '1' : catalog.rate(`${currency}:${target}`)!;
    const purchaseAmount = target === currency ? totalAmount : formatAmount(applyRate(totalAmount, rate, target), target);
    const amount = toDecimal(purchaseAmount);
    return {
      currency: target, product: `${currency}:${target}`, exchangeRate: rate,
      paymentMethods: allowed.map((type) => {
        const node = catalog.nodeType(type)!;
        const moves = (node.currencies as readonly string[]).includes(target);
        const min = node.minAmount[target as keyof typeof node.minAmount];
        const max = node.maxAmount[target as keyof typeof node.maxAmount];
        const enabled = moves && min !== undefined && max !== undefined && amount.greaterThanOrEqualTo(toDecimal(min))
          && amount.lessThanOrEqualTo(toDecimal(max)) && amount.greaterThan(0);
        return { id: `${type.toLowerCase()}-${target.toLowerCase()}`, type, enabled, requiredFields: [...node.requiredFields], purchaseAmount };
      }),
    };
  });
}

/**
 * Refuses a session (or link) that no payer could pay: none of `allowed` is enabled in any of its paymentConfigs
 * (the method moves none of those currencies, or the amount is outside its limits in each), naming
 * paymentMethodsAllowed and why for each method. Answers the configs otherwise.
 */
export function payableConfigs(catalog: Catalog, currency: string, totalAmount: string, allowed: readonly string[]): CurrencyConfig[] {
  const configs = paymentConfigsFor(catalog, currency, totalAmount, allowed);
  if (configs.some((config) => config.paymentMethods.some((method) => method.enabled))) return configs;
  const reasons = allowed.map((type) => {
    const node = catalog.nodeType(type)!;
    const moved = configs.find((config) => (node.currencies as readonly string[]).includes(config.currency));
    if (!moved) return `${type} moves ${node.currencies.join(', ')}`;
    const min = node.minAmount[moved.currency as keyof typeof node.minAmount];
    const max = node.maxAmount[moved.currency as keyof typeof node.maxAmount];
    return `${type} takes ${min} to ${max} ${moved.currency}, the session comes to ${moved.paymentMethods[0]!.purchaseAmount} ${moved.currency}`;
  });
  throw domainInvalid(`paymentMethodsAllowed: no method of the list is available for a session of ${totalAmount} ${currency}, `
    + `so no payer could pay it (${reasons.join('; ')})`);
}
