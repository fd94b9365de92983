/** Queries of the refunds read model: the rows routes answer with. */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { RefundRow } from './refunds.ts';
import type { ReadModels } from './readModels.ts';

/** The refund child's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedRefund(db: Kysely<ReadModels>, tenant: Tenant, refundId: string): Promise<RefundRow> {
  return findOwned(db, 'refunds', tenant, 'refund_id', refundId, 'refund');
}
