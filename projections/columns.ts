/**
 * Column types the read models share (kysely `ColumnType<read, insert, update>`): how a value is written and
 * how a query reads it back.
 */
import type { ColumnType } from 'kysely';

/** A timestamptz written as the event's ISO-8601 string, read back as a Date. */
export type Instant = ColumnType<Date, string, string>;
export type NullableInstant = ColumnType<Date | null, string | null, string | null>;

/** A jsonb column written as JSON text, read back parsed. */
export type Json<T> = ColumnType<T, string, string>;
