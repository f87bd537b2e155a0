// Sorting the rows on screen by a column. Lists the broker pages (a queue's partitions)
// are sorted within the page only: ordering all of them is the broker's job (the stats
// snapshot's deepest partitions), never the browser's over every row.
//
// A sort is written `pending` (ascending) or `-pending` (descending), as it sits in the URL.

/** `{key, desc}` of a sort text, or null when it names no column of `keys`. */
export function parseSort(text, keys) {
  if (!text) return null;
  const desc = text.startsWith('-');
  const key = desc ? text.slice(1) : text;
  return keys.includes(key) ? { key, desc } : null;
}

/**
 * The sort after a click on column `key`: the same column flips, another starts in its
 * natural direction (`desc` for counts, where the largest matter first).
 */
export function nextSort(current, key, desc) {
  const now = current?.key === key ? !current.desc : desc;
  return now ? `-${key}` : key;
}

/**
 * A sorted copy of `rows` by `get(row)`: numbers or strings; missing values (null,
 * undefined, NaN) go last either way; ties keep the broker's order.
 */
export function sortRows(rows, get, desc) {
  const missing = (v) => v === null || v === undefined || Number.isNaN(v);
  return rows
    .map((row, i) => ({ row, i, v: get(row) }))
    .sort((a, b) => {
      if (missing(a.v) || missing(b.v)) {
        if (missing(a.v) && missing(b.v)) return a.i - b.i;
        return missing(a.v) ? 1 : -1;
      }
      let c;
      if (typeof a.v === 'string' || typeof b.v === 'string')
        c = String(a.v).localeCompare(String(b.v), 'en', { numeric: true });
      else c = a.v - b.v;
      return (desc ? -c : c) || a.i - b.i;
    })
    .map((x) => x.row);
}
