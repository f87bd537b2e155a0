// `/api/v1/status` lists only the buckets that saw traffic, newest first, with ISO
// timestamps; uPlot wants columns, oldest first, in Unix seconds. Every bucket of the
// window is filled (quiet ones as 0) so the chart spans the hour and lines do not bridge
// gaps. Buckets start at the window's `from` (timeRange) and are `bucketMinutes` wide, so
// a point's bucket is its distance from `from` in widths.

export function throughputColumns(status) {
  const points = status?.throughput || [];
  const width = (status?.bucketMinutes || 1) * 60;
  const times = points.map((p) => Date.parse(p.timestamp) / 1000);
  let from = Date.parse(status?.timeRange?.from) / 1000;
  let to = Date.parse(status?.timeRange?.to) / 1000;
  if (Number.isNaN(from) || Number.isNaN(to)) {
    if (!points.length) return [[], [], []];
    from = Math.min(...times);
    to = Math.max(...times);
  }
  const n = Math.max(1, Math.ceil((to - from) / width));
  const cols = [
    Array.from({ length: n }, (_, i) => from + i * width),
    new Array(n).fill(0),
    new Array(n).fill(0),
  ];
  points.forEach((p, k) => {
    const i = Math.round((times[k] - from) / width);
    if (i < 0 || i >= n) return;
    cols[1][i] += p.ingestedPerSecond ?? 0;
    cols[2][i] += p.processedPerSecond ?? 0;
  });
  return cols;
}

/**
 * Levels (depth, lag) per bucket from `/api/v1/status`'s `depth`, in columns as
 * `throughputColumns`: a bucket without a stats round is `null`, so the chart bridges it
 * (`spanGaps`) instead of drawing a drop to zero that never happened.
 */
export function levelColumns(status, keys) {
  const points = status?.depth || [];
  const width = (status?.bucketMinutes || 1) * 60;
  const from = Date.parse(status?.timeRange?.from) / 1000;
  const to = Date.parse(status?.timeRange?.to) / 1000;
  if (Number.isNaN(from) || Number.isNaN(to)) return [[], ...keys.map(() => [])];
  const n = Math.max(1, Math.ceil((to - from) / width));
  const cols = [
    Array.from({ length: n }, (_, i) => from + i * width),
    ...keys.map(() => new Array(n).fill(null)),
  ];
  for (const p of points) {
    const i = Math.round((Date.parse(p.timestamp) / 1000 - from) / width);
    if (i < 0 || i >= n) continue;
    keys.forEach((k, j) => {
      cols[j + 1][i] = p[k] ?? null;
    });
  }
  return cols;
}

/**
 * A level column with every bucket after the first known point filled with the last value
 * before it. A queue's depth row is written only when a stats round counts new figures, so
 * a bucket without one held the same level; the buckets before the first point stay
 * `null` (the queue, or its history, did not exist yet).
 */
export function carryForward(values) {
  let last = null;
  return values.map((v) => {
    if (v !== null && v !== undefined) last = v;
    return last;
  });
}

/** `levelColumns` for one queue: its levels carried forward (`carryForward`). */
export function queueLevelColumns(status, keys) {
  const [times, ...levels] = levelColumns(status, keys);
  return [times, ...levels.map(carryForward)];
}
