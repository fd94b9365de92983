/**
 * The test clocks' reactor: for every advance in the feed, the effects due on the clock up to its new time
 * (./handlers.ts, `runClockEffects`), then the clock marked ready. Run again (a process stopped in between),
 * it finds each effect already recorded (the objects' streams refuse a second expiry or settlement) and the
 * clock ready, and changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { TestClockEventData } from './events.ts';
import { runClockEffects } from './handlers.ts';

export const TEST_CLOCK_REACTOR_NAME = 'test_clock_advance';

export function testClockReactor(platform: Platform): Reactor {
  return {
    name: TEST_CLOCK_REACTOR_NAME,
    handles: ['TestClockAdvanced'],
    async react(event: RecordedEvent) {
      const d = event.data as TestClockEventData<'TestClockAdvanced'>;
      await runClockEffects(platform, d.clockId, new Date(d.to), event.position, event.id);
    },
  };
}
