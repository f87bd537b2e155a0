// The queue listing has `limit` and `offset` but no total: a page asks for one row more
// than it shows, and that row only says whether there is a next page.

export const PAGE_SIZE = 50;

/** The listing's query for a 1-based page and a search text. */
export function listingQuery(page, search, size = PAGE_SIZE) {
  const p = Math.max(1, Number.parseInt(page, 10) || 1);
  const q = new URLSearchParams({ limit: String(size + 1), offset: String((p - 1) * size) });
  if (search) q.set('search', search);
  return `/api/v1/resources/queues?${q}`;
}

/** The rows to show and whether more follow. */
export function pageOf(rows, size = PAGE_SIZE) {
  return { rows: rows.slice(0, size), more: rows.length > size };
}
