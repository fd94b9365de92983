import { clientDecider, type ClientCommand } from '../src/clients/decider.ts';
import type { ClientEvent } from '../src/clients/events.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const registered: ClientEvent = { type: 'ClientRegistered', data: {
  clientId: 'c1', name: 'Acme', apiKeyId: 'k1', apiKeyHash: 'h1', secretHash: 'h2', registeredAt: at,
} };
const deleted: ClientEvent = { type: 'ClientDeleted', data: { clientId: 'c1', deletedAt: at } };
const setThresholds = (basicUsd: string, standardUsd: string): ClientCommand => ({ type: 'SetReviewThresholds', basicUsd, standardUsd, now });

const { given } = DeciderSpecification.for(clientDecider);

describe('client decider: review thresholds (given / when / then)', () => {
  it('given a client, when thresholds are set, then ClientReviewThresholdsSet', () => {
    given([registered]).when(setThresholds('50.00', '500.00'))
      .then([{ type: 'ClientReviewThresholdsSet', data: { clientId: 'c1', basicUsd: '50.00', standardUsd: '500.00', setAt: at } }]);
  });

  it('given thresholds set before, when they are set again, then the new ones are recorded (equal thresholds allowed)', () => {
    const earlier: ClientEvent = { type: 'ClientReviewThresholdsSet', data: { clientId: 'c1', basicUsd: '1.00', standardUsd: '2.00', setAt: at } };
    given([registered, earlier]).when(setThresholds('70.00', '70.00'))
      .then([{ type: 'ClientReviewThresholdsSet', data: { clientId: 'c1', basicUsd: '70.00', standardUsd: '70.00', setAt: at } }]);
  });

  it('when STANDARD is below BASIC, then it is refused as invalid', () => {
    given([registered]).when(setThresholds('100.00', '99.99')).thenThrows('invalid', /standardUsd: 99.99 is below basicUsd 100.00/);
  });

  it('given no client, or a deleted one, then it is not found', () => {
    given([]).when(setThresholds('1.00', '2.00')).thenThrows('notFound', /client not found/);
    given([registered, deleted]).when(setThresholds('1.00', '2.00')).thenThrows('notFound', /client not found/);
  });
});
