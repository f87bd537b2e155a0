// The queue's last hour: pushed vs processed per minute from its series, and the depth
// derived backwards from the snapshot's pending count (`depth.js`), labelled as derived;
// when the series cannot account for the backlog, the chart says why instead.
import { useMemo } from 'preact/hooks';
import { LineChart } from '../chart.jsx';
import { ErrorState } from '../components.jsx';
import { derivable, derivedDepth, opsColumns } from '../depth.js';
import { count } from '../format.js';
import { useApi } from '../hooks.js';

export function DepthChart({ name, pending, statsAge, groups, theme, epoch, onToken }) {
  const ops = useApi(`/api/v1/analytics/queue-ops?queue=${encodeURIComponent(name)}`, {
    epoch,
    everyMs: 10000,
  });
  const cols = useMemo(() => opsColumns(ops.data), [ops.data]);
  const flow = useMemo(() => [cols.times, cols.pushed, cols.processed], [cols]);
  const why =
    groups === null
      ? 'waiting for the consumer groups'
      : derivable({ groups, expired: cols.expired, statsAge });
  const depth = useMemo(() => {
    if (why || !cols.times.length) return null;
    // The snapshot counted `statsAge` seconds before now; each depth point is a bucket's end.
    const at = Date.now() / 1000 - statsAge;
    return [cols.times.map((t) => t + cols.width), derivedDepth(cols, pending, at)];
  }, [cols, why, pending, statsAge]);

  const quiet = ops.data && !cols.pushed.some(Boolean) && !cols.processed.some(Boolean);
  return (
    <div class="panel" data-testid="queue-chart">
      <div class="panel-head">
        <h2>Last hour</h2>
        <span class="legend">
          <i class="dot dot-in" /> pushed <i class="dot dot-out" /> processed (passed by a cursor),
          messages per minute
        </span>
      </div>
      {ops.error && !ops.data ? (
        <ErrorState error={ops.error} onToken={onToken} onRetry={ops.reload} />
      ) : !ops.data ? (
        <div class="muted">Loading…</div>
      ) : quiet ? (
        <p class="muted">No pushes or acks on this queue in the last hour.</p>
      ) : (
        <LineChart
          columns={flow}
          theme={theme}
          height={180}
          series={[
            { label: 'pushed', color: '--accent' },
            { label: 'processed', color: '--ok' },
          ]}
        />
      )}
      <div class="panel-head depth-head">
        <h3>Depth (derived)</h3>
        <span class="legend">
          <i class="dot dot-depth" /> pending at each minute's end, derived backwards from the
          snapshot's {count(pending)} and the counts above, not measured
        </span>
      </div>
      {depth ? (
        <div
          data-testid="depth-chart"
          data-first={depth[1][0]}
          data-last={depth[1][depth[1].length - 1]}
        >
          <LineChart
            columns={depth}
            theme={theme}
            height={160}
            series={[{ label: 'depth (derived)', color: '--warn' }]}
          />
          <p class="muted panel-note">
            Clears, seeks and deleted messages are not in the series: after one, the derived line is
            off by what they moved (it never goes below 0).
          </p>
        </div>
      ) : (
        <p class="muted" data-testid="depth-none">
          No depth line: {why || 'no series yet'}. The broker keeps no depth series, only the
          pending count now.
        </p>
      )}
    </div>
  );
}
