// The dead-letter page's logic, kept pure: the URL's filter, the listing's query, the bulk
// routes' bodies, the selection of rows, and what an answer's verdicts say.
//
// `GET /api/v1/dlq` filters by queue, consumer group, partition, failure time and reason
// (the stored error text, exactly, as the bulk routes `POST /api/v1/dlq/requeue` and
// `/delete` select), and pages with a `total`: the listing and the bulk actions match the
// same dead letters.

export const DLQ_PAGE = 50;
/** At most this many dead letters per bulk call; `more` says others matched. */
export const BULK_LIMIT = 10000;

/** The filter's URL keys, in the order they are described. */
export const FILTER_KEYS = ['queue', 'group', 'partition', 'reason', 'from', 'to'];

/** The filter in a route's query: only the keys set, values exactly as given. */
export function readFilter(query = {}) {
  const f = {};
  for (const k of FILTER_KEYS) if (query[k]) f[k] = query[k];
  return f;
}

export function pageNumber(query = {}) {
  return Math.max(1, Number.parseInt(query.page, 10) || 1);
}

/** The listing's path for a page (1-based) of the filter. */
export function listPath(filter, page = 1, size = DLQ_PAGE) {
  const q = new URLSearchParams();
  if (filter.queue) q.set('queue', filter.queue);
  if (filter.group) q.set('consumerGroup', filter.group);
  if (filter.partition) q.set('partition', filter.partition);
  if (filter.reason) q.set('reason', filter.reason);
  if (filter.from) q.set('from', filter.from);
  if (filter.to) q.set('to', filter.to);
  q.set('limit', String(size));
  q.set('offset', String((Math.max(1, page) - 1) * size));
  return `/api/v1/dlq?${q}`;
}

/**
 * The bulk routes' body for "everything the filter matches". No filter at all is every dead
 * letter of the tenant, which the broker only does when told so (`all: true`).
 */
export function filterBody(filter, dryRun = false) {
  const body = {};
  if (filter.queue) body.queue = filter.queue;
  if (filter.group) body.consumerGroup = filter.group;
  if (filter.partition) body.partition = filter.partition;
  if (filter.reason) body.reason = filter.reason;
  if (filter.from) body.from = filter.from;
  if (filter.to) body.to = filter.to;
  if (Object.keys(body).length === 0) body.all = true;
  if (dryRun) body.dryRun = true;
  return body;
}

/** The bulk routes' body for chosen dead letters. */
export function idsBody(ids) {
  return { ids: [...ids] };
}

/** The filter in words, for a question ("… matching queue “a”, reason “b”?"); null when empty. */
export function describeFilter(filter) {
  const parts = [];
  if (filter.queue) parts.push(`queue “${filter.queue}”`);
  if (filter.group) parts.push(`group “${filter.group}”`);
  if (filter.partition) parts.push(`partition “${filter.partition}”`);
  if (filter.reason) parts.push(`reason “${filter.reason}”`);
  if (filter.from) parts.push(`failed from ${filter.from}`);
  if (filter.to) parts.push(`failed until ${filter.to}`);
  return parts.length ? parts.join(', ') : null;
}

export function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/**
 * What a bulk answer did, item by item: `{ requeued | deleted, duplicate, gone }` counted
 * from its verdicts, and `more` (others matched beyond the call's limit).
 */
export function verdicts(answer) {
  const tally = { requeued: 0, duplicate: 0, gone: 0, deleted: 0 };
  for (const item of answer?.items || []) {
    if (item.verdict in tally) tally[item.verdict]++;
  }
  return { ...tally, more: Boolean(answer?.more) };
}

/** The verdicts in one sentence: "2 requeued, 1 duplicate, 1 gone." (zero counts left out). */
export function verdictText(answer) {
  const v = verdicts(answer);
  const parts = [];
  if (v.requeued) parts.push(`${v.requeued.toLocaleString('en-US')} requeued`);
  if (v.deleted) parts.push(`${v.deleted.toLocaleString('en-US')} deleted`);
  if (v.duplicate) parts.push(`${plural(v.duplicate, 'duplicate')} (already requeued copy)`);
  if (v.gone) parts.push(`${v.gone.toLocaleString('en-US')} gone (already requeued or deleted)`);
  const said = parts.length ? `${parts.join(', ')}.` : 'Nothing matched.';
  return v.more ? `${said} More dead letters match: run it again for the next batch.` : said;
}

// The selection is a Set of deadLetterIds, only ever of rows on the page shown (a new page
// or filter prunes it), so an action on the selection never touches rows out of sight.

export function toggle(selected, id) {
  const next = new Set(selected);
  if (next.has(id)) next.delete(id);
  else next.add(id);
  return next;
}

/** The select-all box's state for the page's ids: 'all', 'some' or 'none'. */
export function pageState(selected, ids) {
  const n = ids.filter((id) => selected.has(id)).length;
  if (n === 0) return 'none';
  return n === ids.length ? 'all' : 'some';
}

/** Every id of the page selected (`on`) or none of them. */
export function selectPage(ids, on) {
  return on ? new Set(ids) : new Set();
}

/** The selection kept to the ids still shown; the same Set when nothing changes. */
export function prune(selected, ids) {
  const shown = new Set(ids);
  if ([...selected].every((id) => shown.has(id))) return selected;
  return new Set([...selected].filter((id) => shown.has(id)));
}

/** A payload as one short line for the table. */
export function preview(data, max = 60) {
  let s;
  try {
    s = JSON.stringify(data);
  } catch {
    s = String(data);
  }
  if (s === undefined) s = String(data);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A failure time to the second (failures come in bursts within a minute), UTC. */
export function failedAt(iso) {
  const d = new Date(iso || '');
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().slice(0, 19).replace('T', ' ');
}
