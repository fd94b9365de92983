/**
 * Bounded memories kept in a Map, whose iteration order is insertion order: an entry set again moves to the newest
 * end, and the oldest goes first when the map is full.
 */

/** Sets `key` to `value` as the newest entry, first dropping the oldest when `map` already holds `max` (entries). */
export function setBounded<K, V>(map: Map<K, V>, max: number, key: K, value: V): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}
