// The message browser's filters, as the URL holds them and as `GET /api/v1/messages` takes
// them, and the way a payload is shown: a one-line preview in lists, indented in full.
import { PAGE_SIZE } from './paging.js';
import { href } from './route.js';

/** The statuses the listing computes (spec §10.1); another value would match nothing. */
export const STATUSES = ['pending', 'processing', 'completed', 'dead_letter'];

/** The filters a `#/messages?…` query names, cleaned: unknown statuses and bad times dropped. */
export function filtersOf(query = {}) {
  const text = (k) => (typeof query[k] === 'string' ? query[k].trim() : '');
  const time = (k) => {
    const t = Date.parse(text(k));
    return Number.isNaN(t) ? '' : new Date(t).toISOString();
  };
  return {
    queue: text('queue'),
    partition: text('partition'),
    status: STATUSES.includes(query.status) ? query.status : '',
    from: time('from'),
    to: time('to'),
    page: Math.max(1, Number.parseInt(query.page, 10) || 1),
  };
}

/**
 * The listing's path for the filters' page. The listing has no total, so it asks for one
 * row more than a page: that row only says whether a next page exists. Without `from` and
 * `to` the broker shows the last hour.
 */
export function messagesQuery(f, size = PAGE_SIZE) {
  const q = new URLSearchParams();
  for (const k of ['queue', 'partition', 'status', 'from', 'to']) if (f[k]) q.set(k, f[k]);
  q.set('limit', String(size + 1));
  q.set('offset', String((Math.max(1, f.page || 1) - 1) * size));
  return `/api/v1/messages?${q}`;
}

/** The hash of the list for these filters (page 1 unless `page` says otherwise). */
export function messagesHref(f) {
  return href('/messages', {
    queue: f.queue,
    partition: f.partition,
    status: f.status,
    from: f.from,
    to: f.to,
    page: f.page > 1 ? f.page : undefined,
  });
}

export function messageHref(partitionId, transactionId) {
  return href('/message', { partition: partitionId, tx: transactionId });
}

/**
 * A datetime-local input's value, read as UTC (every time on these pages is UTC, so the
 * inputs are too: what is typed is what the columns show). '' when empty or invalid.
 */
export function isoFromInput(value) {
  if (!value) return '';
  const t = Date.parse(`${value}Z`);
  return Number.isNaN(t) ? '' : new Date(t).toISOString();
}

/** An ISO instant as a datetime-local input's value, in UTC, to the minute. */
export function inputFromIso(iso) {
  const t = Date.parse(iso || '');
  return Number.isNaN(t) ? '' : new Date(t).toISOString().slice(0, 16);
}

/** `2026-12-02 01:14:25` (UTC), or with milliseconds for timelines. */
export function instant(iso, { ms = false } = {}) {
  const t = Date.parse(iso || '');
  if (Number.isNaN(t)) return '—';
  const s = new Date(t).toISOString().replace('T', ' ');
  return ms ? s.slice(0, 23) : s.slice(0, 19);
}

/** A payload on one line, cut to `max` characters: what a row has room for. */
export function preview(payload, max = 80) {
  if (payload === undefined) return '';
  const s = JSON.stringify(payload);
  if (s === undefined) return String(payload);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * A payload in full, indented: valid JSON, so what is copied from the page parses back to
 * the payload the producer pushed (a string payload stays quoted).
 */
export function pretty(payload) {
  const s = JSON.stringify(payload === undefined ? null : payload, null, 2);
  return s === undefined ? 'null' : s;
}

/** A message's trace events oldest first; the broker's order breaks ties (ids grow). */
export function timeline(traces = []) {
  return traces
    .map((t, i) => ({ t, i, at: Date.parse(t.created_at) || 0 }))
    .sort((a, b) => a.at - b.at || a.i - b.i)
    .map(({ t }) => t);
}
