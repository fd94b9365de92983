/**
 * Every read model's tables, as the read side's queries (projections/*.queries.ts, the routes' answers through
 * `Services.readModels`) read them: each projector declares its own beside its CREATE TABLE, and this unites them.
 * Written by hand, one type per read model, rather than derived from the list of contexts (src/contexts.ts): the
 * queries here are typed by it and the manifests import the read models, so a derived type would go round in a
 * circle (docs/architecture.md, "Adding a context").
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { AccountTables } from './accounts.ts';
import type { CheckoutTables } from './checkout.ts';
import type { AttemptTables } from './attempts.ts';
import type { ClientTables } from './clients.ts';
import type { CustomerTables } from './customers.ts';
import type { DepositTables } from './deposits.ts';
import type { IdentityTables } from './identities.ts';
import type { LedgerTables } from './ledger.ts';
import type { PaymentTables } from './payments.ts';
import type { RefundTables } from './refunds.ts';
import type { TestClockTables } from './testClocks.ts';
import type { WebhookOutboxTables, WebhookTables } from './webhooks.ts';

/** The webhook outbox is no projector's table (it lives in the main schema), but it is read the same way. */
export type ReadModels = AccountTables & AttemptTables & CheckoutTables & ClientTables & CustomerTables & DepositTables & IdentityTables
  & LedgerTables & PaymentTables & RefundTables & TestClockTables & WebhookTables & WebhookOutboxTables;

/** The database's handle with the read models' tables (they are views of the active versions' tables). */
export function readModelsOf(database: Database): Kysely<ReadModels> {
  return database.db.withTables<ReadModels>();
}
