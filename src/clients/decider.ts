import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { domainConflict, domainInvalid, domainNotFound } from '../domain/errors.ts';
import { toDecimal } from '../domain/money.ts';
import type { ClientEvent } from './events.ts';

export type ClientCommand =
  | { type: 'RegisterClient'; clientId: string; name: string; apiKeyId: string; apiKeyHash: string; secretHash: string; now: Date }
  | { type: 'DeleteClient'; now: Date }
  /** USD-equivalent amounts, decimal strings; a STANDARD payer is trusted at least as far as a BASIC one. */
  | { type: 'SetReviewThresholds'; basicUsd: string; standardUsd: string; now: Date };

export type ClientState =
  | { status: 'none' }
  | { status: 'active' | 'deleted'; clientId: string; name: string };

export const clientDecider: Decider<ClientCommand, ClientEvent, ClientState> = {
  initialState: { status: 'none' },

  decide(command, state) {
    switch (command.type) {
      case 'RegisterClient': {
        if (state.status !== 'none') throw domainConflict(`client ${command.clientId} already exists`);
        const { clientId, name, apiKeyId, apiKeyHash, secretHash } = command;
        return [{ type: 'ClientRegistered', data: {
          clientId, name, apiKeyId, apiKeyHash, secretHash, registeredAt: command.now.toISOString(),
        } }];
      }
      case 'DeleteClient': {
        if (state.status !== 'active') throw domainNotFound('client not found');
        return [{ type: 'ClientDeleted', data: { clientId: state.clientId, deletedAt: command.now.toISOString() } }];
      }
      case 'SetReviewThresholds': {
        if (state.status !== 'active') throw domainNotFound('client not found');
        const { basicUsd, standardUsd } = command;
        if (toDecimal(standardUsd).lessThan(toDecimal(basicUsd))) {
          throw domainInvalid(`standardUsd: ${standardUsd} is below basicUsd ${basicUsd}; a STANDARD payer is reviewed from at least the BASIC threshold`);
        }
        return [{ type: 'ClientReviewThresholdsSet', data: { clientId: state.clientId, basicUsd, standardUsd, setAt: command.now.toISOString() } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'ClientRegistered':
        return { status: 'active', clientId: event.data.clientId, name: event.data.name };
      case 'ClientDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted' };
      case 'ClientReviewThresholdsSet':
        return state;
    }
  },
};

/**
 * `client-<clientId>`: an operator's change waits for every read model (the client's key and token checks read
 * them); the CLI, where none runs, waits for none.
 */
export const clientStreamType = streamType('client-', { decider: clientDecider, readModels: {
  RegisterClient: 'all', DeleteClient: 'all', SetReviewThresholds: 'all',
} });
