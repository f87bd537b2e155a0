// The timers page's logic, kept pure: its route (`#/timers`, or `#/timers?queue=…&after=…`
// for one queue's pending timers), the paths it asks (`GET /api/v1/timers`, a queue's page
// by key, a timer's peek and its cancel), what their answers say, a deadline as how far
// away it is, and a peeked payload decoded (the base64 of the message's JSON text). A
// timer's key is any text, `/` included: it is sent whole as one path segment (`%2F`),
// which the broker's `{*timerKey}` takes back decoded. Pages are keyset pages, as the
// key/value page's: `nextAfter` is the key the next page starts after, so there is no
// count of pages and no "previous", only the first page again.
import { duration } from './format.js';
import { href } from './route.js';

/** The timers a page asks for: the broker's default, well under its 1,000 maximum. */
export const TIMERS_PAGE = 100;

/** The queue and keyset position a route names; absent ones are empty. */
export function readTimers(query = {}) {
  return { queue: query.queue || '', after: query.after || '' };
}

/** The queues with pending timers (no queue), or a queue's page after the key `after`. */
export function timersHref({ queue, after } = {}) {
  return href('/timers', { queue, after: queue ? after : undefined });
}

/** A queue's page of pending timers by key, after `after` (exclusive), `size` of them. */
export function listPath({ queue, after }, size = TIMERS_PAGE) {
  const q = new URLSearchParams();
  if (after) q.set('after', after);
  q.set('limit', String(size));
  return `/api/v1/timers/${encodeURIComponent(queue)}?${q}`;
}

/** One timer's path (its peek, its cancel): the key whole, `/` and all, as one segment. */
export function timerPath(queue, key) {
  return `/api/v1/timers/${encodeURIComponent(queue)}/${encodeURIComponent(key)}`;
}

/**
 * The cancel of a timer as shown: only the timer scheduled under the `txn` the row showed,
 * so one rescheduled since (a new `txn`) is kept.
 */
export function cancelPath({ queue, key, txn }) {
  const p = timerPath(queue, key);
  return txn ? `${p}?txn=${encodeURIComponent(txn)}` : p;
}

/** The queues of `GET /api/v1/timers`, by name as the broker sends them. */
export function queuesOf(answer) {
  return Array.isArray(answer?.queues) ? answer.queues : [];
}

/** The rows of a page's answer, and the key the next page starts after (null on the last). */
export function timersPage(answer) {
  const rows = Array.isArray(answer?.rows) ? answer.rows : [];
  // `nextAfter` is only meant when the page was cut short; never a link to an empty page.
  const nextAfter = answer?.truncated && answer.nextAfter ? answer.nextAfter : null;
  return { rows, nextAfter };
}

/**
 * How far away a deadline is from `now` (ms): `in 59 min`, `due now` within a second, and
 * `5 s overdue` for one past (a fire refused, or the firing loop not there yet).
 */
export function fromNow(iso, now = Date.now()) {
  const t = Date.parse(iso || '');
  if (Number.isNaN(t)) return '—';
  const secs = (t - now) / 1000;
  if (Math.abs(secs) < 1) return 'due now';
  return secs > 0 ? `in ${duration(secs)}` : `${duration(-secs)} overdue`;
}

/**
 * A peeked payload: the base64 of the message's JSON text. Answers `{ value }`, the JSON
 * document, or `{ error, text }` when it is not one (the text as far as it decodes).
 */
export function decodePayload(b64) {
  let text;
  try {
    const bin = atob(b64 || '');
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { error: 'The payload is not base64 of UTF-8 text', text: b64 || '' };
  }
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: 'The payload is not a JSON document', text };
  }
}

/**
 * What a peek says about the row it was asked for: `gone` (no pending timer of the key:
 * delivered or cancelled since the list was read), `rescheduled` (pending under another
 * `txn`: the key's new timer is shown), or `same`.
 */
export function peekState(peek, row) {
  if (!peek?.found) return 'gone';
  return row && peek.txn !== row.txn ? 'rescheduled' : 'same';
}

/**
 * What a cancel's answer means: `kind` (`cancelled`; `absent`: no pending timer under the
 * txn shown: delivered, cancelled, or rescheduled since; `too_late`: a fire holds it) and
 * the sentence the page shows.
 */
export function cancelVerdict(result, key) {
  const status = result?.status;
  if (status === 'cancelled')
    return {
      kind: 'cancelled',
      text: `Cancelled “${key}”: its message (${result.messageId}) will not be delivered.`,
    };
  if (status === 'absent')
    return {
      kind: 'absent',
      text: `“${key}” had no pending timer under the txn shown: it was already delivered, cancelled, or rescheduled since (a rescheduled timer has a new txn and is kept). Nothing was cancelled.`,
    };
  if (status === 'too_late')
    return {
      kind: 'too_late',
      text: `Too late for “${key}”: it is firing now, its message being delivered. Nothing was cancelled.`,
    };
  return { kind: 'other', text: `“${key}” was not cancelled (${status || 'no status given'}).` };
}
