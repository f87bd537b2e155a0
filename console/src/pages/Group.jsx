// One consumer group: its cursors counted now (`GET /api/v1/consumer-groups/{group}`, paged
// by the broker), grouped by queue, and what may be done to them: seek a queue's cursors to
// the end (skip the backlog) or back to an instant (replay), one partition to its end
// (read-write); delete the group's cursors on one queue or everywhere (admin). Each goes
// through a confirmation, as none can be undone.
import { useState } from 'preact/hooks';
import { explain } from '../api.js';
import { Confirm, EmptyState } from '../components.jsx';
import { count, duration } from '../format.js';
import {
  byQueue,
  CURSORS_PAGE,
  cursorCount,
  cursorsPath,
  deletePath,
  groupLabel,
  QUEUE_MODE,
  seekBody,
  seekPartitionPath,
  seekQueuePath,
} from '../groups.js';
import { useApi, useAsked } from '../hooks.js';
import { moveRow } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { href, navigate } from '../route.js';
import { can, useSession } from '../session.js';
import '../actions.css';

/** What an action's answer says, in a sentence. */
function said(p, out) {
  const g = `“${groupLabel(p.group)}”`;
  if (p.kind === 'seek-end' || p.kind === 'seek-time') {
    const n = out.partitionsUpdated ?? 0;
    const where = `${count(n)} cursor${n === 1 ? '' : 's'} of ${g} on “${p.queue}”`;
    if (n === 0)
      return `No cursor of ${g} on “${p.queue}” to move: a group that never popped there follows its subscription.`;
    return out.seekToEnd
      ? `Moved ${where} to the end.`
      : `Moved ${where} back to ${out.targetTimestamp}: what came after is delivered again.`;
  }
  if (p.kind === 'seek-partition') {
    return out.updated
      ? `Partition “${p.partition}” of “${p.queue}”: the cursor is on its newest message${out.cursorMovedTo ? ` (appended ${out.cursorMovedTo})` : ''}.`
      : `Partition “${p.partition}” of “${p.queue}”: no cursor of ${g} to move.`;
  }
  const n = out.deletedPartitions ?? 0;
  return `Deleted ${count(n)} cursor${n === 1 ? '' : 's'} of ${g}${p.queue ? ` on “${p.queue}”` : ''}.`;
}

function Question({ p }) {
  const g = <strong>{groupLabel(p.group)}</strong>;
  switch (p.kind) {
    case 'seek-end':
      return (
        <p>
          Move the cursors of {g} on <strong>{p.queue}</strong> to the newest message of each
          partition? The {count(p.lag)} message{p.lag === 1 ? '' : 's'} behind them (on this page)
          are skipped by this group; its leases there are released.
        </p>
      );
    case 'seek-time':
      return (
        <p>
          Move the cursors of {g} on <strong>{p.queue}</strong> back (or forward) to{' '}
          <strong>{new Date(p.body.timestamp).toLocaleString()}</strong> ({p.body.timestamp})? The
          group reads again everything appended after it; its leases there are released.
        </p>
      );
    case 'seek-partition':
      return (
        <p>
          Move the cursor of {g} on partition <strong>{p.partition}</strong> of{' '}
          <strong>{p.queue}</strong> to its newest message, skipping {count(p.lag)}?
        </p>
      );
    case 'delete-queue':
      return (
        <p>
          Delete the cursors and leases of {g} on <strong>{p.queue}</strong>, and its start point
          there? Its next pop of the queue starts it afresh, by its subscription. Its dead letters
          stay.
        </p>
      );
    default:
      return (
        <p>
          Delete the group {g}: its cursors and leases on every queue, and its start points? Its
          next pop starts it afresh. Its dead letters stay.
        </p>
      );
  }
}

function QueueCursors({ group, q, mayWrite, mayAdmin, ask }) {
  const [at, setAt] = useState('');
  const replay = seekBody(false, at);
  return (
    <section class="panel" data-testid="group-queue" data-queue={q.queue} aria-label={q.queue}>
      <div class="panel-head">
        <h2>
          <a href={href('/queue', { name: q.queue })}>{q.queue}</a>
        </h2>
        <span class="legend">
          <span data-testid="queue-lag" data-value={q.lag}>
            {count(q.lag)} behind
          </span>{' '}
          · oldest unread {duration(q.maxTimeLag)} · {count(q.leases)} of{' '}
          {count(q.partitions.length)} leased
        </span>
      </div>
      {(mayWrite || mayAdmin) && (
        <div class="seek">
          {mayWrite && (
            <>
              <button
                type="button"
                data-testid="seek-end"
                onClick={() =>
                  ask({
                    kind: 'seek-end',
                    group,
                    queue: q.queue,
                    lag: q.lag,
                    method: 'POST',
                    path: seekQueuePath(group, q.queue),
                    body: seekBody(true),
                  })
                }
              >
                Seek to end
              </button>
              <label class="muted">
                or replay from
                <input
                  type="datetime-local"
                  step="1"
                  data-testid="seek-at"
                  value={at}
                  onInput={(e) => setAt(e.currentTarget.value)}
                />
              </label>
              <button
                type="button"
                class="secondary"
                data-testid="seek-time"
                disabled={!replay}
                onClick={() =>
                  ask({
                    kind: 'seek-time',
                    group,
                    queue: q.queue,
                    method: 'POST',
                    path: seekQueuePath(group, q.queue),
                    body: replay,
                  })
                }
              >
                Seek to instant
              </button>
            </>
          )}
          <span class="spacer" />
          {mayAdmin && (
            <button
              type="button"
              class="danger"
              data-testid="delete-queue"
              onClick={() =>
                ask({
                  kind: 'delete-queue',
                  group,
                  queue: q.queue,
                  method: 'DELETE',
                  path: deletePath(group, q.queue),
                })
              }
            >
              Delete cursors on this queue
            </button>
          )}
        </div>
      )}
      <table class="grid" data-testid="cursors-table">
        <thead>
          <tr>
            <th scope="col">Partition</th>
            <th scope="col" class="num">
              Offset lag
            </th>
            <th scope="col" class="num">
              Time lag
            </th>
            <th scope="col" class="num">
              Consumed
            </th>
            <th scope="col">Lease</th>
            {mayWrite && (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {q.partitions.map((p) => (
            <tr
              key={p.partition}
              tabIndex={0}
              onKeyDown={(e) => moveRow(e)}
              data-partition={p.partition}
            >
              <td class="name">{p.partition}</td>
              <td class="num" data-col="lag" data-value={p.offsetLag}>
                {count(p.offsetLag)}
              </td>
              <td class="num">{duration(p.timeLagSeconds)}</td>
              <td class="num">{count(p.totalConsumed)}</td>
              <td>{p.leaseActive ? 'active' : <span class="muted">none</span>}</td>
              {mayWrite && (
                <td class="row-actions">
                  <button
                    type="button"
                    class="small secondary"
                    data-testid="seek-partition"
                    disabled={!p.offsetLag}
                    onClick={() =>
                      ask({
                        kind: 'seek-partition',
                        group,
                        queue: q.queue,
                        partition: p.partition,
                        lag: p.offsetLag,
                        method: 'POST',
                        path: seekPartitionPath(group, q.queue, p.partition),
                      })
                    }
                  >
                    Seek to end
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function Group({ query }) {
  if (!query.name) {
    return (
      <EmptyState title="No group named">
        <a href={href('/groups')}>Pick one from the consumer groups</a>
      </EmptyState>
    );
  }
  return <GroupCursors name={query.name} query={query} />;
}

function GroupCursors({ name, query }) {
  const { session } = useSession();
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const detail = useApi(cursorsPath(name, page), { everyMs: 10000 });
  const asked = useAsked();
  const { action, pending, result, ask } = asked;
  const mayWrite = can(session, 'read-write');
  const mayAdmin = can(session, 'admin');

  const act = async () => {
    const options = { method: pending.method, body: pending.body };
    if (await asked.act(pending.path, options, (out) => said(pending, out))) detail.reload();
  };
  const go = (p) => navigate(href('/group', { name, page: p > 1 ? p : undefined }));
  const queues = byQueue(detail.data);
  const shown = cursorCount(detail.data);
  const full = shown >= CURSORS_PAGE;
  const first = (page - 1) * CURSORS_PAGE;

  return (
    <ListPage
      id="group"
      title={
        <>
          <a href={href('/groups')} class="crumb">
            Consumer groups
          </a>{' '}
          / <span data-testid="group-name">{groupLabel(name)}</span>
        </>
      }
      head={
        mayAdmin &&
        detail.data &&
        queues.length > 0 && (
          <button
            type="button"
            class="danger"
            data-testid="delete-group"
            onClick={() =>
              ask({ kind: 'delete-group', group: name, method: 'DELETE', path: deletePath(name) })
            }
          >
            Delete group
          </button>
        )
      }
      top={
        <>
          {name === QUEUE_MODE && (
            <p class="note">
              Queue mode: the cursors of consumers that pop without a consumer group.
            </p>
          )}
          {!mayWrite && detail.data && (
            <p class="note" data-testid="group-read-only">
              This token is {session?.role}: seeking needs read-write, deleting needs admin.
            </p>
          )}
          {result && (
            <p class="result" role="status" data-testid="group-result">
              {result}
            </p>
          )}
          {action.error && !pending && (
            <p class="result result-error" role="alert">
              {explain(action.error).title}: {action.error.message}
            </p>
          )}
        </>
      }
      get={detail}
      empty={
        queues.length === 0 &&
        (page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={href('/group', { name })}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState title={`“${groupLabel(name)}” has no cursors`}>
            <p>
              The group has not popped any queue yet, or it was deleted. It gets cursors with its
              next pop (<code>?consumerGroup={name}</code>).
            </p>
          </EmptyState>
        ))
      }
      pager={
        (page > 1 || full) && {
          page,
          more: full,
          go,
          label: 'Pages of cursors',
          children: `Cursors ${count(first + 1)}–${count(first + shown)}`,
        }
      }
      bottom={
        pending && (
          <Confirm
            title={
              pending.kind.startsWith('seek')
                ? 'Move the cursors?'
                : pending.kind === 'delete-queue'
                  ? 'Delete the cursors on this queue?'
                  : 'Delete the group?'
            }
            action={pending.kind.startsWith('seek') ? 'Seek' : 'Delete'}
            danger={pending.kind.startsWith('delete')}
            {...asked.confirm}
            onConfirm={act}
          >
            <Question p={pending} />
          </Confirm>
        )
      }
    >
      {queues.map((q) => (
        <QueueCursors
          key={q.queue}
          group={name}
          q={q}
          mayWrite={mayWrite}
          mayAdmin={mayAdmin}
          ask={ask}
        />
      ))}
    </ListPage>
  );
}
