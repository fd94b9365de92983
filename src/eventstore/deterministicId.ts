import { createHash } from 'node:crypto';
import type { Runtime } from '../domain/runtime.ts';
import type { EventMetadata } from './port.ts';

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

/**
 * The request a command runs for, when its caller sent an Idempotency-Key: a digest of the caller, the key and
 * the request (set by the HTTP edge in the command's metadata). Null for a request without a key, and for the
 * service's own work (reactors, jobs), whose ids are derived from what they react to.
 */
export function requestKeyOf(metadata: EventMetadata): string | null {
  return typeof metadata.requestKey === 'string' ? metadata.requestKey : null;
}

/**
 * The id of an object a command creates (`purpose` names which, when a request creates several): derived from the
 * request's key when it has one, so that the same request run again, after a crash or a lost database, names the
 * same object and finds it on its stream instead of creating a second one; otherwise a new id.
 */
export function createdId(runtime: Pick<Runtime, 'newId'>, metadata: EventMetadata, purpose: string): string {
  const requestKey = requestKeyOf(metadata);
  return requestKey === null ? runtime.newId() : deterministicId('created', requestKey, purpose);
}
