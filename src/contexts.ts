/**
 * Every context of the service, in one list: the only place a new context is registered. Routes are mounted in
 * this order (the catalog's `GET /payments/banks/:country` and `/payments/available-products` must come before
 * the payments' `GET /payments/:id`; the deposits' `/payments/unassigned` and `/accounts/unassigned` before
 * `/payments/:id` and `/accounts/:id`).
 */
import type { ContextModule } from './module.ts';
import type { Projector } from './projection/projector.ts';
import { clientsContext } from './clients/module.ts';
import { identitiesContext } from './identities/module.ts';
import { customersContext } from './customers/module.ts';
import { accountsContext } from './accounts/module.ts';
import { depositsContext } from './deposits/module.ts';
import { catalogContext } from './catalog/module.ts';
import { paymentsContext } from './payments/module.ts';
import { attemptsContext } from './attempts/module.ts';
import { ledgerContext } from './ledger/module.ts';
import { integrityContext } from './integrity/module.ts';
import { webhooksContext } from './webhooks/module.ts';
import { checkoutContext } from './checkout/module.ts';
import { testClocksContext } from './testClocks/module.ts';

export const contexts: readonly ContextModule[] = [
  clientsContext, identitiesContext, customersContext, depositsContext, accountsContext, catalogContext, paymentsContext, attemptsContext,
  ledgerContext, webhooksContext, integrityContext, checkoutContext, testClocksContext,
];

/** Every read model's projector. */
export function allProjectors(): Projector[] {
  return contexts.flatMap((context) => [...(context.projectors ?? [])]);
}
