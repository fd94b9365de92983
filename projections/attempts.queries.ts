/**
 * Queries of the attempts read model: the rows routes answer with, and the attempts' port
 * (src/attempts/ports.ts), which `attemptReads` implements.
 */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { PaymentAttemptCreatedData } from '../src/attempts/events.ts';
import { attemptRowOf, type AttemptRow } from './attempts.ts';
import type { ReadModels } from './readModels.ts';

/** The attempt's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedAttempt(db: Kysely<ReadModels>, tenant: Tenant, attemptId: string): Promise<AttemptRow> {
  return findOwned(db, 'payment_attempts', tenant, 'attempt_id', attemptId, 'payment attempt');
}

/** The attempts' port (src/attempts/ports.ts): the row a creation becomes (no query). */
export function attemptReads() {
  return { viewOf: (created: PaymentAttemptCreatedData) => attemptRowOf(created) };
}
