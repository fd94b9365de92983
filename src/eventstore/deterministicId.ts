import { createHash } from 'node:crypto';

/**
 * A UUID (version 8, name-based) derived from its parts: a reactor that derives the ids of the events it
 * appends from the event it reacts to writes the same ids when it runs again, so the repeat is a no-op.
 */
export function deterministicId(...parts: readonly string[]): string {
  const hash = createHash('sha256').update(parts.join('\u001f')).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
