// The brokers of the fleet, as their samples say (`/api/v1/analytics/worker-metrics`'s
// `workers`, admin): every broker writes one every few seconds, so any broker can answer
// for all of them. Shown on the overview and, with each pool's detail, on the system page.
import { bytes, count, date, percent } from './format.js';
import { Loaded } from './loaded.jsx';

/**
 * The brokers of a `worker-metrics` answer (`fleet`, a `useApi`), or why none are shown;
 * `pools`: optional, the last pool figures per worker id (from `system-metrics`).
 */
export function Brokers({ fleet, pools }) {
  const workers = fleet.data?.workers;
  return (
    <Loaded
      get={fleet}
      inline
      failed={(e) => <p class="stale">The brokers could not be read: {e.message}.</p>}
      empty={
        workers?.length === 0 && (
          <p class="muted">No broker has written a sample in the last hour.</p>
        )
      }
    >
      <BrokerTable workers={workers} pools={pools} />
    </Loaded>
  );
}

function BrokerTable({ workers, pools }) {
  return (
    <table class="grid" data-testid="brokers">
      <thead>
        <tr>
          <th scope="col">Broker</th>
          <th scope="col">Last sample (UTC)</th>
          <th scope="col" class="num">
            CPU
          </th>
          <th scope="col" class="num">
            Memory (RSS)
          </th>
          <th scope="col" class="num">
            DB connections
          </th>
          {pools && (
            <th scope="col" class="num">
              Pool busy / size
            </th>
          )}
          {pools && (
            <th scope="col" class="num">
              Waiting for a connection
            </th>
          )}
          <th scope="col" class="num">
            Messages (hour)
          </th>
        </tr>
      </thead>
      <tbody>
        {workers.map((w) => {
          const pool = pools?.[w.workerId];
          return (
            <tr key={w.workerId} tabIndex={0} data-broker={`${w.hostname}:${w.port}`}>
              <td class="name" title={w.workerId}>
                {w.hostname}:{w.port}
              </td>
              <td>{date(w.lastSeen)}</td>
              <td class="num">{percent(w.cpuPercent)}</td>
              <td class="num" data-testid="broker-rss" data-value={w.rssBytes}>
                {bytes(w.rssBytes)}
              </td>
              <td class="num">{count(w.dbConnections)}</td>
              {pools && (
                <td class="num">{pool ? `${count(pool.active)} / ${count(pool.size)}` : '—'}</td>
              )}
              {pools && <td class="num">{pool ? count(pool.waiting) : '—'}</td>}
              <td class="num">{count(w.messagesProcessed)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** The last pool figures of each broker in a `system-metrics` answer, by worker id. */
export function lastPools(systemMetrics) {
  const out = {};
  for (const r of systemMetrics?.replicas || []) {
    const last = r.timeSeries?.[r.timeSeries.length - 1]?.metrics?.database;
    if (!last) continue;
    out[r.workerId] = {
      size: last.pool_size?.last,
      open: last.pool_open?.last,
      active: last.pool_active?.last,
      idle: last.pool_idle?.last,
      waiting: last.pool_waiting?.last,
    };
  }
  return out;
}
