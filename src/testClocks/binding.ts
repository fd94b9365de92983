/**
 * Binding a new object to a test clock, before the object is created: the clock's stream counts it (and refuses
 * a clock that is not the caller's, or deleted, as not found), and answers the clock's time, which becomes the
 * object's createdAt and its now for every rule of time (./time.ts).
 */
import { runCommand, streamState } from '../eventstore/streams.ts';
import { deterministicId } from '../eventstore/deterministicId.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { clientTenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import { testClockStreamType, type TestClockState } from './decider.ts';
import { testClockStream, type BoundObjectKind } from './events.ts';
import { onClockMetadata, platformAt } from './time.ts';

export function loadClock(platform: Platform, clockId: string): Promise<TestClockState> {
  return streamState(platform, testClockStreamType, testClockStream(clockId));
}

/**
 * Binds a new object to the client's clock `clockId` (404 when it is not the client's, or deleted; 422 when the
 * clock is full), and answers the clock's time: the object's createdAt, and its now for every rule of time.
 * Binding the same object again changes nothing (one event id per clock and object).
 */
export async function bindToClock(
  platform: Platform, clientId: string, clockId: string, kind: BoundObjectKind, objectId: string, metadata: EventMetadata,
): Promise<Date> {
  const { state } = await runCommand(platform, testClockStreamType, testClockStream(clockId), {
    type: 'BindObject', tenant: clientTenant(clientId), objectId, kind, eventId: deterministicId('test-clock-bound', clockId, objectId),
  }, metadata);
  return new Date(state.frozenTime!);
}

/**
 * Binds `objectId` to `clockId` when a clock is named (the `Test-Clock` header), and answers what the creation
 * runs with: the platform at the clock's time and metadata carrying the clock and that business time. Without a
 * clock, the platform and metadata as they are.
 */
export async function creatingOn(
  platform: Platform, clientId: string, clockId: string | null | undefined, kind: BoundObjectKind, objectId: string, metadata: EventMetadata,
): Promise<{ clockId: string | null; platform: Platform; metadata: EventMetadata }> {
  if (!clockId) return { clockId: null, platform, metadata };
  const at = await bindToClock(platform, clientId, clockId, kind, objectId, metadata);
  return { clockId, platform: platformAt(platform, at), metadata: onClockMetadata(metadata, clockId, at) };
}
