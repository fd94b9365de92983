/**
 * What the deposits' jobs read of the read models (projections/deposits.queries.ts implements it; the
 * composition root wires it into `Platform.reads`): their work queues. Each deposit's and companion's stream
 * decides whether it still expires.
 */
import type { DueWindow } from '../payments/ports.ts';

export interface DepositReads {
  /** Deposits still unassigned (CREATED) whose expiresAt is due by `until`, soonest first, at most `limit`. */
  unassignedDue(window: DueWindow, limit: number): Promise<Array<{ paymentId: string; clientId: string; expiresAt: Date }>>;
  /** Companions (amounts still due of underpaid deposits) still CREATED whose expiresAt is due by `until`, soonest first. */
  companionsDue(window: DueWindow, limit: number): Promise<Array<{ paymentId: string; clientId: string; expiresAt: Date }>>;
}
