/**
 * The one way a write happens: `runCommand` runs a command on a stream through the command handler
 * (./commandHandler.ts), with the stream's one decider, and then waits for the read models as that decider's
 * table says for the command (read-your-writes).
 *
 * A `StreamType` binds a stream's name prefix to its decider and to that table. Every stream the service writes
 * has one (a context lists its own in its manifest, `streams`), and a stream shared by several parts (a payment's
 * stream holds its refunds' and a deposit's facts too) has one decider composed of theirs (`composeParts`), so
 * that a stream is folded one way, whoever decides on it.
 */
import type { Decider } from '../domain/decider.ts';
import { handleCommand, readState, readStateAt, type CommandOptions, type CommandResult, type LastEvent } from './commandHandler.ts';
import type { EventMetadata, EventStore } from './port.ts';
import type { Position } from './position.ts';

/**
 * What a request waits for once a command has appended (read-your-writes, bounded by READ_YOUR_WRITES_TIMEOUT_MS):
 * - `written`: the read models that handle the events the command appended;
 * - `alongside`: the same, started and handed on (the result's `readModels`) for the HTTP edge to await while it
 *   records the request's idempotency answer (a create, whose answer is read back at once);
 * - `all`: every read model (a command whose answer is read back from several of them);
 * - `none`: nothing (a step of a longer flow, which waits once at its end for all its steps; or the service's own
 *   work, which reads its streams, not read models).
 */
export type ReadModelWait = 'written' | 'alongside' | 'all' | 'none';

/** For each command type of a decider, what a request waits for after it: the one place this is chosen. */
export type ReadModelWaits<Command extends { type: string }> = { readonly [Type in Command['type']]: ReadModelWait };

type AnyEvent = { type: string; data: unknown };

/**
 * A decider and its waits: a stream's whole decider, or a part of one (see `composeParts`). `Folded`: every event
 * the stream may hold (its own `Event`s, and a part's neighbours').
 */
export interface StreamPart<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event> {
  decider: Decider<Command, Event, State, Folded>;
  readModels: ReadModelWaits<Command>;
}

export interface StreamType<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event>
  extends StreamPart<Command, Event, State, Folded> {
  /** Every stream of this type is named `<prefix><id>`, and no stream of another type is. */
  prefix: string;
}

/** A stream type of any decider, as the list of every stream type sees it (`any`: the deciders differ). */
export type AnyStreamType = StreamType<any, any, any, any>;

export function streamType<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event>(
  prefix: string, part: StreamPart<Command, Event, State, Folded>,
): StreamType<Command, Event, State, Folded> {
  if (prefix.length === 0) throw new Error('a stream type needs a name prefix');
  return { prefix, decider: part.decider, readModels: part.readModels };
}

/** A part of any decider (`any`: the parts differ; their own types are recovered below). */
type AnyPart = StreamPart<any, any, any, any>;
type CommandOf<P> = P extends StreamPart<infer C, any, unknown, any> ? C : never;
type EventOf<P> = P extends StreamPart<{ type: string }, infer E, unknown, any> ? E : never;
type StateOf<P> = P extends StreamPart<{ type: string }, any, infer S, any> ? S : never;
type FoldedOf<P> = P extends StreamPart<{ type: string }, any, unknown, infer F> ? F : never;

/** The state of a composed stream: each part's own, under the part's name. */
export type ComposedState<Parts extends Record<string, AnyPart>> = { [Name in keyof Parts]: StateOf<Parts[Name]> };

/**
 * One decider of several parts that share a stream: its state holds each part's, a command goes to the part whose
 * table names its type (no two parts may name the same type), and every event of the stream is folded once, by
 * every part (each leaves alone what is not its own). The parts keep their logic where it lives.
 */
export function composeParts<Parts extends Record<string, AnyPart>>(parts: Parts): StreamPart<
  CommandOf<Parts[keyof Parts]>, EventOf<Parts[keyof Parts]>, ComposedState<Parts>, FoldedOf<Parts[keyof Parts]> | EventOf<Parts[keyof Parts]>
> {
  type Command = CommandOf<Parts[keyof Parts]>;
  type Event = EventOf<Parts[keyof Parts]>;
  const names = Object.keys(parts) as Array<keyof Parts & string>;
  const partOf = new Map<string, keyof Parts & string>();
  const readModels: Record<string, ReadModelWait> = {};
  for (const name of names) {
    for (const [type, wait] of Object.entries(parts[name]!.readModels as Record<string, ReadModelWait>)) {
      const other = partOf.get(type);
      if (other !== undefined) throw new Error(`command ${type} is both ${other}'s and ${name}'s: a stream's command has one decider`);
      partOf.set(type, name);
      readModels[type] = wait;
    }
  }
  const initialState = Object.fromEntries(names.map((name) => [name, parts[name]!.decider.initialState])) as ComposedState<Parts>;
  const decider: Decider<Command, Event, ComposedState<Parts>, FoldedOf<Parts[keyof Parts]> | Event> = {
    initialState,
    decide(command, state) {
      const name = partOf.get(command.type);
      if (name === undefined) throw new Error(`no part of this stream decides ${command.type}`);
      return parts[name]!.decider.decide(command, state[name]);
    },
    evolve(state, event) {
      let next: ComposedState<Parts> | null = null;
      for (const name of names) {
        const folded = parts[name]!.decider.evolve(state[name], event);
        if (folded !== state[name]) (next ??= { ...state })[name] = folded;
      }
      return next ?? state;
    },
  };
  return { decider, readModels: readModels as ReadModelWaits<Command> };
}

const settled = Promise.resolve();

/** What running a command needs: the store, and the read models to wait for. */
export interface CommandPorts {
  storage: { store: EventStore };
  /** Waits (bounded) until the read models that handle `eventTypes` (all of them, without) have passed `position`. */
  readYourWrites(position: Position | null, eventTypes?: readonly string[]): Promise<void>;
}

/**
 * The ports of a process that runs no read models (the CLI with the service stopped, the store alone): there is
 * none to wait for, so its commands answer once appended.
 */
export function storeOnly(store: EventStore): CommandPorts {
  return { storage: { store }, readYourWrites: () => settled };
}

function mustName(on: AnyStreamType, stream: string): void {
  if (!stream.startsWith(on.prefix)) throw new Error(`stream ${stream} is not a ${on.prefix}… stream: another decider decides it`);
}

export interface CommandOutcome<Event, State> extends CommandResult<Event, State> {
  /**
   * The read models catching up with the command (never rejects): settled already unless the command's wait is
   * `alongside`, when the caller hands it on to the HTTP edge (HandlerResult's `readModels`).
   */
  readModels: Promise<void>;
}

/**
 * Runs `command` on `stream` with its type's decider (through `handleCommand`: queued per stream, retried on a
 * concurrent write, exactly once under an Idempotency-Key), then waits for the read models as the type's table says
 * for the command. `command` may be a function of the state, as for `handleCommand`.
 */
export async function runCommand<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event>(
  ports: CommandPorts, on: StreamType<Command, Event, State, Folded>, stream: string, command: Command | ((state: State) => Command),
  metadata: EventMetadata, options: CommandOptions = {},
): Promise<CommandOutcome<Event, State>> {
  mustName(on, stream);
  let asked: Command['type'] | null = typeof command === 'function' ? null : command.type;
  const decided = typeof command === 'function'
    ? (state: State) => {
      const made = command(state);
      asked = made.type;
      return made;
    }
    : command;
  const result = await handleCommand(ports.storage.store, stream, on.decider, decided, metadata, options);
  const wait: ReadModelWait = asked === null ? 'none' : on.readModels[asked];
  if (wait === 'none' || result.position === null) return { ...result, readModels: settled };
  const readModels = ports.readYourWrites(result.position, wait === 'all' ? undefined : result.events.map((event) => event.type));
  if (wait !== 'alongside') await readModels;
  return { ...result, readModels };
}

/** The state of `stream` as its type's decider folds it, as a command would decide on it now. */
export function streamState<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event>(
  ports: Pick<CommandPorts, 'storage'>, on: StreamType<Command, Event, State, Folded>, stream: string,
): Promise<State> {
  mustName(on, stream);
  return readState(ports.storage.store, stream, on.decider);
}

/** `streamState`, and the stream's last event (null for an empty stream): what a read of its effects waits for. */
export function streamStateAt<Command extends { type: string }, Event extends Folded, State, Folded extends AnyEvent = Event>(
  ports: Pick<CommandPorts, 'storage'>, on: StreamType<Command, Event, State, Folded>, stream: string,
): Promise<{ state: State; last: LastEvent | null }> {
  mustName(on, stream);
  return readStateAt(ports.storage.store, stream, on.decider);
}
