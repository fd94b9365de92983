/**
 * A decider is pure: `decide(command, state)` answers the events a command produces (or throws a
 * DomainError), `evolve(state, event)` folds an event into the state. The clock and ids come in the command.
 */
export interface Decider<Command, Event extends { type: string; data: unknown }, State> {
  initialState: State;
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
}

export function foldEvents<Event extends { type: string; data: unknown }, State>(
  decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>, events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState);
}
