/**
 * The `service-api-version` header of GET /payments and GET /checkout-sessions: absent or empty is v1 (flat
 * records), `24-04-2025` is v2 (the detailed shapes). Anything else is refused rather than guessed.
 */
import type { Request } from 'express';
import { invalidParam } from './errors.ts';

export const API_VERSION_HEADER = 'service-api-version';
export const V2_DATE = '24-04-2025';
export type ApiVersion = 1 | 2;

export function parseApiVersion(value: string | undefined): ApiVersion {
  const trimmed = value?.trim() ?? '';
  if (trimmed === '') return 1;
  if (trimmed === V2_DATE) return 2;
  throw invalidParam(`header ${API_VERSION_HEADER} must be empty (v1) or ${V2_DATE} (v2), got ${JSON.stringify(trimmed.slice(0, 40))}`);
}

export function apiVersionOf(req: Request): ApiVersion {
  return parseApiVersion(req.get(API_VERSION_HEADER));
}

export const apiVersionHeaderDoc = {
  name: API_VERSION_HEADER,
  description: `empty or absent: v1 (flat records); ${V2_DATE}: v2 (detailed shapes); anything else: 400`,
  schema: { type: 'string', enum: ['', V2_DATE], examples: [V2_DATE] },
} as const;
