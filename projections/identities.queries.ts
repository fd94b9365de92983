/**
 * Queries of the identities read model: the rows routes answer with, and the identities' port
 * (src/identities/ports.ts), which `identityReads` implements.
 */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { IdentityRow } from './identities.ts';
import type { ReadModels } from './readModels.ts';

/** The identity's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedIdentity(db: Kysely<ReadModels>, tenant: Tenant, identityId: string): Promise<IdentityRow> {
  return findOwned(db, 'identities', tenant, 'identity_id', identityId, 'identity');
}

/** The identities' port (src/identities/ports.ts) over the read models. */
export function identityReads(db: Kysely<ReadModels>) {
  return {
    owned: (tenant: Tenant, identityId: string) => ownedIdentity(db, tenant, identityId),

    async linksBeforeTheGraph(clientId: string) {
      const rows = await db.selectFrom('identities as child')
        .innerJoin('identities as parent', 'parent.identity_id', 'child.parent_id')
        .select(['child.identity_id as childId', 'child.parent_id as parentId'])
        .where('child.client_id', '=', clientId).where('parent.client_id', '=', clientId)
        .orderBy('child.identity_id').execute();
      return rows.map((row) => ({ parentId: row.parentId as string, childId: row.childId as string }));
    },
  };
}
