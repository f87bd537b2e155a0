// The consumer-group pages' logic, kept pure: the listing's and the cursors' queries, the
// cursors grouped by queue, and the seek and delete routes' paths and
// bodies.
import { fromLocalInput } from './instant.js';

export const GROUPS_PAGE = 50;
export const CURSORS_PAGE = 200;
export const QUEUE_MODE = '__QUEUE_MODE__';

const seg = encodeURIComponent;

/**
 * The listing's query for a 1-based page, of one queue's groups (`queue`) and of groups
 * whose name contains `search`, both applied by the broker. It is sorted by group, then
 * queue, and has no total: one row more than the page says whether another follows.
 */
export function groupsPath(page, { queue, search } = {}, size = GROUPS_PAGE) {
  const p = Math.max(1, page);
  const q = new URLSearchParams();
  if (queue !== undefined && queue !== null) q.set('queue', queue);
  if (search) q.set('search', search);
  q.set('limit', String(size + 1));
  q.set('offset', String((p - 1) * size));
  return `/api/v1/consumer-groups?${q}`;
}

/**
 * One page of a group's cursors. The broker picks a page in the order partitions were
 * created and then sorts it by queue and partition, so the extra-row trick cannot say which
 * row is the extra: a full page means another may follow.
 */
export function cursorsPath(group, page, size = CURSORS_PAGE) {
  const p = Math.max(1, page);
  return `/api/v1/consumer-groups/${seg(group)}?limit=${size}&offset=${(p - 1) * size}`;
}

/**
 * The detail's answer (`{queue: {partitions: [...]}}`) as a list of queues, each with its
 * partitions and their sums: messages behind, the oldest unread (seconds), leases held.
 */
export function byQueue(answer) {
  return Object.entries(answer || {}).map(([queue, { partitions = [] }]) => ({
    queue,
    partitions,
    lag: partitions.reduce((n, p) => n + (p.offsetLag || 0), 0),
    maxTimeLag: partitions.reduce((n, p) => Math.max(n, p.timeLagSeconds || 0), 0),
    leases: partitions.filter((p) => p.leaseActive).length,
  }));
}

/** How many cursors a detail page holds (to know whether it is full). */
export function cursorCount(answer) {
  return byQueue(answer).reduce((n, q) => n + q.partitions.length, 0);
}

export function groupLabel(name) {
  return name === QUEUE_MODE ? 'queue mode' : name;
}

/** The state's badge classes: Stable is good, Lagging a warning, Dead (no longer consuming) bad. */
export function stateClass(state) {
  const tone = { Stable: 'ok', Lagging: 'warn', Dead: 'danger' }[state];
  return tone ? `badge badge-${tone}` : 'badge';
}

export function seekQueuePath(group, queue) {
  return `/api/v1/consumer-groups/${seg(group)}/queues/${seg(queue)}/seek`;
}

export function seekPartitionPath(group, queue, partition) {
  return `${seekQueuePath(group, queue).replace(/\/seek$/, '')}/partitions/${seg(partition)}/seek`;
}

/** The whole group, or its cursors on one queue. */
export function deletePath(group, queue) {
  const base = `/api/v1/consumer-groups/${seg(group)}`;
  return queue === undefined ? base : `${base}/queues/${seg(queue)}`;
}

/**
 * The queue seek's body: to the end, or to the instant of a `datetime-local` value (the
 * last message at or before it becomes the cursor); null when the instant is not valid.
 */
export function seekBody(toEnd, local) {
  if (toEnd) return { toEnd: true };
  const timestamp = fromLocalInput(local);
  return timestamp ? { timestamp } : null;
}
