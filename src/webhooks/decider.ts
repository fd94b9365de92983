/**
 * A webhook endpoint: registered by a client, changed, its secret rotated, deleted. The URL rule (scheme, no
 * credentials, no private address unless allowed) is decided here, so every way of setting a URL passes it.
 */
import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { domainConflict, domainInvalid, domainNotFound } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import type { EndpointChanges, SealedSecret, WebhookEndpointRegisteredData, WebhookEvent } from './events.ts';
import { webhookUrlProblem } from './url.ts';

export type WebhookCommand = (
  | { type: 'RegisterEndpoint'; endpoint: Omit<WebhookEndpointRegisteredData, 'registeredAt'>; allowPrivate: boolean; now: Date }
  | { type: 'UpdateEndpoint'; changes: EndpointChanges; allowPrivate: boolean; now: Date }
  | { type: 'RotateSecret'; secret: SealedSecret; now: Date }
  | { type: 'DeleteEndpoint'; now: Date }
) & TenantScoped;

export interface WebhookState {
  endpointId: string | null;
  clientId: string | null;
  url: string | null;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  deleted: boolean;
}

function checkUrl(url: string, allowPrivate: boolean): void {
  const problem = webhookUrlProblem(url, allowPrivate);
  if (problem) throw domainInvalid(problem);
}

const sameList = (a: readonly string[] | null, b: readonly string[] | null) =>
  a === null || b === null ? a === b : a.length === b.length && a.every((item, n) => item === b[n]);

function live(state: WebhookState): string {
  if (state.endpointId === null || state.deleted) throw domainNotFound('webhook not found');
  return state.endpointId;
}

export const webhookDecider: Decider<WebhookCommand, WebhookEvent, WebhookState> = {
  initialState: { endpointId: null, clientId: null, url: null, events: null, description: null, enabled: true, deleted: false },

  decide(command, state) {
    refuseOtherTenants(command.tenant, state.clientId, 'webhook not found');
    const at = command.now.toISOString();
    switch (command.type) {
      case 'RegisterEndpoint':
        if (state.endpointId !== null) throw domainConflict(`webhook ${command.endpoint.endpointId} already exists`);
        checkUrl(command.endpoint.url, command.allowPrivate);
        return [{ type: 'WebhookEndpointRegistered', data: { ...command.endpoint, registeredAt: at } }];
      case 'UpdateEndpoint': {
        const endpointId = live(state);
        const { url, events, description, enabled } = command.changes;
        if (url !== undefined) checkUrl(url, command.allowPrivate);
        // Only what differs is recorded; a PATCH that changes nothing records nothing.
        const changes: EndpointChanges = {
          ...(url !== undefined && url !== state.url ? { url } : {}),
          ...(events !== undefined && !sameList(events, state.events) ? { events } : {}),
          ...(description !== undefined && description !== state.description ? { description } : {}),
          ...(enabled !== undefined && enabled !== state.enabled ? { enabled } : {}),
        };
        return Object.keys(changes).length === 0 ? [] : [{ type: 'WebhookEndpointUpdated', data: { endpointId, changes, updatedAt: at } }];
      }
      case 'RotateSecret':
        return [{ type: 'WebhookSecretRotated', data: { endpointId: live(state), secret: command.secret, rotatedAt: at } }];
      case 'DeleteEndpoint':
        return [{ type: 'WebhookEndpointDeleted', data: { endpointId: live(state), deletedAt: at } }];
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'WebhookEndpointRegistered': {
        const d = event.data;
        return { ...state, endpointId: d.endpointId, clientId: d.clientId, url: d.url, events: d.events, description: d.description, enabled: true };
      }
      case 'WebhookEndpointUpdated':
        return { ...state, ...event.data.changes };
      case 'WebhookSecretRotated':
        return state;
      case 'WebhookEndpointDeleted':
        return { ...state, deleted: true };
    }
  },
};

/** `webhook-<endpointId>`: a request waits for the read models its change touches. */
export const webhookStreamType = streamType('webhook-', { decider: webhookDecider, readModels: {
  RegisterEndpoint: 'written', UpdateEndpoint: 'written', RotateSecret: 'written', DeleteEndpoint: 'written',
} });
