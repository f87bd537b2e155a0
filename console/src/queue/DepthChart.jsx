// The queue's last hour: pushed vs processed per minute from its series (`/analytics/
// queue-ops`), and its backlog as the stats rounds counted it (`/status?queue=`'s `depth`).
// A queue's depth row is written only when its figures change, so the levels are carried
// forward between rows (`queueLevelColumns`); the newest is the snapshot's, as the totals.
import { useMemo } from 'preact/hooks';
import { LineChart } from '../chart.jsx';
import { count } from '../format.js';
import { useApi } from '../hooks.js';
import { Loaded } from '../loaded.jsx';
import { opsColumns } from '../queue-ops.js';
import { queueLevelColumns } from '../series.js';

const REFRESH_MS = 10000;
const LEVELS = ['pending', 'lagMessages', 'deadLetter'];
// A dot on the newest bucket, the level the note names: a queue counted only lately has a
// line too short to see, or none.
const NEWEST = { show: true, size: 7, filter: (u) => [u.data[0].length - 1] };

export function DepthChart({ name }) {
  const ops = useApi(`/api/v1/analytics/queue-ops?queue=${encodeURIComponent(name)}`, {
    everyMs: REFRESH_MS,
  });
  const status = useApi(`/api/v1/status?queue=${encodeURIComponent(name)}`, {
    everyMs: REFRESH_MS,
  });
  const cols = useMemo(() => opsColumns(ops.data), [ops.data]);
  const flow = useMemo(() => [cols.times, cols.pushed, cols.processed], [cols]);
  const depth = useMemo(() => queueLevelColumns(status.data, LEVELS), [status.data]);

  const quiet = ops.data && !cols.pushed.some(Boolean) && !cols.processed.some(Boolean);
  return (
    <div class="panel-row">
      <div class="panel" data-testid="queue-chart">
        <div class="panel-head">
          <h2>Pushed and processed, last hour</h2>
          <span class="legend">
            <i class="dot dot-in" /> pushed <i class="dot dot-out" /> processed (passed by a
            cursor), messages per minute
          </span>
        </div>
        <Loaded
          get={ops}
          inline
          empty={quiet && <p class="muted">No pushes or acks on this queue in the last hour.</p>}
        >
          <LineChart
            columns={flow}
            height={180}
            series={[
              { label: 'pushed', color: '--accent' },
              { label: 'processed', color: '--ok' },
            ]}
          />
        </Loaded>
      </div>
      <div class="panel">
        <div class="panel-head">
          <h2>Depth, last hour</h2>
          <span class="legend">
            <i class="dot dot-in" /> pending <i class="dot dot-warn" /> behind the groups' cursors{' '}
            <i class="dot dot-dead" /> dead letters
          </span>
        </div>
        <Depth status={status} depth={depth} />
      </div>
    </div>
  );
}

function Depth({ status, depth }) {
  if (!status.data?.depth?.length)
    return (
      <Loaded
        get={status}
        inline
        empty={
          <p class="muted" data-testid="depth-none">
            No stats round has counted this queue in the last hour yet.
          </p>
        }
      />
    );
  const [, pending, lag, dead] = depth;
  const last = (col) => col[col.length - 1];
  return (
    <div data-testid="depth-chart">
      <LineChart
        columns={depth}
        height={180}
        series={[
          { label: 'pending', color: '--accent', spanGaps: true, points: NEWEST },
          { label: 'behind cursors', color: '--warn', spanGaps: true, points: NEWEST },
          { label: 'dead letters', color: '--danger', spanGaps: true, points: NEWEST },
        ]}
      />
      <p class="muted panel-note">
        Latest round:{' '}
        <strong data-testid="depth-pending" data-value={last(pending)}>
          {count(last(pending))}
        </strong>{' '}
        pending,{' '}
        <strong data-testid="depth-lag" data-value={last(lag)}>
          {count(last(lag))}
        </strong>{' '}
        behind the cursors,{' '}
        <strong data-testid="depth-dead" data-value={last(dead)}>
          {count(last(dead))}
        </strong>{' '}
        dead letters. A round writes the queue's row only when its figures change, so each level
        holds until the next.
      </p>
    </div>
  );
}
