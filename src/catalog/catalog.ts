/**
 * The payment catalog, read from data files (src/catalog/data): the 27 node types, banks per country and FX
 * rates per product. The files are validated against schemas/catalog.ts, then checked for consistency (amounts
 * at each currency's scale, min ≤ max, fixed fees in a currency of the type, banks in known countries); any
 * defect stops the service at startup with a message naming the file and the entry.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import {
  banksFileSchema, fxRatesFileSchema, nodeTypes, nodeTypesFileSchema,
  type Bank, type CatalogNodeType, type Direction, type NodeTypeName,
} from '../../schemas/catalog.ts';
import { AmountError, parseAmount } from '../domain/money.ts';

export type { Bank, CatalogNodeType, Direction };

export class CatalogError extends Error {
  override readonly name = 'CatalogError';
}

export interface CatalogData {
  nodeTypes: unknown;
  banks: unknown;
  fxRates: unknown;
}

export interface Catalog {
  readonly nodeTypes: readonly CatalogNodeType[];
  readonly banks: readonly Bank[];
  readonly fxRates: Readonly<Record<string, string>>;
  nodeType(type: string): CatalogNodeType | undefined;
  banksOf(country: string): Bank[];
  rate(product: string): string | undefined;
  /** Node types that move `currency` in `direction`, in catalog order. */
  methodsFor(currency: string, direction: Direction): CatalogNodeType[];
  /** Every currency some node type moves, in first-seen order. */
  currencies(): string[];
  /** Countries the node types name (without the `*` wildcard). */
  countries(): string[];
}

const ajv = new Ajv({ allErrors: false, strict: false });
const validators = {
  nodeTypes: ajv.compile(nodeTypesFileSchema),
  banks: ajv.compile(banksFileSchema),
  fxRates: ajv.compile(fxRatesFileSchema),
};

function validated<T>(file: keyof typeof validators, value: unknown): T {
  const validate = validators[file];
  if (!validate(value)) {
    const error = validate.errors![0]!;
    throw new CatalogError(`catalog ${file}.json is malformed at ${error.instancePath || '/'}: ${error.message ?? 'invalid'}`
      + (error.params && Object.keys(error.params).length ? ` ${JSON.stringify(error.params)}` : ''));
  }
  return value as T;
}

function amountOf(text: string, currency: string, where: string) {
  try {
    return parseAmount(text, currency);
  } catch (error) {
    if (error instanceof AmountError) throw new CatalogError(`catalog ${where}: ${error.message}`);
    throw error;
  }
}

function checkNodeTypes(list: CatalogNodeType[]): void {
  const seen = new Set<string>();
  for (const entry of list) {
    const where = `nodeTypes.json ${entry.type}`;
    if (seen.has(entry.type)) throw new CatalogError(`catalog ${where}: listed twice`);
    seen.add(entry.type);
    for (const limits of ['minAmount', 'maxAmount'] as const) {
      const keys = Object.keys(entry[limits]).sort();
      if (keys.join() !== [...entry.currencies].sort().join()) {
        throw new CatalogError(`catalog ${where}: ${limits} must name exactly its currencies (${entry.currencies.join(', ')})`);
      }
    }
    for (const currency of entry.currencies) {
      const min = amountOf(entry.minAmount[currency]!, currency, `${where} minAmount`);
      const max = amountOf(entry.maxAmount[currency]!, currency, `${where} maxAmount`);
      if (min.greaterThan(max)) throw new CatalogError(`catalog ${where}: minAmount exceeds maxAmount in ${currency}`);
    }
    if (entry.fee.type === 'FIXED') {
      const currency = entry.fee.currency!;
      if (!(entry.currencies as string[]).includes(currency)) {
        throw new CatalogError(`catalog ${where}: fixed fee currency ${currency} is not one of its currencies`);
      }
      amountOf(entry.fee.value, currency, `${where} fee`);
    }
  }
  const missing = nodeTypes.filter((type) => !seen.has(type));
  if (missing.length) throw new CatalogError(`catalog nodeTypes.json: missing ${missing.join(', ')}`);
}

function checkFxRates(rates: Record<string, string>, currencies: string[]): void {
  for (const [product, rate] of Object.entries(rates)) {
    const [from, to] = product.split(':') as [string, string];
    if (!currencies.includes(from) || !currencies.includes(to)) {
      throw new CatalogError(`catalog fxRates.json ${product}: names a currency the catalog does not move`);
    }
    if (!(Number(rate) > 0)) throw new CatalogError(`catalog fxRates.json ${product}: rate must be greater than zero`);
    if (from === to && rate !== '1') throw new CatalogError(`catalog fxRates.json ${product}: an identity product has rate 1`);
  }
  for (const currency of currencies) {
    if (rates[`${currency}:${currency}`] === undefined) throw new CatalogError(`catalog fxRates.json: missing ${currency}:${currency}`);
  }
}

/** Validates catalog data (as parsed from the files) and builds the lookups; throws a CatalogError. */
export function buildCatalog(data: CatalogData): Catalog {
  const types = validated<CatalogNodeType[]>('nodeTypes', data.nodeTypes);
  const banks = validated<Bank[]>('banks', data.banks);
  const fxRates = validated<Record<string, string>>('fxRates', data.fxRates);
  checkNodeTypes(types);
  const currencies = [...new Set(types.flatMap((t) => t.currencies as string[]))];
  const countries = [...new Set(types.flatMap((t) => t.countries as string[]))].filter((c) => c !== '*');
  checkFxRates(fxRates, currencies);
  const seenBanks = new Set<string>();
  for (const bank of banks) {
    const key = `${bank.countryCode}:${bank.code}`;
    if (seenBanks.has(key)) throw new CatalogError(`catalog banks.json: bank ${bank.code} listed twice in ${bank.countryCode}`);
    seenBanks.add(key);
    if (!countries.includes(bank.countryCode)) {
      throw new CatalogError(`catalog banks.json: bank ${bank.code} is in ${bank.countryCode}, which no node type covers`);
    }
  }
  for (const country of countries) {
    if (!banks.some((b) => b.countryCode === country)) throw new CatalogError(`catalog banks.json: no banks for ${country}`);
  }

  const byType = new Map(types.map((t) => [t.type as string, t]));
  const byCountry = new Map<string, Bank[]>();
  for (const bank of banks) byCountry.set(bank.countryCode, [...(byCountry.get(bank.countryCode) ?? []), bank]);
  return Object.freeze({
    nodeTypes: types,
    banks,
    fxRates,
    nodeType: (type: string) => byType.get(type),
    banksOf: (country: string) => [...(byCountry.get(country) ?? [])],
    rate: (product: string) => (Object.hasOwn(fxRates, product) ? fxRates[product] : undefined),
    methodsFor: (currency: string, direction: Direction) =>
      types.filter((t) => (t.currencies as string[]).includes(currency) && (t.directions as string[]).includes(direction)),
    currencies: () => [...currencies],
    countries: () => [...countries],
  });
}

const dataDir = fileURLToPath(new URL('./data/', import.meta.url));

function readJson(file: string): unknown {
  const path = `${dataDir}${file}`;
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CatalogError(`catalog ${file} cannot be read: ${(error as Error).message}`);
  }
}

/** The data files as parsed JSON (unvalidated). */
export function readCatalogData(): CatalogData {
  return { nodeTypes: readJson('nodeTypes.json'), banks: readJson('banks.json'), fxRates: readJson('fxRates.json') };
}

let loaded: Catalog | undefined;

/** The catalog of the data files, loaded and validated once. */
export function loadCatalog(): Catalog {
  return (loaded ??= buildCatalog(readCatalogData()));
}
