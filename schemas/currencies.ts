/** Currencies the ledger keeps, each with its scale (decimals); see src/domain/money.ts. */
export const currencyCodes = ['CLP', 'COP', 'ARS', 'BRL', 'MXN', 'PEN', 'BOB', 'USD', 'EUR', 'GBP', 'USDC', 'USDT', 'BTC'] as const;
export const currencySchema = { type: 'string', enum: currencyCodes, description: 'ISO 4217 code (or a token such as USDC)' } as const;
