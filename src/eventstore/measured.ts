/**
 * Decorates an event store so every append's latency lands in the metrics, and `recorded` hears of every
 * successful append with the position it reached. With failpoints set (src/failpoints.ts), an append of an event
 * of type T reaches the failpoint `after-append:T` once it is recorded, before its caller goes on.
 */
import { failpoint, failpointsEnabled } from '../failpoints.ts';
import type { AppendResult, EventStore, NewEvent } from './port.ts';

export function measureAppends(
  store: EventStore, observe: (seconds: number) => void, recorded?: (result: AppendResult, events: readonly NewEvent[]) => void,
): EventStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'append') {
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      const append: EventStore['append'] = async (stream, events, expected) => {
        const started = process.hrtime.bigint();
        try {
          const result = await target.append(stream, events, expected);
          recorded?.(result, events);
          if (failpointsEnabled) for (const event of events) await failpoint(`after-append:${event.type}`);
          return result;
        } finally {
          observe(Number(process.hrtime.bigint() - started) / 1e9);
        }
      };
      return append;
    },
  });
}
