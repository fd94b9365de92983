import type { ExpectedRevision } from './port.ts';

export class WrongExpectedRevisionError extends Error {
  override readonly name = 'WrongExpectedRevisionError';
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    /** The stream's revision when the append was refused, or 'no_stream'. */
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${stream}: expected revision ${String(expected)}, actual ${String(actual)}`);
  }
}

/** An event id already recorded on another stream or at another place: not a harmless re-append. */
export class DuplicateEventIdError extends Error {
  override readonly name = 'DuplicateEventIdError';
  constructor(readonly stream: string, readonly ids: readonly string[]) {
    super(`stream ${stream}: event ids already recorded elsewhere: ${ids.join(', ')}`);
  }
}
