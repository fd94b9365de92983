/**
 * Runs one command against one stream: read the stream, fold it, decide, append with the revision that was
 * read. When another writer got there first, read again and decide again (bounded).
 */
import type { Decider } from '../domain/decider.ts';
import { WrongExpectedRevisionError } from './errors.ts';
import { MAX_READ_LIMIT, type EventMetadata, type EventStore } from './port.ts';
import type { Position } from './position.ts';

const MAX_ATTEMPTS = 5;

export interface CommandResult<Event, State> {
  /** Events this command appended (empty when the decider decided nothing needed to change). */
  events: Event[];
  state: State;
  /** Position of the last appended event, or null when nothing was appended. */
  position: Position | null;
}

export async function handleCommand<Command, Event extends { type: string; data: unknown }, State>(
  store: EventStore,
  stream: string,
  decider: Decider<Command, Event, State>,
  command: Command,
  metadata: EventMetadata,
  options: { expectNewStream?: boolean } = {},
): Promise<CommandResult<Event, State>> {
  for (let attempt = 1; ; attempt++) {
    let state = decider.initialState;
    let revision: bigint | null = null;
    // A command that creates its stream decides first on the empty state and appends with no_stream, sparing
    // the read; when the stream exists after all, the append is refused and the next attempt reads it.
    const skipRead = options.expectNewStream === true && attempt === 1;
    // Read the whole stream, page by page: a state folded from part of it would decide wrongly.
    while (!skipRead) {
      const page = await store.readStream(stream, { fromRevision: revision === null ? 0n : revision + 1n, limit: MAX_READ_LIMIT });
      for (const event of page) state = decider.evolve(state, { type: event.type, data: event.data } as Event);
      if (page.length > 0) revision = page[page.length - 1]!.revision;
      if (page.length < MAX_READ_LIMIT) break;
    }
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, state, position: null };
    try {
      const { position } = await store.append(stream, events.map((e) => ({ type: e.type, data: e.data, metadata })),
        revision ?? 'no_stream');
      for (const event of events) state = decider.evolve(state, event);
      return { events, state, position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < MAX_ATTEMPTS) continue;
      throw error;
    }
  }
}
