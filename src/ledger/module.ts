import { defineContext } from '../module.ts';
import { ledgerProjector } from '../../projections/ledger.ts';

/** The double-entry ledger: a read model of every money event (its write side is the account stream). */
export const ledgerContext = defineContext({ name: 'ledger', projectors: [ledgerProjector] });
