import { randomUUID } from 'node:crypto';

/** The clock and the id generator, injected everywhere a command needs them, so tests control both. */
export interface Runtime {
  now(): Date;
  newId(): string;
}

export const systemRuntime: Runtime = {
  now: () => new Date(),
  newId: () => randomUUID(),
};
