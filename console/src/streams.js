// The Streams pages' logic, kept pure: the queries listed and filtered in the page (the
// broker answers them all), a query's partitions paged by the broker (which answers a
// total), and the state browser's keys. The SDK writes a state key as its parts joined by
// the unit separator (U+001F): the operator's tag, the user's key, the window's start.
// The separator is invisible, so the pages show it as ` · ` and read ` · ` typed in a
// prefix back as the separator (as `␟`, its Unicode symbol, which few fonts draw).
import { PAGE_SIZE } from './paging.js';
import { href } from './route.js';

export const SEP = '\u001f';
/** How the separator is shown, and typed: a middle dot between spaces. */
export const SEP_SHOWN = ' \u00b7 ';

/** The state rows a read asks for unless the URL says more; at most what one read answers. */
export const STATE_LIMIT = 100;
export const MAX_STATE_LIMIT = 10000;

const seg = encodeURIComponent;

function page(n) {
  return Math.max(1, Number.parseInt(n, 10) || 1);
}

/** A key's parts, as the SDK joined them (one part when it holds no separator). */
export function keyParts(key) {
  return String(key ?? '').split(SEP);
}

/** A key (or a prefix) as it is shown and typed: each separator as ` · `. */
export function shownKey(key) {
  return String(key ?? '')
    .split(SEP)
    .join(SEP_SHOWN);
}

/**
 * A prefix as typed into the filter, as the broker matches it: ` · ` (a middle dot between
 * spaces; at the end, the space after it may be missing), `␟` (U+241F), and the escapes
 * `\u001f` and `\x1f` (any case), are the separator; anything else is itself, a middle
 * dot without its spaces too.
 */
export function prefixOf(text) {
  return String(text ?? '').replace(/ \u00b7 | \u00b7$|\u241f|\\u001f|\\x1f/gi, SEP);
}

/**
 * The operator tags the keys of `rows` start with (the part before the first separator),
 * each as the prefix that selects its rows (`tag` + separator), sorted, without repeats.
 * `seen` are prefixes found before (on an earlier, wider read), kept in the answer.
 */
export function tagPrefixes(rows = [], seen = []) {
  const out = new Set(seen);
  for (const r of rows) {
    const k = String(r?.key ?? '');
    const i = k.indexOf(SEP);
    if (i > 0) out.add(k.slice(0, i + 1));
  }
  return [...out].sort();
}

/** The state rows a page asks for: the URL's `limit`, else 100, within 1..10,000. */
export function stateLimit(limit) {
  const n = Number.parseInt(limit, 10);
  if (!Number.isFinite(n) || n < 1) return STATE_LIMIT;
  return Math.min(n, MAX_STATE_LIMIT);
}

/** The next, larger read for "show more": ten times the rows, at most 10,000. */
export function moreLimit(limit) {
  return Math.min(stateLimit(limit) * 10, MAX_STATE_LIMIT);
}

/**
 * The body of `POST /streams/v1/state/get` for a partition's rows starting with `prefix`
 * (all of them when empty), `limit` of them. The read has no offset: it asks for one row
 * more than it shows (while under the broker's maximum), which only says that more match.
 */
export function stateBody({ queryId, partitionId, prefix, limit }) {
  const n = stateLimit(limit);
  const body = { query_id: queryId, partition_id: partitionId, keys: [] };
  if (prefix) body.key_prefix = prefix;
  body.limit = Math.min(n + 1, MAX_STATE_LIMIT);
  return body;
}

/** The rows to show of a state answer, and whether more match than were shown. */
export function stateRows(answer, limit) {
  const n = stateLimit(limit);
  const rows = answer?.rows || [];
  return { rows: rows.slice(0, n), more: rows.length > n };
}

/**
 * The queries whose name, source or sink queue contains `search` (any letter case); the
 * list page filters in the page, as the broker answers every query at once.
 */
export function filterQueries(queries = [], search = '') {
  const s = search.trim().toLowerCase();
  if (!s) return queries;
  return queries.filter((q) =>
    [q.name, q.source_queue, q.sink_queue].some((v) => v?.toLowerCase().includes(s)),
  );
}

/** One page (1-based) of a list held whole, and how many pages it makes. */
export function slicePage(rows = [], p, size = PAGE_SIZE) {
  const pages = Math.max(1, Math.ceil(rows.length / size));
  const at = page(p);
  return { rows: rows.slice((at - 1) * size, at * size), page: at, pages };
}

/** `GET /streams/v1/queries/{id}/partitions` for a 1-based page. */
export function partitionsQuery(queryId, p, size = PAGE_SIZE) {
  const q = new URLSearchParams({ limit: String(size), offset: String((page(p) - 1) * size) });
  return `/streams/v1/queries/${seg(queryId)}/partitions?${q}`;
}

export function queryHref(queryId, p) {
  return href('/stream', { id: queryId, page: page(p) > 1 ? page(p) : undefined });
}

/**
 * The state browser of one partition (`name`, its name, only for the heading), with its
 * prefix and a limit other than the default.
 */
export function stateHref(queryId, partitionId, { name, prefix, limit } = {}) {
  const n = stateLimit(limit);
  return href('/stream-state', {
    id: queryId,
    partition: partitionId,
    name: name || undefined,
    prefix: prefix || undefined,
    limit: n === STATE_LIMIT ? undefined : n,
  });
}

/**
 * The prefixes a key's parts select, one per part but the last: each is the key up to and
 * including the separator after that part (`agg·`, then `agg·user-1·` for a window key, `·` the separator).
 */
export function partPrefixes(key) {
  const parts = keyParts(key);
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join(SEP) + SEP);
}
