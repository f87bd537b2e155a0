// One queue's last hour from its per-minute series (`/analytics/queue-ops?queue=`): what
// was pushed and what its consumers passed, per bucket, and the depth over the hour.
//
// The broker keeps no depth series: only the stats snapshot's pending count now. The depth
// is derived backwards from it: a bucket ends with the depth of the next bucket's end, less
// what that next bucket pushed, plus what its cursors passed. That is exact only while the
// series sees everything that moves the backlog, so `derivable` says when it does not.

/**
 * The answer as uPlot columns, oldest first, every bucket of the window filled (quiet ones
 * as 0): `times` (bucket starts, Unix seconds), `pushed` and `processed` (messages passed
 * by a cursor, acked or auto-acked) per bucket, `expired` in all, and `width` in seconds.
 */
export function opsColumns(answer) {
  const points = answer?.series || [];
  const width = (answer?.bucketMinutes || 1) * 60;
  const from = Date.parse(answer?.timeRange?.from) / 1000;
  const to = Date.parse(answer?.timeRange?.to) / 1000;
  if (Number.isNaN(from) || Number.isNaN(to) || to <= from)
    return { times: [], pushed: [], processed: [], expired: 0, width };
  const n = Math.max(1, Math.ceil((to - from) / width));
  const out = {
    times: Array.from({ length: n }, (_, i) => from + i * width),
    pushed: new Array(n).fill(0),
    processed: new Array(n).fill(0),
    expired: 0,
    width,
  };
  for (const p of points) {
    out.expired += p.expired ?? 0;
    const i = Math.round((Date.parse(p.timestamp) / 1000 - from) / width);
    if (i < 0 || i >= n) continue;
    out.pushed[i] += p.push ?? 0;
    out.processed[i] += p.ack ?? 0;
  }
  return out;
}

/**
 * Why the depth cannot be derived from the series, or null when it can. `groups` is the
 * number of consumer groups with cursors on the queue: pending is the furthest-behind
 * group's backlog while `processed` sums every group's progress, so with two or more the
 * subtraction mixes groups. Messages deleted by retention leave the backlog outside the
 * pushes and acks. A queue never counted has no pending to start from.
 */
export function derivable({ groups, expired, statsAge }) {
  if (statsAge === null || statsAge === undefined || statsAge < 0)
    return 'the stats snapshot has not counted this queue yet';
  if (groups > 1)
    return `${groups} consumer groups read this queue: the series sums their progress, the backlog is the furthest-behind one's`;
  if (expired > 0)
    return 'retention deleted messages in this hour, which the series does not place';
  return null;
}

/**
 * The depth at the end of each bucket, given `pending` counted at `at` (Unix seconds): the
 * bucket holding `at` ends with `pending` (the snapshot is taken within it, so this is
 * right to within a bucket's traffic), earlier ones backwards, later ones forwards. A
 * negative depth is impossible, so it means something the series does not see moved the
 * backlog (a clear, a seek, a deleted message): those points are clamped to 0.
 */
export function derivedDepth({ times, pushed, processed, width }, pending, at) {
  const n = times.length;
  if (!n) return [];
  let k = Math.floor((at - times[0]) / width);
  k = Math.min(n - 1, Math.max(0, k));
  const depth = new Array(n);
  depth[k] = pending;
  for (let i = k; i > 0; i--) depth[i - 1] = depth[i] - pushed[i] + processed[i];
  for (let i = k; i < n - 1; i++) depth[i + 1] = depth[i] + pushed[i + 1] - processed[i + 1];
  return depth.map((d) => Math.max(0, d));
}
