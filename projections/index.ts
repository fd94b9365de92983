/**
 * Every read model of the service. Each projector owns its tables; the runner exposes them as views in the
 * main schema under the same names.
 */
import type { Projector, Reactor } from '../src/projection/projector.ts';
import { clientsProjector } from './clients.ts';
import { identitiesProjector } from './identities.ts';
import { customersProjector } from './customers.ts';
import { accountsProjector } from './accounts.ts';
import { ledgerProjector } from './ledger.ts';
import { paymentsProjector } from './payments.ts';

export function allProjectors(): Projector[] {
  return [clientsProjector, identitiesProjector, customersProjector, accountsProjector, paymentsProjector, ledgerProjector];
}

export function allReactors(): Reactor[] {
  return [];
}
