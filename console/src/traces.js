// The trace routes are paged with `limit`/`offset` and answer a `total`, so the pages know
// how many pages there are (unlike the message listing, which asks for a row more).
import { PAGE_SIZE } from './paging.js';

function page(n) {
  return Math.max(1, Number.parseInt(n, 10) || 1);
}

function paged(p, size) {
  return new URLSearchParams({ limit: String(size), offset: String((page(p) - 1) * size) });
}

/** `GET /api/v1/traces/names` for a 1-based page. */
export function namesQuery(p, size = PAGE_SIZE) {
  return `/api/v1/traces/names?${paged(p, size)}`;
}

/** `GET /api/v1/traces/by-name/{name}` for a 1-based page; the name is one path segment. */
export function byNameQuery(name, p, size = PAGE_SIZE) {
  return `/api/v1/traces/by-name/${encodeURIComponent(name)}?${paged(p, size)}`;
}

/** How many pages `total` rows fill (at least one, so "page 1 of 1" when empty). */
export function pageCount(total, size = PAGE_SIZE) {
  return Math.max(1, Math.ceil((Number(total) || 0) / size));
}
