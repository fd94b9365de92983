/** Decorates an event store so every append's latency lands in the metrics. */
import type { EventStore } from './port.ts';

export function measureAppends(store: EventStore, observe: (seconds: number) => void): EventStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'append') {
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      const append: EventStore['append'] = async (stream, events, expected) => {
        const started = process.hrtime.bigint();
        try {
          return await target.append(stream, events, expected);
        } finally {
          observe(Number(process.hrtime.bigint() - started) / 1e9);
        }
      };
      return append;
    },
  });
}
