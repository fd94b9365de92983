import type { Decider } from '../domain/decider.ts';
import { domainConflict, domainNotFound } from '../domain/errors.ts';
import type { ClientEvent } from './events.ts';

export type ClientCommand =
  | { type: 'RegisterClient'; clientId: string; name: string; apiKeyId: string; apiKeyHash: string; secretHash: string; now: Date }
  | { type: 'DeleteClient'; now: Date };

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
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'ClientRegistered':
        return { status: 'active', clientId: event.data.clientId, name: event.data.name };
      case 'ClientDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted' };
    }
  },
};
