/**
 * Checks a payment's origins or destinations against the catalog and returns them as they are stored: currency
 * and amount filled in, the type's fee, limits and settlement attached, and card data reduced to what may be
 * kept (nodes end up in an immutable event store, so a full card number or a cvv must never get past here).
 *
 * Every refusal is a DomainError of kind `invalid` (a 400) whose message starts with the node's path, e.g.
 * `origins[0].card.number ...`. Messages never repeat a field's value, except country and currency codes.
 */
import type { Catalog, CatalogNodeType } from '../catalog/catalog.ts';
import { domainInvalid } from '../domain/errors.ts';
import { AmountError, formatAmount, parseAmount, toDecimal, type Decimal } from '../domain/money.ts';
import { countryCodes } from '../../schemas/countries.ts';
import {
  MAX_NODE_FIELD_LENGTH, MAX_PAYMENT_NODES, nodeKeys, type PaymentNodeInput,
} from '../../schemas/paymentNodes.ts';
import { MIN_CARD_DIGITS_FOR_BIN, type StoredPaymentNode } from './events/nodes.ts';

/** Defaults for nodes that name no currency or amount of their own, and the clock card expiry is judged by. */
export interface NodeContext {
  currency: string;
  amount: string;
  now?: Date;
}

export type NodeSide = 'origins' | 'destinations';

type Fields = Record<string, string>;

export function validateNodes(
  catalog: Catalog, nodes: readonly PaymentNodeInput[] | undefined, side: NodeSide, context: NodeContext,
): StoredPaymentNode[] {
  if (nodes === undefined) return [];
  if (nodes.length > MAX_PAYMENT_NODES) throw domainInvalid(`${side}: at most ${MAX_PAYMENT_NODES} nodes`);
  return nodes.map((node, index) => validateNode(catalog, node, side, `${side}[${index}]`, context));
}

export function validateNode(catalog: Catalog, node: PaymentNodeInput, side: NodeSide, path: string, context: NodeContext): StoredPaymentNode {
  const type = catalog.nodeType(node.type);
  if (!type) throw domainInvalid(`${path}: unknown node type ${JSON.stringify(node.type)}`);
  const fields = nodeObjectOf(node, type, path);
  const objectPath = `${path}.${type.nodeKey}`;

  const direction = side === 'origins' ? 'PAY_IN' : 'PAY_OUT';
  if (!type.directions.includes(direction)) {
    throw domainInvalid(`${path}: type ${type.type} cannot be used as ${side === 'origins' ? 'an origin' : 'a destination'}`
      + ` (it is ${direction === 'PAY_IN' ? 'pay-out' : 'pay-in'} only)`);
  }

  for (const name of type.requiredFields) {
    if (!fields[name]?.trim()) throw domainInvalid(`${objectPath}: missing required field ${name}`);
  }
  checkFormats(type, fields, objectPath);
  const stored = type.type === 'CARD' ? storedCard(fields, objectPath, context.now ?? new Date()) : { ...fields };

  if (fields.country !== undefined) checkCountry(type, fields.country, `${objectPath}.country`);
  const priced = pricedNode(type, node, path, context);
  if (fields.currency !== undefined && fields.currency !== priced.currency) {
    throw domainInvalid(`${objectPath}.currency: ${fields.currency} does not match the node's currency ${priced.currency}`);
  }
  return { ...priced, [type.nodeKey]: stored } as StoredPaymentNode;
}

/**
 * An origin's amount is what the payer pays through it, so the origins account for exactly what the payment
 * charges the payer (`charged`: the purchase amount in the purchase currency): a single origin pays all of it
 * (its amount, when given, must be that), several split it (each names its amount, and they add up to it).
 * Called with the origins as sent (`inputs`: which amounts were given) and as checked (`stored`: normalised).
 */
export function checkOriginAmounts(
  inputs: readonly { amount?: string | undefined }[] | undefined,
  stored: readonly { amount: string; currency: string }[],
  charged: { amount: string; currency: string },
): void {
  if (!inputs || inputs.length === 0) return;
  const wanted = `${charged.amount} ${charged.currency}`;
  stored.forEach((node, index) => {
    const path = `origins[${index}].amount`;
    if (inputs.length > 1 && inputs[index]!.amount === undefined) {
      throw domainInvalid(`${path}: required when the payment has several origins (their amounts split the ${wanted} it charges)`);
    }
    if (inputs[index]!.amount !== undefined && node.currency !== charged.currency) {
      throw domainInvalid(`${path}: ${node.amount} ${node.currency} is not in ${charged.currency}, the currency the payment charges (${wanted})`);
    }
  });
  if (inputs.length === 1) {
    const [node] = stored;
    if (inputs[0]!.amount !== undefined && !toDecimal(node!.amount).equals(toDecimal(charged.amount))) {
      throw domainInvalid(`origins[0].amount: ${node!.amount} ${node!.currency} differs from the ${wanted} the payment charges`);
    }
    return;
  }
  const sum = stored.reduce((total, node) => total.plus(toDecimal(node.amount)), toDecimal('0'));
  if (!sum.equals(toDecimal(charged.amount))) {
    throw domainInvalid(`origins[0..${stored.length - 1}].amount: they add up to ${formatAmount(sum, charged.currency)} ${charged.currency}, `
      + `not the ${wanted} the payment charges`);
  }
}

/** What every node shares, whatever carries its details: its own fields, and its type's catalog facts. */
type NodeCommon = Pick<PaymentNodeInput, 'name' | 'externalId' | 'amount' | 'currency' | 'metadata' | 'identity'>;

/**
 * The node's currency (one of the type's) and amount (within the type's limits in that currency), and what
 * the catalog says of its type; without the node object, which the caller adds.
 */
export function pricedNode(type: CatalogNodeType, node: NodeCommon, path: string, context: NodeContext) {
  const currency = node.currency ?? context.currency;
  if (!(type.currencies as string[]).includes(currency)) {
    throw domainInvalid(`${path}: currency ${currency} is not a currency of ${type.type} (${type.currencies.join(', ')})`);
  }

  const amount = amountOf(node.amount ?? context.amount, currency, path);
  const minAmount = formatAmount(amountOf(type.minAmount[currency]!, currency, path), currency);
  const maxAmount = formatAmount(amountOf(type.maxAmount[currency]!, currency, path), currency);
  const shown = `${formatAmount(amount, currency)} ${currency}`;
  if (amount.lessThan(minAmount)) {
    throw domainInvalid(`${path}: amount ${shown} is below the ${type.type} minimum ${minAmount} ${currency}`);
  }
  if (amount.greaterThan(maxAmount)) {
    throw domainInvalid(`${path}: amount ${shown} is above the ${type.type} maximum ${maxAmount} ${currency}`);
  }

  return {
    type: type.type as string,
    name: node.name ?? null,
    externalId: node.externalId ?? null,
    amount: formatAmount(amount, currency),
    currency,
    settlement: type.settlement,
    fee: { type: type.fee.type, value: type.fee.value, ...(type.fee.currency ? { currency: type.fee.currency } : {}) },
    limits: { minAmount, maxAmount },
    metadata: node.metadata ? pick(node.metadata, ['image', 'description', 'category']) : null,
    identity: node.identity ? pick(node.identity, ['name', 'documentNumber', 'externalId', 'lastname']) : null,
    metaData: { image: type.description.icon, title: type.description.title, description: type.description.title },
  };
}

/** The one node object the type names, as string fields; any other node object is refused. */
function nodeObjectOf(node: PaymentNodeInput, type: CatalogNodeType, path: string): Fields {
  const present = nodeKeys.filter((key) => (node as Record<string, unknown>)[key] !== undefined);
  const others = present.filter((key) => key !== type.nodeKey).map((key) => `"${key}"`).join(', ');
  if (!(present as string[]).includes(type.nodeKey)) {
    throw domainInvalid(`${path}: type ${type.type} expects the node object "${type.nodeKey}"; found ${others || 'none'}`);
  }
  if (others) {
    throw domainInvalid(`${path}: type ${type.type} expects only the node object "${type.nodeKey}"; found also ${others}`);
  }

  const object = (node as Record<string, unknown>)[type.nodeKey];
  const objectPath = `${path}.${type.nodeKey}`;
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    throw domainInvalid(`${objectPath} must be an object`);
  }
  for (const [name, value] of Object.entries(object)) {
    if (typeof value !== 'string') throw domainInvalid(`${objectPath}.${name} must be a string`);
    if (value.length > MAX_NODE_FIELD_LENGTH) {
      throw domainInvalid(`${objectPath}.${name} must be at most ${MAX_NODE_FIELD_LENGTH} characters`);
    }
  }
  return object as Fields;
}

/**
 * Shapes cheap to check and unambiguous wherever the field appears. `address` is checked only in a wallet:
 * elsewhere (wire, swift) it is a postal address.
 */
const formats = new Map(Object.entries({
  clabe: { pattern: /^\d{18}$/, rule: 'must be 18 digits' },
  routingNumber: { pattern: /^\d{9}$/, rule: 'must be 9 digits' },
  iban: { pattern: /^[A-Za-z]{2}[A-Za-z0-9]{13,32}$/, rule: 'must be 15 to 34 letters and digits, starting with two letters' },
  sortCode: { pattern: /^\d{2}-?\d{2}-?\d{2}$/, rule: 'must be 6 digits (dashes allowed: 12-34-56)' },
  bic: { pattern: /^[A-Za-z0-9]{8}([A-Za-z0-9]{3})?$/, rule: 'must be 8 or 11 letters and digits' },
  email: { pattern: /^[^@\s]+@[^@\s]+$/, rule: 'must be an email address' },
}));
const walletAddress = { pattern: /^\S{20,120}$/, rule: 'must be 20 to 120 characters without spaces' };

function checkFormats(type: CatalogNodeType, fields: Fields, path: string): void {
  for (const [name, value] of Object.entries(fields)) {
    const format = type.type === 'CRYPTO' && name === 'address' ? walletAddress : formats.get(name);
    if (format && !format.pattern.test(value)) throw domainInvalid(`${path}.${name} ${format.rule}`);
  }
}

function checkCountry(type: CatalogNodeType, country: string, path: string): void {
  const countries = type.countries as string[];
  if (countries.includes('*')) {
    if (!(countryCodes as readonly string[]).includes(country)) {
      throw domainInvalid(`${path}: ${country} is not an ISO 3166-1 alpha-3 country code`);
    }
  } else if (!countries.includes(country)) {
    throw domainInvalid(`${path}: ${country} is not a country of ${type.type} (${countries.join(', ')})`);
  }
}

/**
 * A card number as it may be kept and shown: its last four digits, and its first six only when it has at least
 * 16 digits (PCI DSS), the rest starred: 411111******1111 hides 6 of 16 digits, a 12-digit ********1117 8 of 12.
 */
export function maskedCardNumber(number: string): string {
  const last4 = number.slice(-4);
  const bin = number.length >= MIN_CARD_DIGITS_FOR_BIN ? number.slice(0, 6) : '';
  return `${bin}${'*'.repeat(number.length - bin.length - 4)}${last4}`;
}

/**
 * What may be kept of a card: the number masked (`maskedCardNumber`: at most the first six and last four
 * digits, as PCI DSS allows, the first six only for numbers of 16 digits or more), no cvv, and only the
 * known fields, since an unknown one could carry card data.
 */
function storedCard(card: Fields, path: string, now: Date): Fields {
  const number = card.number!;
  if (!/^\d{12,19}$/.test(number)) throw domainInvalid(`${path}.number must be 12 to 19 digits`);
  if (!passesLuhn(number)) throw domainInvalid(`${path}.number is not a valid card number (check digit)`);
  if (!/^(0?[1-9]|1[0-2])$/.test(card.expiryMonth!)) throw domainInvalid(`${path}.expiryMonth must be 1 to 12`);
  if (!/^(\d{2}|\d{4})$/.test(card.expiryYear!)) throw domainInvalid(`${path}.expiryYear must be 4 digits (or 2)`);
  const month = Number(card.expiryMonth);
  const year = card.expiryYear!.length === 2 ? 2000 + Number(card.expiryYear) : Number(card.expiryYear);
  // A card is good through the last day of its expiry month.
  if (year * 12 + month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1) {
    throw domainInvalid(`${path}: the card expired (${String(month).padStart(2, '0')}/${year})`);
  }
  const last4 = number.slice(-4);
  return {
    number: maskedCardNumber(number),
    holder: card.holder!,
    expiryMonth: String(month).padStart(2, '0'),
    expiryYear: String(year),
    brand: card.brand?.trim() || brandOf(number),
    ...(card.cardType !== undefined ? { cardType: card.cardType } : {}),
    last4,
    ...(number.length >= MIN_CARD_DIGITS_FOR_BIN ? { bin: number.slice(0, 6) } : {}),
    ...(card.country !== undefined ? { country: card.country } : {}),
  };
}

function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

function brandOf(number: string): string {
  const two = Number(number.slice(0, 2));
  const four = Number(number.slice(0, 4));
  if (number.startsWith('4')) return 'VISA';
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'MASTERCARD';
  if (two === 34 || two === 37) return 'AMEX';
  return 'UNKNOWN';
}

function amountOf(text: string, currency: string, path: string): Decimal {
  try {
    return parseAmount(text, currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`${path}: ${error.message}`);
    throw error;
  }
}

/** Only the declared fields: the node is stored as is, so nothing unvalidated rides along. */
function pick<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.filter((key) => value[key] !== undefined).map((key) => [key, value[key]])) as Pick<T, K>;
}
