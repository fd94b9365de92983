/** Queries of the customers read model: the rows routes answer with. */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { CustomerRow } from './customers.ts';
import type { ReadModels } from './readModels.ts';

/** The customer's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedCustomer(db: Kysely<ReadModels>, tenant: Tenant, customerId: string): Promise<CustomerRow> {
  return findOwned(db, 'customers', tenant, 'customer_id', customerId, 'customer');
}
