/**
 * A payment attempt, pure: recorded once, with status ATTEMPT, from the facts its handler checked (nodes,
 * account, fees, exchange). A second recording on the same stream is refused; another client's attempt is not
 * found.
 */
import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { domainConflict } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import type { AttemptEvent, PaymentAttemptCreatedData } from './events.ts';

export type AttemptCommand = { type: 'RecordAttempt'; attempt: Omit<PaymentAttemptCreatedData, 'createdAt'>; now: Date } & TenantScoped;

export interface AttemptState {
  attempt: PaymentAttemptCreatedData | null;
}

export const attemptDecider: Decider<AttemptCommand, AttemptEvent, AttemptState> = {
  initialState: { attempt: null },

  decide(command, state) {
    refuseOtherTenants(command.tenant, state.attempt?.clientId ?? null, 'payment attempt not found');
    if (state.attempt) throw domainConflict(`payment attempt ${state.attempt.attemptId} already exists`);
    return [{ type: 'PaymentAttemptCreated', data: { ...command.attempt, createdAt: command.now.toISOString() } }];
  },

  evolve(state, event) {
    switch (event.type) {
      case 'PaymentAttemptCreated':
        return { attempt: event.data };
    }
  },
};

/** `payment-attempt-<attemptId>`: its recording hands its wait to the HTTP edge, which records the answer meanwhile. */
export const attemptStreamType = streamType('payment-attempt-', { decider: attemptDecider, readModels: { RecordAttempt: 'alongside' } });
