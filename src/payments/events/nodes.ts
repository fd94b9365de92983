/**
 * A payment node (origin or destination) as PaymentCreated stores it: the checked node, its amount and currency
 * filled in, what the catalog said of its type, and exactly one node object under the type's node key. Declared
 * here, apart from the request's node schema (schemas/paymentNodes.ts), so a change to what clients may send
 * does not change what is stored.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, nullableTextSchema, textSchema } from '../../../schemas/events/common.ts';

/** A rail's node object: its string fields as sent (src/payments/nodes.ts checks them against the catalog). */
const nodeObjectSchema = { type: 'object', additionalProperties: textSchema } as const;

/** Digits a card number needs before its first six may be kept beside its last four (PCI DSS). */
export const MIN_CARD_DIGITS_FOR_BIN = 16;

/**
 * What is kept of a card: never the full number nor the cvv. The number is masked to its last four digits, and its
 * first six (`bin`) only for numbers of 16 digits or more. Version 1 kept the first six of shorter numbers too: the
 * upcaster below hides them on read.
 */
const storedCardSchema = closed({
  number: { type: 'string', pattern: '^(\\d{6}\\*{6,9}|\\*{8,11})\\d{4}$' },
  holder: textSchema,
  expiryMonth: textSchema,
  expiryYear: textSchema,
  brand: textSchema,
  cardType: textSchema,
  last4: textSchema,
  bin: textSchema,
  country: textSchema,
}, ['cardType', 'country', 'bin']);

const optionalTexts = <const K extends string>(keys: readonly K[]) =>
  closed(Object.fromEntries(keys.map((key) => [key, textSchema])) as { [P in K]: typeof textSchema }, keys);

const nodeObjects = {
  card: storedCardSchema, wallet: nodeObjectSchema, account: nodeObjectSchema, bank: nodeObjectSchema, pix: nodeObjectSchema,
  pct: nodeObjectSchema, cvu: nodeObjectSchema, etpay: nodeObjectSchema, fintoc: nodeObjectSchema, webpay: nodeObjectSchema,
  spei: nodeObjectSchema, pse: nodeObjectSchema, bancolombia: nodeObjectSchema, davivienda: nodeObjectSchema,
  daviplata: nodeObjectSchema, nequi: nodeObjectSchema, breb: nodeObjectSchema, wompi: nodeObjectSchema, ligo: nodeObjectSchema,
  sip: nodeObjectSchema, ach: nodeObjectSchema, wire: nodeObjectSchema, fedNow: nodeObjectSchema, rtp: nodeObjectSchema,
  sepa: nodeObjectSchema, fpe: nodeObjectSchema, swift: nodeObjectSchema,
} as const;
const nodeObjectKeys = Object.keys(nodeObjects) as Array<keyof typeof nodeObjects>;

export const storedPaymentNodeSchema = closed({
  type: textSchema,
  name: nullableTextSchema,
  externalId: nullableTextSchema,
  amount: amountSchema,
  currency: textSchema,
  settlement: { type: 'string', enum: ['INSTANT', 'T+1', 'T+2'] },
  fee: closed({ type: { type: 'string', enum: ['FIXED', 'PERCENTAGE'] }, value: amountSchema, currency: textSchema }, ['currency']),
  limits: closed({ minAmount: amountSchema, maxAmount: amountSchema }),
  metadata: { oneOf: [optionalTexts(['image', 'description', 'category']), { type: 'null' }] },
  identity: { oneOf: [optionalTexts(['name', 'documentNumber', 'externalId', 'lastname']), { type: 'null' }] },
  metaData: closed({ image: textSchema, title: textSchema, description: textSchema }),
  ...nodeObjects,
}, nodeObjectKeys);
export type StoredPaymentNode = FromSchema<typeof storedPaymentNodeSchema>;

type StoredCardFields = { number: string; last4: string; bin?: string };

/** A card kept as version 1 kept it, masked as now: a number shorter than 16 digits shows only its last four. */
export function cardMaskedAsNow<C extends StoredCardFields>(card: C): C {
  if (card.number.length >= MIN_CARD_DIGITS_FOR_BIN) return card;
  const { bin: _bin, ...rest } = card;
  return { ...rest, number: `${'*'.repeat(card.number.length - 4)}${card.last4}` } as C;
}

/** The v1 → v2 step of an event carrying nodes (PaymentCreated, PaymentAttemptCreated): their cards masked as now. */
export function nodesMaskedAsNow<D extends { origins?: unknown[]; destinations?: unknown[] }>(data: D): D {
  const node = (value: unknown) => {
    const card = (value as { card?: StoredCardFields }).card;
    return card ? { ...(value as object), card: cardMaskedAsNow(card) } : value;
  };
  return {
    ...data,
    ...(data.origins ? { origins: data.origins.map(node) } : {}),
    ...(data.destinations ? { destinations: data.destinations.map(node) } : {}),
  };
}
