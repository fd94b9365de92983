/**
 * The `Test-Clock` header of the creating requests (sandbox): the id of a test clock of the caller that the new
 * object is bound to, or none. A malformed id is refused here (400); one that names no clock of the caller is
 * refused by the clock's own stream when the object is bound (404), before anything is created.
 */
import type { Request } from 'express';
import { TEST_CLOCK_HEADER } from '../../schemas/testClocks.ts';
import { invalidParam } from './errors.ts';

const CLOCK_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function testClockOf(req: Request): string | null {
  const value = req.get(TEST_CLOCK_HEADER)?.trim();
  if (value === undefined || value === '') return null;
  if (!CLOCK_ID.test(value)) throw invalidParam(`header ${TEST_CLOCK_HEADER} must be a test clock id (1 to 64 letters, digits, - or _)`);
  return value;
}

export { testClockHeaderDoc } from '../../schemas/testClocks.ts';
