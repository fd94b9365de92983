/**
 * A decider is pure: `decide(command, state)` answers the events a command produces (or throws a
 * DomainError), `evolve(state, event)` folds an event into the state. The clock and ids come in the command.
 *
 * `Folded` is every event its stream may hold: its own `Event`s, and those of another decider that shares the
 * stream (a payment's stream also holds its refunds' and, for a deposit, the deposit's events).
 */
export interface Decider<
  Command, Event extends { type: string; data: unknown }, State, Folded extends { type: string; data: unknown } = Event,
> {
  initialState: State;
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Folded): State;
}

export function foldEvents<Event extends { type: string; data: unknown }, State>(
  decider: Pick<Decider<unknown, Event, State, Event>, 'initialState' | 'evolve'>, events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState);
}
