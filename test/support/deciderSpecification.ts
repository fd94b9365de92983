/**
 * Given / when / then for a decider, without a database: the events its stream already holds, the command, and
 * the events it decides (compared whole, `deep.equal`) or the refusal it answers (a DomainError of a kind, its
 * message matching).
 *
 *   const spec = DeciderSpecification.for(accountDecider, asOwner<AccountCommand>);
 *   spec.given([opened]).when({ type: 'CloseAccount', now }).then([closed]);
 *   spec.given([]).when({ type: 'CloseAccount', now }).thenThrows('notFound', /not found/);
 *
 * The optional second argument turns the command a test writes into the decider's (`asOwner` adds the object's
 * own client as the tenant unless the command names one).
 */
import { expect } from 'chai';
import { foldEvents, type Decider } from '../../src/domain/decider.ts';
import type { DomainError } from '../../src/domain/errors.ts';
import { expectRefused } from './refused.ts';

type AnyEvent = { type: string; data: unknown };

export interface Decision<Event> {
  /** The events decided are exactly `expected` (deep equality); or `expected` asserts what it needs of them. */
  then(expected: readonly Event[] | ((events: Event[]) => void)): void;
  /** No event: the command changes nothing (a repeat of a step already taken). */
  thenNothingHappened(): void;
  /** The command is refused: a DomainError of `kind` whose message matches. */
  thenThrows(kind: DomainError['kind'], message: RegExp): void;
  /** The events decided (or what `decide` throws), for properties that follow many commands. */
  decided(): Event[];
}

export interface Specification<Written, Event, StreamEvent> {
  given(events: readonly StreamEvent[]): { when(command: Written): Decision<Event> };
}

export const DeciderSpecification = {
  for<Command, Event extends StreamEvent, State, StreamEvent extends AnyEvent = Event, Written = Command>(
    decider: Decider<Command, Event, State, StreamEvent>,
    commandOf: (written: Written) => Command = (written) => written as unknown as Command,
  ): Specification<Written, Event, StreamEvent> {
    return {
      given(events) {
        return {
          when(written) {
            const decided = () => decider.decide(commandOf(written), foldEvents<StreamEvent, State>(decider, events));
            return {
              then(expected) {
                if (typeof expected === 'function') expected(decided());
                else expect(decided()).to.deep.equal(expected);
              },
              thenNothingHappened: () => expect(decided()).to.deep.equal([]),
              thenThrows: (kind, message) => expectRefused(decided, kind, message),
              decided,
            };
          },
        };
      },
    };
  },
};
