/** The Discovery endpoints: what can be paid in and out, through which banks, and at which rates. */
import type { Request } from 'express';
import {
  availableProductsSchema, bankListSchema, countryParamSchema, destinationListSchema, emptyQuerySchema, originListSchema,
  paymentDestinationsQuerySchema, paymentOriginsQuerySchema, type DestinationItem, type OriginItem,
} from '../../schemas/catalog.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf } from '../http/tenancy.ts';
import { accountByNumber } from '../../projections/accounts.ts';
import { invalidParam, notFound } from '../http/errors.ts';
import type { Catalog, CatalogNodeType } from './catalog.ts';
import { countryCodes } from '../../schemas/countries.ts';

const tags = ['Discovery'];
const error = { $ref: '#/components/schemas/Error' } as const;

/** The currency of the caller's account, or a 404 (another client's account is unknown too). */
async function accountCurrency(services: Services, req: Request, accountNumber: string): Promise<string> {
  const row = await accountByNumber(services.readModels, clientIdOf(req), accountNumber);
  if (!row) throw notFound(`account ${accountNumber} not found`);
  return row.currency;
}

/** The currency a query narrows to: its `currency`, its account's, or none; both must agree. */
async function narrowedCurrency(services: Services, req: Request, accountNumber?: string, currency?: string): Promise<string | undefined> {
  if (accountNumber === undefined) return currency;
  const ofAccount = await accountCurrency(services, req, accountNumber);
  if (currency !== undefined && currency !== ofAccount) {
    throw invalidParam(`query parameter currency ${currency} does not match account ${accountNumber} (${ofAccount})`);
  }
  return ofAccount;
}

const feeOf = (type: CatalogNodeType) => ({
  name: 'TRANSACTION' as const, type: type.fee.type, value: type.fee.value,
  ...(type.fee.currency ? { currency: type.fee.currency } : {}),
});
const limitsOf = (type: CatalogNodeType, currency: string) => ({
  minAmount: type.minAmount[currency]!, maxAmount: type.maxAmount[currency]!,
});
const currenciesOf = (catalog: Catalog, currency?: string) => (currency === undefined ? catalog.currencies() : [currency]);

export function catalogRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/payment-origins', operationId: 'listPaymentOrigins', summary: 'Pay-in methods', tags, access: 'client',
      description: 'Pay-in methods per currency: of `currency`, of the account `accountNumber`, or of every currency. '
        + 'With `purchaseCurrency`, only currencies with a product `currency:purchaseCurrency`.',
      schemas: { query: paymentOriginsQuerySchema },
      responses: {
        200: { description: 'origin list items', schema: originListSchema },
        404: { description: 'no such account for this client', schema: error },
      },
      handler: (input) => listPaymentOrigins(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payment-destinations', operationId: 'listPaymentDestinations', summary: 'Pay-out methods',
      description: 'Pay-out destinations per currency (of the account `accountNumber`, or all), optionally of one node type.',
      tags, access: 'client', schemas: { query: paymentDestinationsQuerySchema },
      responses: {
        200: { description: 'destination list items', schema: destinationListSchema },
        404: { description: 'no such account for this client', schema: error },
      },
      handler: (input) => listPaymentDestinations(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/banks/:country', operationId: 'listBanks', summary: 'Banks of a country', tags,
      access: 'client', schemas: { params: countryParamSchema, query: emptyQuerySchema },
      description: 'A country the catalog has no banks for answers an empty list; a code that is no ISO 3166-1 alpha-3 country, 404.',
      responses: {
        200: { description: 'the banks of the country (empty when the catalog has none there)', schema: bankListSchema },
        404: { description: 'no such country', schema: error },
      },
      handler: (input) => listBanks(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/available-products', operationId: 'listAvailableProducts',
      summary: 'What can be paid in and out, per currency', tags, access: 'client', schemas: { query: emptyQuerySchema },
      description: 'Per currency: pay-in and pay-out node types, products (conversions from the currency) with their rate, '
        + 'and limits and fees per node type.',
      responses: { 200: { description: 'one entry per currency', schema: availableProductsSchema } },
      handler: () => listAvailableProducts(services.catalog),
    }),
  ];
}

async function listPaymentOrigins(
  services: Services, { query, req }: HandlerInput<{ query: typeof paymentOriginsQuerySchema }>,
): Promise<HandlerResult> {
  const currency = await narrowedCurrency(services, req, query.accountNumber, query.currency);
  let currencies = currenciesOf(services.catalog, currency);
  if (query.purchaseCurrency !== undefined) {
    const purchase = query.purchaseCurrency;
    currencies = currencies.filter((c) => services.catalog.rate(`${c}:${purchase}`) !== undefined);
    if (currency !== undefined && currencies.length === 0) {
      throw invalidParam(`query parameter purchaseCurrency ${purchase}: no product ${currency}:${purchase}`);
    }
  }
  const items: OriginItem[] = currencies.flatMap((c) => services.catalog.methodsFor(c, 'PAY_IN').map((type) => ({
    type: type.type, origin: type.nodeKey, description: type.description,
    minimumAmount: type.minAmount[c]!, maximumAmount: type.maxAmount[c]!, currency: c as OriginItem['currency'],
  })));
  return { status: 200, body: items };
}

async function listPaymentDestinations(
  services: Services, { query, req }: HandlerInput<{ query: typeof paymentDestinationsQuerySchema }>,
): Promise<HandlerResult> {
  const currency = await narrowedCurrency(services, req, query.accountNumber);
  const items: DestinationItem[] = currenciesOf(services.catalog, currency).flatMap((c) => services.catalog.methodsFor(c, 'PAY_OUT')
    .filter((type) => query.type === undefined || type.type === query.type)
    .map((type) => ({
      name: type.description.title, type: type.type, amountOut: type.maxAmount[c]!, currency: c as DestinationItem['currency'],
      settlement: type.settlement, fee: feeOf(type), limits: limitsOf(type, c),
    })));
  return { status: 200, body: items };
}

async function listBanks(
  services: Services, { params }: HandlerInput<{ params: typeof countryParamSchema; query: typeof emptyQuerySchema }>,
): Promise<HandlerResult> {
  const { country } = params;
  if (!(countryCodes as readonly string[]).includes(country)) throw notFound(`country ${country} not found`);
  return { status: 200, body: services.catalog.banksOf(country) };
}

async function listAvailableProducts(catalog: Catalog): Promise<HandlerResult> {
  const body = catalog.currencies().map((currency) => {
    const payIn = catalog.methodsFor(currency, 'PAY_IN');
    const payOut = catalog.methodsFor(currency, 'PAY_OUT');
    const methods = [...new Set([...payIn, ...payOut])];
    return {
      currency,
      payIn: payIn.map((t) => t.type),
      payOut: payOut.map((t) => t.type),
      products: Object.entries(catalog.fxRates).filter(([product]) => product.startsWith(`${currency}:`))
        .map(([product, exchangeRate]) => ({ product, exchangeRate })),
      limits: Object.fromEntries(methods.map((t) => [t.type, limitsOf(t, currency)])),
      fees: Object.fromEntries(methods.map((t) => [t.type, feeOf(t)])),
    };
  });
  return { status: 200, body };
}
