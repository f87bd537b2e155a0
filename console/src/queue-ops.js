// One queue's last hour from its per-minute series (`/analytics/queue-ops?queue=`): what
// was pushed and what its consumers passed, per bucket.

/**
 * The answer as uPlot columns, oldest first, every bucket of the window filled (quiet ones
 * as 0): `times` (bucket starts, Unix seconds), `pushed` and `processed` (messages passed
 * by a cursor, acked or auto-acked) per bucket.
 */
export function opsColumns(answer) {
  const points = answer?.series || [];
  const width = (answer?.bucketMinutes || 1) * 60;
  const from = Date.parse(answer?.timeRange?.from) / 1000;
  const to = Date.parse(answer?.timeRange?.to) / 1000;
  if (Number.isNaN(from) || Number.isNaN(to) || to <= from)
    return { times: [], pushed: [], processed: [] };
  const n = Math.max(1, Math.ceil((to - from) / width));
  const out = {
    times: Array.from({ length: n }, (_, i) => from + i * width),
    pushed: new Array(n).fill(0),
    processed: new Array(n).fill(0),
  };
  for (const p of points) {
    const i = Math.round((Date.parse(p.timestamp) / 1000 - from) / width);
    if (i < 0 || i >= n) continue;
    out.pushed[i] += p.push ?? 0;
    out.processed[i] += p.ack ?? 0;
  }
  return out;
}
