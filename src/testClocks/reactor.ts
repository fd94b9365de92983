/**
 * The test clocks' reactor: for every advance in the feed, the effects due on the clock up to its new time
 * (./handlers.ts, `runClockEffects`), then the clock marked ready. Run again (a process stopped in between),
 * it finds each effect already recorded (the objects' streams refuse a second expiry or settlement) and the
 * clock ready, and changes nothing.
 */
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { runClockEffects } from './handlers.ts';

export const TEST_CLOCK_REACTOR_NAME = 'test_clock_advance';

export function testClockReactor(platform: Platform): Reactor {
  return defineReactor<StoredEventData>({
    name: TEST_CLOCK_REACTOR_NAME,
    handlers: {
      async TestClockAdvanced(event) {
        const d = event.data;
        await runClockEffects(platform, d.clockId, new Date(d.to), event.position, event.id);
      },
    },
  });
}
