/**
 * Lists: `limit` (default 50, at most 500) and `offset`, or `cursor` (the `next` of a previous page) where the
 * interface names one. Answers `{pagination: {count, next, previous, total}, results}` where `next` is the
 * offset of the following page (equal to `total` on the last page) and `previous` that of the page before.
 */
import type { Pagination } from '../../schemas/common.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export interface PageRequest {
  limit: number;
  offset: number;
}

export interface PageQuery {
  limit?: number;
  offset?: number;
  cursor?: string;
}

export function pageRequest(query: PageQuery): PageRequest {
  const limit = Math.min(Math.max(query.limit ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
  const offset = query.cursor !== undefined ? Number(query.cursor) : query.offset ?? 0;
  return { limit, offset: Math.max(0, offset) };
}

export function pageOfResults<T>(results: T[], total: number, page: PageRequest): { pagination: Pagination; results: T[] } {
  return {
    pagination: {
      count: results.length,
      next: Math.min(page.offset + page.limit, Math.max(total, page.offset)),
      previous: Math.max(page.offset - page.limit, 0),
      total,
    },
    results,
  };
}
