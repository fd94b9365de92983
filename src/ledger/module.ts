import { defineContext } from '../module.ts';
import { createLedgerProjector, LEDGER_PROJECTOR_VERSION } from '../../projections/ledger.ts';

/**
 * The double-entry ledger: a read model of every money event (its write side is the account stream), posting what
 * each context's manifest says its events post (`postings`).
 */
export const ledgerContext = defineContext({
  name: 'ledger',
  projectors: ({ postings }) => [createLedgerProjector(LEDGER_PROJECTOR_VERSION, postings)],
});
