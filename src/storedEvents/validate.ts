/** Checks an event's data against its type's stored schema (tests run every event a realistic run appends through it). */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { EventContracts } from '../eventstore/upcasting.ts';

// ajv-formats is CommonJS with a default export; under ESM interop it may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export function eventDataValidator(contracts: EventContracts): (type: string, data: unknown) => string | null {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }));
  const validators = new Map<string, ValidateFunction>(contracts.types().map((type) => [type, ajv.compile(contracts.schemaOf(type))]));
  return (type, data) => {
    const validate = validators.get(type);
    if (!validate) return `${type} is not a registered stored event type`;
    if (validate(data)) return null;
    return ajv.errorsText(validate.errors, { dataVar: `${type}.data` });
  };
}
