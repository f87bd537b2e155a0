// The tenant at a glance: counts from the stats snapshot (`/resources/overview`, with its
// age), the last hour's throughput from the series and its depth and lag as the stats
// rounds counted them (`/status`), and, for an admin, the brokers of the fleet.
import { useMemo } from 'preact/hooks';
import { LineChart } from '../chart.jsx';
import { Card, EmptyState } from '../components.jsx';
import { Brokers } from '../fleet.jsx';
import { count, duration, rate, statsAge } from '../format.js';
import { useApi } from '../hooks.js';
import { Loaded, Stale } from '../loaded.jsx';
import { href } from '../route.js';
import { levelColumns, throughputColumns } from '../series.js';
import { can, useSession } from '../session.js';

const REFRESH_MS = 5000;
const QUIET = <p class="muted">No traffic in the last hour.</p>;

export function Overview() {
  const { session } = useSession();
  const overview = useApi('/api/v1/resources/overview', { everyMs: REFRESH_MS });
  const status = useApi('/api/v1/status', { everyMs: REFRESH_MS });
  const columns = useMemo(() => throughputColumns(status.data), [status.data]);
  const depth = useMemo(() => levelColumns(status.data, ['pending', 'lagMessages']), [status.data]);
  const lag = useMemo(() => levelColumns(status.data, ['maxTimeLagSeconds']), [status.data]);
  const o = overview.data;
  if (!o) return <Loaded get={overview} />;

  const m = o.messages;
  return (
    <section aria-labelledby="overview-title">
      <header class="page-head">
        <h1 id="overview-title">Overview</h1>
        <span
          class="badge"
          data-testid="stats-age"
          data-value={o.statsAge}
          title="Counts come from the stats snapshot"
        >
          {statsAge(o.statsAge)}
        </span>
      </header>
      <Stale get={overview}> Showing the last answer.</Stale>
      <div class="cards">
        <Card
          id="queues-count"
          label="Queues"
          value={count(o.queues)}
          raw={o.queues}
          hint={<a href={href('/queues')}>list them</a>}
        />
        <Card
          id="partitions-count"
          label="Partitions"
          value={count(o.partitions)}
          raw={o.partitions}
        />
        <Card
          id="messages-total"
          label="Messages"
          value={count(m.total)}
          raw={m.total}
          hint="in the log"
        />
        <Card
          id="messages-pending"
          label="Pending"
          value={count(m.pending)}
          raw={m.pending}
          hint={`${count(m.processing)} processing`}
        />
        <Card
          id="dead-letters"
          label="Dead letters"
          value={count(m.deadLetter)}
          raw={m.deadLetter}
          tone={m.deadLetter > 0 ? 'warn' : undefined}
        />
        <Card
          id="ingested-rate"
          label="In"
          value={rate(o.throughput.ingestedPerSecond)}
          raw={o.throughput.ingestedPerSecond}
          hint="pushed, last 5 min"
        />
        <Card
          id="processed-rate"
          label="Out"
          value={rate(o.throughput.processedPerSecond)}
          raw={o.throughput.processedPerSecond}
          hint="processed, last 5 min"
        />
        <Card
          id="time-lag"
          label="Oldest unconsumed"
          value={duration(o.lag.time.max)}
          raw={o.lag.time.max}
          hint={`the longest a cursor waits; median ${duration(o.lag.time.median)}`}
        />
      </div>
      <div class="panel">
        <div class="panel-head">
          <h2>Throughput, last hour</h2>
          <span class="legend">
            <i class="dot dot-in" /> pushed <i class="dot dot-out" /> processed (messages per
            second)
          </span>
        </div>
        <Loaded get={status} loading={QUIET} empty={!status.data?.throughput?.length && QUIET}>
          <LineChart
            columns={columns}
            series={[
              { label: 'pushed', color: '--accent' },
              { label: 'processed', color: '--ok' },
            ]}
          />
        </Loaded>
      </div>
      <div class="panel-row">
        <div class="panel">
          <div class="panel-head">
            <h2>Depth, last hour</h2>
            <span class="legend">
              <i class="dot dot-in" /> pending <i class="dot dot-warn" /> behind the groups' cursors
            </span>
          </div>
          {!status.data?.depth?.length ? (
            <p class="muted">No stats round in the last hour yet.</p>
          ) : (
            <LineChart
              columns={depth}
              height={180}
              series={[
                { label: 'pending', color: '--accent', spanGaps: true },
                { label: 'behind cursors', color: '--warn', spanGaps: true },
              ]}
            />
          )}
        </div>
        <div class="panel">
          <div class="panel-head">
            <h2>Oldest unconsumed message, last hour</h2>
          </div>
          {!status.data?.depth?.length ? (
            <p class="muted">No stats round in the last hour yet.</p>
          ) : (
            <LineChart
              columns={lag}
              height={180}
              yFormat={duration}
              series={[{ label: 'age', color: '--danger', spanGaps: true }]}
            />
          )}
        </div>
      </div>
      {can(session, 'admin') && <Fleet />}
      {o.queues === 0 && (
        <EmptyState title="No queues yet">
          <p>A queue is created by its first push:</p>
          <pre>
            curl -s {location.origin}/api/v1/push -H 'content-type: application/json' \{'\n'}
            {'  '}-d '{'{'}"items":[{'{'}"queue":"orders","payload":{'{'}"id":1{'}}]}'}'
          </pre>
        </EmptyState>
      )}
    </section>
  );
}

/** The fleet's brokers (an admin route: shown only to admins). */
function Fleet() {
  const fleet = useApi('/api/v1/analytics/worker-metrics', { everyMs: 10000 });
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Brokers</h2>
        <a href={href('/system')}>system</a>
      </div>
      <Brokers fleet={fleet} />
    </div>
  );
}
