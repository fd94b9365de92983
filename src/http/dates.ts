/** `dd/mm/yyyy` query dates: whole UTC days, both bounds inclusive. A day that does not exist is a 400. */
import { invalidParam } from './errors.ts';

export function parseDay(value: string, parameter: string): Date {
  const match = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(value);
  const day = match ? new Date(Date.UTC(Number(match[3]), Number(match[2]) - 1, Number(match[1]))) : null;
  if (!match || !day || day.getUTCDate() !== Number(match[1]) || day.getUTCMonth() !== Number(match[2]) - 1) {
    throw invalidParam(`query parameter ${parameter} must be a real date as dd/mm/yyyy`);
  }
  return day;
}

/** The half-open range [start of startDate, start of the day after endDate). */
export function dayRange(startDate: string | undefined, endDate: string | undefined): { from?: Date; before?: Date } {
  const from = startDate ? parseDay(startDate, 'startDate') : undefined;
  const last = endDate ? parseDay(endDate, 'endDate') : undefined;
  const before = last ? new Date(last.getTime() + 86_400_000) : undefined;
  if (from && before && from >= before) throw invalidParam('query parameter startDate must not be after endDate');
  return { ...(from ? { from } : {}), ...(before ? { before } : {}) };
}
