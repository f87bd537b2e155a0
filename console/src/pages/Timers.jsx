// The tenant's timers (`#/timers`): the queues with pending timers (`GET /api/v1/timers`:
// how many, and the nearest deadline), each leading to its pending timers
// (`#/timers?queue=…&after=…`, `GET /api/v1/timers/{queue}`), 100 a page by key, each with
// its deadline and how far away it is, its txn and the id its message will have; the next
// page starts after the last key (`nextAfter`). A row peeked (its button, or Enter) shows
// its payload (`GET /api/v1/timers/{queue}/{key}`, base64 of the JSON, decoded); cancelled
// (read-write: the button is not shown to a read-only token) after a confirmation, fenced
// by the txn shown (`DELETE …?txn=`), so a timer rescheduled since is kept. Read-only route.
// Keys: arrows or j/k move, Enter peeks, Delete cancels a row, `]` turns to the next page
// and `[` back to the first; on the queues, Enter opens one.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Confirm, EmptyState, Outcome, Reload, RowAction } from '../components.jsx';
import { count } from '../format.js';
import { useApi, useAsked } from '../hooks.js';
import { deleteAsks, moveRow, rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { Loaded } from '../loaded.jsx';
import { JsonBlock } from '../message-parts.jsx';
import { instant } from '../messages.js';
import { KeysetPager, keysetTurns } from '../pager.jsx';
import { navigate } from '../route.js';
import { can, useSession } from '../session.js';
import {
  cancelPath,
  cancelVerdict,
  decodePayload,
  fromNow,
  listPath,
  peekState,
  queuesOf,
  readTimers,
  TIMERS_PAGE,
  timerPath,
  timersHref,
  timersPage,
} from '../timers.js';
import '../actions.css';
import '../messages.css';
import '../streams.css';
import '../timers.css';

const REFRESH_MS = 10000;

export function Timers({ query }) {
  const where = readTimers(query);
  return where.queue ? <QueueTimers where={where} /> : <Queues />;
}

/** The queues with pending timers, by name. */
function Queues() {
  const get = useApi('/api/v1/timers', { everyMs: REFRESH_MS });
  const queues = queuesOf(get.data);
  const table = useRef(null);
  useListKeys({ table });
  const now = Date.now();

  return (
    <ListPage
      id="timers"
      title="Timers"
      head={
        get.data && (
          <>
            <span class="badge" data-testid="timer-queues-count" data-value={queues.length}>
              {count(queues.length)} queue{queues.length === 1 ? '' : 's'}
            </span>
            <Reload get={get} />
          </>
        )
      }
      get={get}
      empty={
        queues.length === 0 && (
          <EmptyState title="No pending timers">
            <p>
              A timer is a message scheduled under a key, delivered to its queue once its delay has
              passed (<code>POST /api/v1/timers</code>); a queue shows here while it has one
              pending.
            </p>
          </EmptyState>
        )
      }
      pager={false}
    >
      <table class="grid" ref={table} data-testid="timer-queues">
        <caption class="keys-hint">
          The queues with pending timers. Arrows or j/k move, Enter opens a queue's timers.
        </caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col" class="num">
              Pending
            </th>
            <th scope="col">Next deadline (UTC)</th>
            <th scope="col">In</th>
          </tr>
        </thead>
        <tbody>
          {queues.map((q) => {
            const to = timersHref({ queue: q.queue });
            return (
              <tr
                key={q.queue}
                tabIndex={0}
                data-queue={q.queue}
                onKeyDown={(e) => {
                  if (moveRow(e)) return;
                  if (e.key === 'Enter' && e.target === e.currentTarget) navigate(to);
                }}
              >
                <td class="name">
                  <a href={to} tabIndex={-1}>
                    {q.queue}
                  </a>
                </td>
                <td class="num" data-col="pending" data-value={q.pending}>
                  {count(q.pending)}
                </td>
                <td data-col="next" data-value={q.nextDeliverAt}>
                  {instant(q.nextDeliverAt, { ms: true })}
                </td>
                <td data-col="in">{fromNow(q.nextDeliverAt, now)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ListPage>
  );
}

/** One queue's pending timers, a keyset page of them by key. */
function QueueTimers({ where }) {
  const { session } = useSession();
  const mayCancel = can(session, 'read-write');
  const get = useApi(listPath(where), { everyMs: REFRESH_MS });
  const { rows, nextAfter } = timersPage(get.data);
  // Each draw's "In" column is from the time it is drawn (a refresh redraws).
  const at = Date.now();
  const first = timersHref({ queue: where.queue });
  const next = nextAfter && timersHref({ queue: where.queue, after: nextAfter });
  const table = useRef(null);
  useListKeys({ table, ...keysetTurns({ after: where.after, first, next }) });

  // The row peeked at, by key: one at a time, closed on another page.
  const [peeked, setPeeked] = useState(null);
  useEffect(() => setPeeked(null), [where.queue, where.after]);
  const peek = (row) => setPeeked(peeked === row.timerKey ? null : row.timerKey);

  // What a cancel did is said about the queue it was done on.
  const asked = useAsked([where.queue]);
  const { pending } = asked;
  const ask = (row) => {
    if (!mayCancel) return;
    asked.ask({ queue: where.queue, key: row.timerKey, txn: row.txn, deliverAt: row.deliverAt });
  };
  const cancel = async () => {
    const said = (out) => cancelVerdict(out, pending.key);
    if (await asked.act(cancelPath(pending), { method: 'DELETE' }, said)) get.reload();
  };

  return (
    <ListPage
      id="timers"
      title={
        <>
          <a class="crumb" href={timersHref()} data-testid="timers-crumb">
            Timers
          </a>{' '}
          / <span data-testid="timers-queue">{where.queue}</span>
        </>
      }
      head={
        get.data && (
          <>
            <span class="badge" data-testid="timers-count" data-value={rows.length}>
              {count(rows.length)}
              {nextAfter ? '+' : ''} timer{rows.length === 1 && !nextAfter ? '' : 's'}
            </span>
            <Reload get={get} />
          </>
        )
      }
      top={<Outcome id="timers" error={!pending && asked.action.error} result={asked.result} />}
      get={get}
      empty={
        rows.length === 0 && (
          <EmptyState
            title={
              where.after
                ? `No pending timer of “${where.queue}” after “${where.after}”`
                : `No pending timer in “${where.queue}”`
            }
          >
            <p>
              A timer leaves this list once its message is delivered, or it is cancelled.{' '}
              {where.after ? (
                <a href={first}>First page</a>
              ) : (
                <a href={timersHref()}>The queues with pending timers</a>
              )}
            </p>
          </EmptyState>
        )
      }
      pager={false}
      bottom={
        <>
          <KeysetPager id="timers" after={where.after} first={first} next={next} />
          {pending && (
            <Confirm
              title={`Cancel the timer “${pending.key}”?`}
              action="Cancel the timer"
              danger
              {...asked.confirm}
              onConfirm={cancel}
            >
              <p>
                The timer <code>{pending.key}</code> of queue <code>{pending.queue}</code>, due{' '}
                {instant(pending.deliverAt, { ms: true })} (UTC), is cancelled: its message is never
                delivered.
              </p>
              <p class="muted">
                Only the timer scheduled under txn{' '}
                <code data-testid="confirm-txn">{pending.txn}</code> is: if the key was rescheduled
                since this page read it, or its message delivered, nothing is cancelled and the page
                says so.
              </p>
            </Confirm>
          )}
        </>
      }
    >
      <table class="grid state-table" ref={table} data-testid="timers-table">
        <caption class="keys-hint">
          By key, {count(TIMERS_PAGE)} a page. Arrows or j/k move, Enter peeks at the payload
          {mayCancel ? ', Delete cancels a timer' : ''}; <kbd>]</kbd> turns to the next page and{' '}
          <kbd>[</kbd> back to the first.
        </caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Deliver at (UTC)</th>
            <th scope="col">In</th>
            <th scope="col">Txn</th>
            <th scope="col">Message id</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.flatMap((r) => {
            const open = peeked === r.timerKey;
            const row = (
              <tr
                key={r.timerKey}
                tabIndex={0}
                data-key={r.timerKey}
                aria-expanded={open}
                onKeyDown={deleteAsks(
                  () => ask(r),
                  rowKeys(() => peek(r)),
                )}
              >
                <td class="key">
                  <span class="state-key">{r.timerKey}</span>
                </td>
                <td data-col="deliver" data-value={r.deliverAt}>
                  {instant(r.deliverAt, { ms: true })}
                </td>
                <td data-col="in">{fromNow(r.deliverAt, at)}</td>
                <td class="mono" data-col="txn">
                  {r.txn}
                </td>
                <td class="mono" data-col="message">
                  {r.messageId}
                </td>
                <td class="row-actions">
                  <RowAction testid="timer-peek" aria-expanded={open} onClick={() => peek(r)}>
                    {open ? 'Hide' : 'Peek'}
                  </RowAction>
                  {mayCancel && (
                    <RowAction testid="timer-cancel" onClick={() => ask(r)}>
                      Cancel
                    </RowAction>
                  )}
                </td>
              </tr>
            );
            if (!open) return [row];
            return [
              row,
              <tr
                key={`${r.timerKey}\u0000peek`}
                class="timer-peek"
                tabIndex={-1}
                data-peek={r.timerKey}
                onKeyDown={rowKeys(null)}
              >
                <td colSpan={6}>
                  <Peek queue={where.queue} row={r} />
                </td>
              </tr>,
            ];
          })}
        </tbody>
      </table>
    </ListPage>
  );
}

/** A timer as its peek answers it: its payload decoded, and what it adds to the row. */
function Peek({ queue, row }) {
  const get = useApi(timerPath(queue, row.timerKey));
  return (
    <div class="timer-peek-body" data-testid="timer-peek-body">
      <Loaded get={get} inline>
        {(t) => {
          const state = peekState(t, row);
          if (state === 'gone')
            return (
              <p class="muted" data-testid="peek-state" data-state="gone">
                No timer of this key is pending any more: its message was delivered, or it was
                cancelled, since the list was read.
              </p>
            );
          const payload = decodePayload(t.payload);
          return (
            <>
              {state === 'rescheduled' && (
                <p class="note" data-testid="peek-state" data-state="rescheduled">
                  Rescheduled since the list was read: this is the key's timer now (txn{' '}
                  <span class="mono">{t.txn}</span>, due {instant(t.deliverAt, { ms: true })}).
                </p>
              )}
              <p class="peek-head">
                <span>
                  partition <strong data-testid="peek-partition">{t.partition}</strong>
                </span>
                <span>
                  refused fires <strong data-testid="peek-attempts">{count(t.attempts)}</strong>
                </span>
                <span>scheduled {instant(t.createdAt, { ms: true })}</span>
                <span>updated {instant(t.updatedAt, { ms: true })}</span>
              </p>
              {payload.error ? (
                <>
                  <p class="result result-error" data-testid="peek-payload-error">
                    {payload.error}.
                  </p>
                  <pre class="state-value">{payload.text}</pre>
                </>
              ) : (
                <JsonBlock value={payload.value} id="peek-payload" />
              )}
            </>
          );
        }}
      </Loaded>
    </div>
  );
}
