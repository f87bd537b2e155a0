// The broker fleet and its database, for admins: the tenant's maintenance switches, each
// broker's last sample (`worker-metrics`, with its pool from `system-metrics`), and
// PostgreSQL's statistics (`postgres-stats`, which never includes a session's statement
// text: it can hold a payload). Every route here is admin; other roles get a clear 403.
import { useState } from 'preact/hooks';
import { Card, Confirm, ErrorState } from '../components.jsx';
import { Brokers, lastPools } from '../fleet.jsx';
import { bytes, count, percent } from '../format.js';
import { useAction, useApi } from '../hooks.js';
import { Loaded } from '../loaded.jsx';
import { can, useSession } from '../session.js';

const SWITCHES = [
  {
    key: 'maintenanceMode',
    id: 'push',
    path: '/api/v1/system/maintenance',
    label: 'Push maintenance',
    on: 'Pushes are held in the buffer (answered “buffered”) and appended when it is switched off.',
    off: 'Pushes are appended as they come.',
  },
  {
    key: 'popMaintenanceMode',
    id: 'pop',
    path: '/api/v1/system/maintenance/pop',
    label: 'Pop maintenance',
    on: 'Every pop answers at once, empty, with “paused”; pushes and acks go on.',
    off: 'Pops deliver as usual.',
  },
];

export function System() {
  const { session } = useSession();
  if (!can(session, 'admin')) {
    const error = Object.assign(new Error('The system page needs an admin token.'), {
      status: 403,
    });
    return <ErrorState error={error} />;
  }
  return (
    <section aria-labelledby="system-title">
      <header class="page-head">
        <h1 id="system-title">System</h1>
      </header>
      <Maintenance />
      <Fleet />
      <Postgres />
    </section>
  );
}

function Maintenance() {
  const state = useApi('/api/v1/system/maintenance', { everyMs: 5000 });
  const action = useAction();
  const [asking, setAsking] = useState(null);
  const m = state.data;
  const flip = async () => {
    const done = await action.run(asking.path, {
      method: 'POST',
      body: { enabled: !m[asking.key] },
    });
    if (done) {
      setAsking(null);
      state.reload();
    }
  };
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Maintenance (this tenant)</h2>
        {m && <span class="legend">{count(m.bufferedMessages)} pushes buffered</span>}
      </div>
      <Loaded get={state} inline>
        {() => (
          <ul class="switches">
            {SWITCHES.map((sw) => (
              <li key={sw.id}>
                <span
                  class={`badge ${m[sw.key] ? 'badge-warn' : ''}`}
                  data-testid={`${sw.id}-maintenance`}
                  data-value={m[sw.key] ? 1 : 0}
                >
                  {m[sw.key] ? 'on' : 'off'}
                </span>
                <span class="switch-text">
                  <strong>{sw.label}</strong> {m[sw.key] ? sw.on : sw.off}
                </span>
                <button
                  type="button"
                  class="secondary"
                  data-testid={`${sw.id}-switch`}
                  onClick={() => {
                    action.clear();
                    setAsking(sw);
                  }}
                >
                  Switch {m[sw.key] ? 'off' : 'on'}
                </button>
              </li>
            ))}
          </ul>
        )}
      </Loaded>
      {asking && (
        <Confirm
          title={`Switch ${asking.label.toLowerCase()} ${m[asking.key] ? 'off' : 'on'}?`}
          action={`Switch ${m[asking.key] ? 'off' : 'on'}`}
          danger={!m[asking.key]}
          busy={action.busy}
          error={action.error}
          onConfirm={flip}
          onCancel={() => setAsking(null)}
        >
          <p>{m[asking.key] ? asking.off : asking.on}</p>
          <p class="muted">
            Every broker of the fleet follows the switch within a quarter of a second.
          </p>
        </Confirm>
      )}
    </div>
  );
}

function Fleet() {
  const workers = useApi('/api/v1/analytics/worker-metrics', { everyMs: 10000 });
  const system = useApi('/api/v1/analytics/system-metrics', { everyMs: 10000 });
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Brokers</h2>
        <span class="legend">from each broker's samples, the last hour</span>
      </div>
      <Brokers fleet={workers} pools={lastPools(system.data)} />
    </div>
  );
}

function Postgres() {
  const pg = useApi('/api/v1/analytics/postgres-stats', { everyMs: 15000 });
  const p = pg.data;
  if (!p)
    return (
      <Loaded
        get={pg}
        inline
        failed={(e) => <p class="stale">PostgreSQL's statistics could not be read: {e.message}.</p>}
      />
    );
  const db = p.databaseCache || {};
  return (
    <div class="panel" data-testid="postgres">
      <div class="panel-head">
        <h2>PostgreSQL: {p.database}</h2>
        <span class="legend">shared buffers {p.bufferConfig?.sharedBuffersSize}</span>
      </div>
      <div class="cards">
        <Card id="pg-size" label="Database size" value={db.size} raw={db.sizeBytes} />
        <Card
          id="pg-connections"
          label="Connections"
          value={count(db.connections)}
          raw={db.connections}
        />
        <Card
          id="pg-cache"
          label="Cache hit ratio"
          value={percent(db.cacheHitRatio)}
          raw={db.cacheHitRatio}
          hint={`tables ${percent(p.cacheSummary?.tables?.hitRatio)}, indexes ${percent(p.cacheSummary?.indexes?.hitRatio)}`}
        />
        <Card
          id="pg-commits"
          label="Transactions"
          value={count(db.transactionsCommitted)}
          raw={db.transactionsCommitted}
          hint={`${count(db.transactionsRolledBack)} rolled back, ${count(db.deadlocks)} deadlocks`}
        />
        <Card
          id="pg-temp"
          label="Temporary files"
          value={count(db.tempFiles)}
          raw={db.tempFiles}
          hint={bytes(db.tempBytes)}
        />
        <Card
          id="pg-active"
          label="Active queries"
          value={count(p.activeQueries?.length)}
          raw={p.activeQueries?.length}
        />
      </div>
      <h3>Largest tables</h3>
      <table class="grid" data-testid="pg-tables">
        <thead>
          <tr>
            <th scope="col">Table</th>
            <th scope="col" class="num">
              Rows
            </th>
            <th scope="col" class="num">
              Table
            </th>
            <th scope="col" class="num">
              Indexes
            </th>
            <th scope="col" class="num">
              Dead rows
            </th>
          </tr>
        </thead>
        <tbody>
          {(p.tableSizes || []).slice(0, 12).map((t) => {
            const dead = (p.deadTuples || []).find((d) => d.table === t.table);
            return (
              <tr key={`${t.schema}.${t.table}`} tabIndex={0} data-table={t.table}>
                <td class="name">{t.table}</td>
                <td class="num">{count(t.rows)}</td>
                <td class="num">{t.tableSize}</td>
                <td class="num">{t.indexSize}</td>
                <td class="num">
                  {dead ? `${count(dead.deadTuples)} (${percent(dead.deadPercentage)})` : '—'}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
