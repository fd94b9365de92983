/**
 * A unique key (an account number, a client's document number) claimed by one owner on a stream of its own, pure:
 * the stream is the key's, so two owners can never hold it at once, whatever the read models say and on every
 * store. A claim of a key held by another is refused; of a key its owner holds, a repeat (nothing recorded); a
 * release gives it back (only a key that can be given back has a `released` event).
 *
 * One decider for every kind of key: each kind names its events (their stored types and data are its own, and
 * stay as they are) and the words of a refusal.
 */
import type { Decider } from './decider.ts';
import { domainConflict } from './errors.ts';

export type ReservationCommand<Key> =
  /** `eventId`: the reservation's id, when the caller derives it (a retried request finds its own). */
  | { type: 'ClaimKey'; key: Key; owner: string; now: Date; eventId?: string }
  /**
   * `atRevision`: give back only the claim recorded there, if it is still the stream's last event (not a claim the
   * same owner made again since). `eventId`: the caller's deterministic id for the release.
   */
  | { type: 'ReleaseKey'; key: Key; owner: string; now: Date; atRevision?: number; eventId?: string };

/** Who holds the key, if anyone, and the revision of the stream's last event (-1: none). */
export interface ReservationState {
  holder: string | null;
  revision: number;
}

/** A kind of key: its events, and how a refusal reads. */
export interface ReservationKind<Key, Event extends { type: string; data: unknown }> {
  /** The event recording that `owner` holds `key`. */
  claimed(key: Key, owner: string, at: Date): Event;
  /** The event recording that `owner` gave `key` back; null for a key held for ever. */
  released: ((key: Key, owner: string, at: Date) => Event) | null;
  /** Of an event of this kind: whether it claims or gives back the key, and for whom. */
  read(event: Event): { claimedBy: string } | { releasedBy: string };
  /** The refusal's words, when `holder` holds `key`. */
  taken(key: Key, holder: string): string;
}

export function reservationDecider<Key, Event extends { type: string; data: unknown }>(
  kind: ReservationKind<Key, Event>,
): Decider<ReservationCommand<Key>, Event, ReservationState> {
  const withId = (event: Event, id: string | undefined): Event => (id ? { ...event, id } : event);
  return {
    initialState: { holder: null, revision: -1 },

    decide(command, state) {
      switch (command.type) {
        case 'ClaimKey':
          if (state.holder === command.owner) return [];
          if (state.holder !== null) throw domainConflict(kind.taken(command.key, state.holder));
          return [withId(kind.claimed(command.key, command.owner, command.now), command.eventId)];
        case 'ReleaseKey':
          if (kind.released === null) throw new Error('this kind of key is held for ever; it is never given back');
          if (state.holder !== command.owner) return [];
          if (command.atRevision !== undefined && state.revision !== command.atRevision) return [];
          return [withId(kind.released(command.key, command.owner, command.now), command.eventId)];
      }
    },

    evolve(state, event) {
      const fact = kind.read(event);
      const holder = 'claimedBy' in fact ? fact.claimedBy : state.holder === fact.releasedBy ? null : state.holder;
      return { holder, revision: state.revision + 1 };
    },
  };
}
