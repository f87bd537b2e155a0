// One queue (`#/queue?name=…`): its counts, its last hour (traffic and depth), its
// partitions (paged by the broker, or the snapshot's deepest), its consumer groups (paged by
// the broker), its configuration, and the admin actions. Everything comes from the public API; nothing here reads all partitions.
import { useState } from 'preact/hooks';
import { Card, EmptyState } from '../components.jsx';
import { count, date, statsAge } from '../format.js';
import { useApi } from '../hooks.js';
import { Loaded, Stale } from '../loaded.jsx';
import { PAGE_SIZE, pageOf } from '../paging.js';
import { AdminActions } from '../queue/AdminActions.jsx';
import { Config } from '../queue/Config.jsx';
import { DepthChart } from '../queue/DepthChart.jsx';
import { Groups } from '../queue/Groups.jsx';
import { Partitions } from '../queue/Partitions.jsx';
import { href, navigate } from '../route.js';
import { can, useSession } from '../session.js';
import '../queue.css';

const REFRESH_MS = 10000;

export function Queue(props) {
  const name = props.query.name;
  if (name === undefined || name === '')
    return (
      <EmptyState title="Which queue?">
        <p>
          Open a queue from the <a href={href('/queues')}>list of queues</a>.
        </p>
      </EmptyState>
    );
  // Keyed by name: another queue starts with none of this one's state (its form, its echo).
  return <QueueView key={name} name={name} {...props} />;
}

function QueueView({ name, query }) {
  const { session } = useSession();
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const offset = query.view === 'deepest' ? 0 : (page - 1) * PAGE_SIZE;
  const groupPage = Math.max(1, Number.parseInt(query.groupPage, 10) || 1);
  // One row more than a page says whether another follows, whatever the snapshot's total.
  const listing = useApi(
    `/api/v1/resources/queues/${encodeURIComponent(name)}?limit=${PAGE_SIZE + 1}&offset=${offset}`,
    { everyMs: REFRESH_MS },
  );
  const [notice, setNotice] = useState(null);
  const go = (changes) => navigate(href('/queue', { ...query, ...changes }));

  const q = listing.data;
  if (!q)
    return (
      <Loaded
        get={listing}
        failed={(e) =>
          e.status === 404 && (
            <EmptyState title="Queue not found">
              <p data-testid="not-found">
                There is no queue named <code>{name}</code> in this tenant (it may have been
                deleted). <a href={href('/queues')}>Back to the queues</a>.
              </p>
            </EmptyState>
          )
        }
      />
    );

  const t = q.totals;
  const partitions = q.pagination?.total ?? 0;
  const { rows, more } = pageOf(q.partitions);
  return (
    <section aria-labelledby="queue-title">
      <header class="page-head">
        <h1 id="queue-title">
          <a class="crumb" href={href('/queues')}>
            Queues
          </a>{' '}
          / <span data-testid="queue-name">{q.name}</span>
        </h1>
        <span
          class="badge"
          data-testid="stats-age"
          data-value={q.statsAge}
          title="The totals come from the stats snapshot; the partition rows are counted now"
        >
          {statsAge(q.statsAge)}
        </span>
        {can(session, 'admin') && (
          <AdminActions
            name={name}
            totals={t}
            partitions={partitions}
            age={q.statsAge}
            onCleared={(n) => {
              setNotice({
                value: n,
                text: `Cleared: ${count(n)} messages deleted. The totals come from the stats snapshot and follow at its next round; the partition rows are counted now.`,
              });
              listing.reload();
            }}
            onDeleted={() => navigate(href('/queues'))}
          />
        )}
      </header>
      <p class="queue-meta muted">
        namespace <strong>{q.namespace || '—'}</strong> · task <strong>{q.task || '—'}</strong> ·
        created {date(q.createdAt)} UTC
      </p>
      {notice && (
        <p class="notice" role="status" data-testid="notice" data-value={notice.value}>
          {notice.text}
        </p>
      )}
      <Stale get={listing}> Showing the last answer.</Stale>
      <div class="cards">
        <Card
          id="queue-total"
          label="Messages"
          value={count(t.total)}
          raw={t.total}
          hint="in the log"
        />
        <Card
          id="queue-pending"
          label="Pending"
          value={count(t.pending)}
          raw={t.pending}
          hint="behind the furthest-behind group, leased ones included"
        />
        <Card
          id="queue-processing"
          label="Of which processing"
          value={count(t.processing)}
          raw={t.processing}
          hint="pending, under a live lease"
        />
        <Card id="queue-completed" label="Completed" value={count(t.completed)} raw={t.completed} />
        <Card
          id="queue-failed"
          label="Retrying"
          value={count(t.failed)}
          raw={t.failed}
          hint="partitions with a nack waiting"
        />
        <Card
          id="queue-dead-letters"
          label="Dead letters"
          value={count(t.deadLetter)}
          raw={t.deadLetter}
          tone={t.deadLetter > 0 ? 'warn' : undefined}
        />
        <Card id="queue-partitions" label="Partitions" value={count(partitions)} raw={partitions} />
      </div>
      <DepthChart name={name} />
      <Partitions
        name={name}
        query={query}
        go={go}
        listing={{ rows, more, total: partitions, offset, size: PAGE_SIZE }}
      />
      <Groups name={name} page={groupPage} turn={(p) => go({ groupPage: p > 1 ? p : undefined })} />
      <Config name={name} onSaved={listing.reload} />
    </section>
  );
}
