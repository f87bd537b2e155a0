// One message (`#/message?partition=<id>&tx=<transaction id>`): its payload, what the
// broker knows of it, the trace events consumers recorded on it, and what an operator may
// do to it (retry as a copy, move to the dead letters, delete), each confirmed first.
import { useState } from 'preact/hooks';
import { Confirm, EmptyState } from '../components.jsx';
import { duration } from '../format.js';
import { useAction, useApi } from '../hooks.js';
import { Loaded, Stale } from '../loaded.jsx';
import { JsonBlock, StatusBadge } from '../message-parts.jsx';
import { instant, messageHref, messagesHref, timeline } from '../messages.js';
import { href } from '../route.js';
import { can, useSession } from '../session.js';

const QUEUE_MODE = '__QUEUE_MODE__';

function groupName(g) {
  return g === QUEUE_MODE ? 'queue mode' : g;
}

function Meta({ m }) {
  const rows = [
    ['Queue', <a href={messagesHref({ queue: m.queue })}>{m.queue}</a>, 'queue'],
    [
      'Partition',
      <a href={messagesHref({ queue: m.queue, partition: m.partition })}>{m.partition}</a>,
      'partition',
    ],
    ['Status', <StatusBadge status={m.status} />, 'status'],
    ['Created (UTC)', instant(m.createdAt, { ms: true }), 'created'],
    ['Transaction id', <span class="mono">{m.transactionId}</span>, 'tx'],
    ['Message id', <span class="mono">{m.id}</span>, 'id'],
    ['Partition id', <span class="mono">{m.partitionId}</span>, 'partition-id'],
    ['Namespace', m.namespace || '—', 'namespace'],
    ['Task', m.task || '—', 'task'],
    ['Producer', m.producerSub || '—', 'producer'],
    ['Trace id', m.traceId ? <span class="mono">{m.traceId}</span> : '—', 'trace-id'],
    ['Lease expires', m.leaseExpiresAt ? instant(m.leaseExpiresAt) : '—', 'lease'],
    ['Encrypted', m.isEncrypted ? 'yes' : 'no', 'encrypted'],
  ];
  if (m.errorMessage) rows.push(['Dead letter reason', m.errorMessage, 'error']);
  if (m.retryCount !== null && m.retryCount !== undefined)
    rows.push(['Retries', String(m.retryCount), 'retries']);
  const c = m.queueConfig;
  if (c)
    rows.push([
      'Queue config',
      `lease ${duration(c.leaseTime)}, retry limit ${c.retryLimit}, priority ${c.priority}`,
      'config',
    ]);
  if (m.mode) rows.push(['Mode', m.mode.type, 'mode']);
  return (
    <dl class="meta">
      {rows.map(([label, value, id]) => (
        // A div per pair is valid in a <dl>, and gives each pair its key.
        <div key={id} class="meta-row">
          <dt>{label}</dt>
          <dd data-testid={`meta-${id}`}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Groups({ groups }) {
  if (!groups?.length)
    return <p class="muted">No consumer group has a cursor on its partition yet.</p>;
  return (
    <table class="grid" data-testid="groups">
      <thead>
        <tr>
          <th scope="col">Group</th>
          <th scope="col">Consumed</th>
          <th scope="col">Lease expires</th>
        </tr>
      </thead>
      <tbody>
        {groups.map((g) => (
          <tr key={g.name}>
            <td>{groupName(g.name)}</td>
            <td>{g.consumed ? 'yes' : 'no'}</td>
            <td>{g.leaseExpiresAt ? instant(g.leaseExpiresAt) : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Timeline({ traces, message }) {
  if (!traces.data)
    return (
      <Loaded
        get={traces}
        inline
        failed={(e) => <p class="confirm-error">Trace events unavailable: {e.message}</p>}
      />
    );
  const events = timeline(traces.data.traces);
  return (
    <>
      <ol class="timeline" data-testid="timeline">
        <li class="muted">
          <div class="event-head">
            <span class="event-type">pushed</span>
            <span>{instant(message.createdAt, { ms: true })}</span>
          </div>
        </li>
        {events.map((t) => (
          <li key={t.id} data-event-id={t.id} data-event-type={t.event_type}>
            <div class="event-head">
              <span class="event-type">{t.event_type}</span>
              <span>{instant(t.created_at, { ms: true })}</span>
              <span class="muted">{groupName(t.consumer_group)}</span>
              {t.worker_id && <span class="muted">worker {t.worker_id}</span>}
              {t.trace_names?.length > 0 && (
                <span class="names">
                  {t.trace_names.map((n) => (
                    <a key={n} href={href('/traces', { name: n })}>
                      {n}
                    </a>
                  ))}
                </span>
              )}
            </div>
            <pre>{JSON.stringify(t.data, null, 2)}</pre>
          </li>
        ))}
      </ol>
      {events.length === 0 && (
        <div class="muted" data-testid="timeline-empty">
          <p>No trace events recorded on this message.</p>
          <p>
            A consumer records one with <code>POST /api/v1/traces</code>, e.g.{' '}
            <code>
              {`{"partitionId": "${message.partitionId}", "transactionId": "…", "eventType": "processed", "traceNames": ["order-flow"], "data": {…}}`}
            </code>{' '}
            (in the Python client: <code>message.trace(…)</code> in a consume loop).
          </p>
        </div>
      )}
    </>
  );
}

/** The actions, each behind a confirmation; `done` says what happened. */
function Actions({ m, path, onDone }) {
  const act = useAction();
  const [asking, setAsking] = useState(null);
  const groups = (m.consumerGroups || []).map((g) => g.name);
  const [group, setGroup] = useState(
    groups.includes(QUEUE_MODE) || !groups.length ? QUEUE_MODE : groups[0],
  );
  const choices = groups.includes(QUEUE_MODE) ? groups : [QUEUE_MODE, ...groups];
  const close = () => {
    act.clear();
    setAsking(null);
  };
  const run = async () => {
    const calls = {
      retry: [`${path}/retry`, { method: 'POST' }],
      dlq: [`${path}/dlq?consumerGroup=${encodeURIComponent(group)}`, { method: 'POST' }],
      delete: [path, { method: 'DELETE' }],
    };
    const result = await act.run(...calls[asking]);
    if (result) {
      const kind = asking;
      setAsking(null);
      onDone(kind, result, group);
    }
  };
  const dialogs = {
    retry: {
      title: 'Retry this message?',
      action: 'Append a copy',
      body: (
        <p>
          A copy of the payload is appended to partition <strong>{m.partition}</strong> of{' '}
          <strong>{m.queue}</strong> as a new message (transaction id{' '}
          <code>{m.transactionId}:retry:…</code>): every consumer group reads it again. The original
          stays as it is.
        </p>
      ),
    },
    dlq: {
      title: 'Move this message to the dead letters?',
      action: 'Move to dead letters',
      danger: true,
      body: (
        <>
          <p>
            A dead letter is filed for the group below, and the message is deleted from the log: no
            group will be delivered it again. The dead letter can be requeued later.
          </p>
          <label>
            Consumer group{' '}
            <select
              value={group}
              data-testid="dlq-group"
              onChange={(e) => setGroup(e.currentTarget.value)}
            >
              {choices.map((g) => (
                <option key={g} value={g}>
                  {groupName(g)}
                </option>
              ))}
            </select>
          </label>
        </>
      ),
    },
    delete: {
      title: 'Delete this message?',
      action: 'Delete',
      danger: true,
      body: (
        <p>
          The message <code>{m.transactionId}</code> is deleted with its trace events: no consumer
          will be delivered it, and this cannot be undone.
        </p>
      ),
    },
  };
  const d = asking && dialogs[asking];
  return (
    <>
      <div class="acts">
        <button type="button" data-testid="act-retry" onClick={() => setAsking('retry')}>
          Retry…
        </button>
        {m.status !== 'dead_letter' && (
          // A dead letter already: requeued or deleted from the dead letters, not moved again.
          <button
            type="button"
            class="secondary"
            data-testid="act-dlq"
            onClick={() => setAsking('dlq')}
          >
            Move to dead letters…
          </button>
        )}
        <button
          type="button"
          class="danger"
          data-testid="act-delete"
          onClick={() => setAsking('delete')}
        >
          Delete…
        </button>
      </div>
      {d && (
        <Confirm
          title={d.title}
          action={d.action}
          danger={d.danger}
          busy={act.busy}
          error={act.error}
          onConfirm={run}
          onCancel={close}
        >
          {d.body}
        </Confirm>
      )}
    </>
  );
}

function Detail({ pid, tx, onGone }) {
  const { session } = useSession();
  const path = `/api/v1/messages/${encodeURIComponent(pid)}/${encodeURIComponent(tx)}`;
  const message = useApi(path);
  const traces = useApi(`/api/v1/traces/${encodeURIComponent(pid)}/${encodeURIComponent(tx)}`);
  const [retried, setRetried] = useState(null);
  const m = message.data;

  if (!m)
    return (
      <Loaded
        get={message}
        failed={(e) =>
          e.status === 404 && (
            <EmptyState title="Message not found">
              <p>
                No message <code>{tx}</code> on partition <code>{pid}</code>: it may have been
                deleted, moved to the dead letters, or removed by retention.
              </p>
              <a href={messagesHref({})}>Browse the messages</a>
            </EmptyState>
          )
        }
      />
    );

  const done = (kind, result, group) => {
    if (kind === 'retry') {
      setRetried(result.copy);
      message.reload();
      traces.reload();
    } else onGone({ kind, result, group, queue: m.queue, partition: m.partition });
  };
  const writable = can(session, 'read-write');

  return (
    <>
      <header class="page-head">
        <h1 id="message-title">
          Message <span class="mono muted">{m.transactionId}</span>
        </h1>
        <a href={messagesHref({ queue: m.queue })}>← Messages of {m.queue}</a>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            message.reload();
            traces.reload();
          }}
        >
          Reload
        </button>
      </header>
      <Stale get={message} />
      {retried && (
        <p class="notice" data-testid="retried" data-tx={retried.transactionId}>
          A copy was appended:{' '}
          <a href={messageHref(pid, retried.transactionId)} class="mono">
            {retried.transactionId}
          </a>
        </p>
      )}
      <div class="detail">
        <div>
          <section class="panel" aria-labelledby="payload-title">
            <div class="panel-head">
              <h2 id="payload-title">Payload</h2>
              {m.isEncrypted && <span class="legend">stored encrypted, shown decrypted</span>}
            </div>
            <JsonBlock value={m.payload} id="payload" label="Copy JSON" />
          </section>
          <section class="panel" aria-labelledby="timeline-title">
            <div class="panel-head">
              <h2 id="timeline-title">Trace timeline</h2>
              <span class="legend">oldest first</span>
            </div>
            <Timeline traces={traces} message={m} />
          </section>
        </div>
        <div>
          <section class="panel" aria-labelledby="meta-title">
            <div class="panel-head">
              <h2 id="meta-title">Details</h2>
            </div>
            <Meta m={m} />
          </section>
          <section class="panel" aria-labelledby="groups-title">
            <div class="panel-head">
              <h2 id="groups-title">Consumer groups</h2>
            </div>
            <Groups groups={m.consumerGroups} />
          </section>
          <section class="panel" aria-labelledby="actions-title">
            <div class="panel-head">
              <h2 id="actions-title">Actions</h2>
            </div>
            {writable ? (
              <Actions m={m} path={path} onDone={done} />
            ) : (
              <p class="muted" data-testid="read-only-note">
                This token is {session?.role}: retrying, moving and deleting need a read-write
                token.
              </p>
            )}
          </section>
        </div>
      </div>
    </>
  );
}

function Gone({ gone }) {
  const back = messagesHref({ queue: gone.queue, partition: gone.partition });
  const moved = gone.kind === 'dlq';
  return (
    <EmptyState title={moved ? 'Moved to the dead letters' : 'Message deleted'}>
      <p data-testid={moved ? 'moved' : 'deleted'}>
        {moved
          ? `A dead letter was filed for ${groupName(gone.group)} and the message was deleted from the log.`
          : gone.result?.success === false
            ? 'The broker had no such message any more (deleted already).'
            : 'The message was deleted; no consumer will be delivered it.'}
      </p>
      <p>
        <a href={back}>
          ← Messages of {gone.queue} / {gone.partition}
        </a>
        {moved && (
          <>
            {' · '}
            <a href={href('/dlq', { queue: gone.queue })}>its dead letters</a>
          </>
        )}
      </p>
    </EmptyState>
  );
}

export function Message({ query }) {
  const pid = query.partition || '';
  const tx = query.tx || '';
  // Which message was acted on: a deleted message is not asked for again.
  const [gone, setGone] = useState(null);
  const here = `${pid}/${tx}`;
  let body;
  if (!pid || !tx) {
    body = (
      <EmptyState title="Which message?">
        <p>
          A message is named by its partition id and transaction id:{' '}
          <code>#/message?partition=…&amp;tx=…</code>. Pick one from the list.
        </p>
        <a href={messagesHref({})}>Browse the messages</a>
      </EmptyState>
    );
  } else if (gone?.here === here) {
    body = <Gone gone={gone} />;
  } else {
    body = <Detail key={here} pid={pid} tx={tx} onGone={(g) => setGone({ ...g, here })} />;
  }
  return <section aria-label="Message">{body}</section>;
}
