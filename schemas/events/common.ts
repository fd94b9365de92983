/**
 * Building blocks of the stored events' contracts (each context declares its events' schemas in its own
 * `events.ts`). A stored schema says what an event's data holds, not what a request may send: it carries no
 * request bounds (lengths, sizes), so a request rule can change without touching what is stored.
 */

/**
 * A closed object: every property required but those named optional, and no other property. The TypeScript
 * type `FromSchema` derives from it has the same required and optional keys.
 */
export function closed<const P extends Record<string, object>, const O extends readonly (keyof P & string)[] = []>(
  properties: P, optional?: O,
) {
  const skip = new Set<string>(optional ?? []);
  const required = Object.keys(properties).filter((key) => !skip.has(key)) as Array<Exclude<keyof P & string, O[number]>>;
  return { type: 'object', additionalProperties: false, required, properties } as const;
}

export const textSchema = { type: 'string' } as const;
export const nullableTextSchema = { type: ['string', 'null'] } as const;
/** An ISO 8601 instant, as `Date.toISOString()` writes it. */
export const instantSchema = { type: 'string', format: 'date-time' } as const;
/** A decimal amount as stored: a string, canonical at its currency's scale, signed where the event says so. */
export const amountSchema = { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' } as const;
export const nullableAmountSchema = { type: ['string', 'null'], pattern: '^-?\\d+(\\.\\d+)?$' } as const;

/**
 * The object without its undefined properties: a request's optional fields mapped one by one into event data
 * are absent from the stored event when they were absent from the request, as a spread of the request left them.
 */
type DefinedOnly<T> =
  & { [K in keyof T as undefined extends T[K] ? never : K]: T[K] }
  & { [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined> };

export function definedOnly<T extends Record<string, unknown>>(fields: T): DefinedOnly<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as DefinedOnly<T>;
}
