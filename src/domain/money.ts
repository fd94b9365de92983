/**
 * Exact decimal money. Amounts travel as decimal strings and are computed with decimal.js, never with JS
 * numbers. Each currency has a scale (the decimals it allows):
 * - `parseAmount` reads what a caller sends and refuses more decimals than the scale allows (an
 *   `AmountError`, which the HTTP edge answers with 400); it never rounds.
 * - `formatAmount` writes the canonical string at the currency's scale (`"10.50"` USD, `"1500"` CLP); it
 *   refuses a value with more decimals than the scale rather than round it silently.
 * - Rounding happens only where a rate or a percentage is applied (`applyRate`, `percentOf`, `roundHalfUp`):
 *   half-up at the currency's scale, ties away from zero (2.345 → 2.35, −2.345 → −2.35).
 */
import { Decimal as DecimalJs } from 'decimal.js';
import { DomainError } from './errors.ts';

/**
 * The decimal type used throughout: plenty of precision for numeric(38,18) sums, half-up rounding, and
 * `toString()` that never switches to exponent notation (`0.00000001`, not `1e-8`).
 */
export const Decimal = DecimalJs.clone({
  precision: 80,
  rounding: DecimalJs.ROUND_HALF_UP,
  toExpNeg: -9e15,
  toExpPos: 9e15,
});
export type Decimal = DecimalJs;

/** Values a decimal may be built from: never a JS number (binary floating point loses cents). */
export type DecimalInput = string | bigint | Decimal;

/** Decimals allowed per currency. */
export const CURRENCY_SCALES = Object.freeze({
  CLP: 0,
  COP: 2,
  ARS: 2,
  BRL: 2,
  MXN: 2,
  PEN: 2,
  BOB: 2,
  USD: 2,
  EUR: 2,
  GBP: 2,
  USDC: 6,
  USDT: 6,
  BTC: 8,
} as const);

export type Currency = keyof typeof CURRENCY_SCALES;

/** Digits allowed before the decimal point (as the HTTP amount pattern); keeps sums inside numeric(38,18). */
export const MAX_INTEGER_DIGITS = 18;

export type AmountErrorReason = 'unknownCurrency' | 'malformed' | 'tooManyDecimals' | 'outOfRange' | 'notPositive';

/** An amount or currency a caller got wrong: a DomainError of kind `invalid`, so the HTTP edge answers 400. */
export class AmountError extends DomainError {
  constructor(readonly reason: AmountErrorReason, message: string) {
    super('invalid', message);
  }
}

export function isCurrency(code: unknown): code is Currency {
  return typeof code === 'string' && Object.hasOwn(CURRENCY_SCALES, code);
}

/** The currency's scale; an unknown currency is an `AmountError` (`unknownCurrency`). */
export function currencyScale(currency: string): number {
  if (!isCurrency(currency)) throw new AmountError('unknownCurrency', `unknown currency ${JSON.stringify(currency)}`);
  return CURRENCY_SCALES[currency];
}

export interface ParseAmountOptions {
  /** Refuse zero and negative amounts (payments, refunds). By default a leading minus is accepted. */
  positive?: boolean;
}

const AMOUNT_TEXT = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * Reads a decimal string (`"10"`, `"10.5"`, `"-3.25"`) in `currency`. Refuses, with an `AmountError`:
 * anything but plain decimal notation (no exponent, sign `+`, spaces or thousands separators), more digits
 * after the point than the currency's scale (written digits count: `"1.0"` is refused for CLP), more than
 * `MAX_INTEGER_DIGITS` digits before it, and with `positive`, zero or negative amounts.
 */
export function parseAmount(text: string, currency: string, options: ParseAmountOptions = {}): Decimal {
  const scale = currencyScale(currency);
  const match = typeof text === 'string' ? AMOUNT_TEXT.exec(text) : null;
  if (!match) throw new AmountError('malformed', `amount ${JSON.stringify(text)} is not a decimal string like "10.50"`);
  const [, sign, integer, fraction = ''] = match;
  if (fraction.length > scale) {
    throw new AmountError('tooManyDecimals',
      `amount ${text} has ${fraction.length} decimals; ${currency} allows ${scale === 0 ? 'none' : `at most ${scale}`}`);
  }
  if (integer!.replace(/^0+(?=\d)/, '').length > MAX_INTEGER_DIGITS) {
    throw new AmountError('outOfRange', `amount ${text} has more than ${MAX_INTEGER_DIGITS} digits before the decimal point`);
  }
  const value = new Decimal(`${sign}${integer}${fraction ? `.${fraction}` : ''}`);
  if (options.positive && !value.greaterThan(0)) {
    throw new AmountError('notPositive', `amount ${text} must be greater than zero`);
  }
  // -0 and 0 are the same amount; keep one.
  return value.isZero() ? new Decimal(0) : value;
}

/** A decimal from a string, bigint or decimal (e.g. a numeric column as the driver returns it). */
export function toDecimal(value: DecimalInput): Decimal {
  let decimal: Decimal;
  try {
    decimal = new Decimal(value);
  } catch {
    throw new AmountError('malformed', `amount ${JSON.stringify(String(value))} is not a number`);
  }
  if (!decimal.isFinite()) throw new AmountError('malformed', `amount ${String(value)} is not a finite number`);
  return decimal;
}

/**
 * The canonical text of an amount at its currency's scale: `"10.50"` (USD), `"1500"` (CLP), `"0.00000100"`
 * (BTC), never `"-0.00"`. A value with more decimals than the scale is refused (round it first where a rate
 * applies), so formatting never changes an amount.
 */
export function formatAmount(value: DecimalInput, currency: string): string {
  const scale = currencyScale(currency);
  const decimal = toDecimal(value);
  if (decimal.decimalPlaces() > scale) {
    throw new AmountError('tooManyDecimals', `amount ${decimal.toString()} has more decimals than ${currency} allows (${scale})`);
  }
  return (decimal.isZero() ? decimal.abs() : decimal).toFixed(scale);
}

/** `"0"` at the currency's scale: `"0.00"` USD, `"0"` CLP. */
export function zeroAmount(currency: string): string {
  return formatAmount(new Decimal(0), currency);
}

/**
 * Rounds half-up to the currency's scale, ties away from zero. Only for amounts that come out of a rate or a
 * percentage; amounts a caller sends are parsed, never rounded.
 */
export function roundHalfUp(value: DecimalInput, currency: string): Decimal {
  const rounded = toDecimal(value).toDecimalPlaces(currencyScale(currency), DecimalJs.ROUND_HALF_UP);
  return rounded.isZero() ? new Decimal(0) : rounded;
}

/** `amount × rate`, rounded half-up at `currency`'s scale (the currency of the result, e.g. after conversion). */
export function applyRate(amount: DecimalInput, rate: DecimalInput, currency: string): Decimal {
  return roundHalfUp(toDecimal(amount).times(toDecimal(rate)), currency);
}

/** `percent`% of `amount` (`percentOf("200.00", "2.5", "USD")` is 5.00), rounded half-up at the scale. */
export function percentOf(amount: DecimalInput, percent: DecimalInput, currency: string): Decimal {
  return roundHalfUp(toDecimal(amount).times(toDecimal(percent)).dividedBy(100), currency);
}
