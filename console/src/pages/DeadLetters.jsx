// Dead letters: the broker's listing (`GET /api/v1/dlq`, filtered and paged by the broker,
// with its total), and what may be done about them with a read-write token: requeue or
// delete one, the rows selected, or everything the filter matches (the bulk routes, asked
// with `dryRun` first so the question names the real count).
//
// Keys: `/` focuses the filters, arrows or j/k move between rows, space selects a row,
// Enter opens its message, r requeues it, Delete deletes it, `[` and `]` turn the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { explain } from '../api.js';
import { Confirm, EmptyState } from '../components.jsx';
import {
  BULK_LIMIT,
  DLQ_PAGE,
  describeFilter,
  failedAt,
  filterBody,
  idsBody,
  listPath,
  pageNumber,
  pageState,
  plural,
  preview,
  prune,
  readFilter,
  selectPage,
  toggle,
  verdicts,
  verdictText,
} from '../deadletters.js';
import { count } from '../format.js';
import { useAction, useApi } from '../hooks.js';
import { moveRow, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { href, navigate } from '../route.js';
import { can, useSession } from '../session.js';
import '../actions.css';
import { DeadLetterFilters } from './DeadLetterFilters.jsx';

function groupName(g) {
  return g === '__QUEUE_MODE__' ? <span class="muted">queue mode</span> : g;
}

function messageHref(d) {
  return d.partitionId && d.transactionId
    ? href('/message', { partition: d.partitionId, tx: d.transactionId })
    : null;
}

/** The question before an action: what it takes, and what it does to them. */
function Question({ pending, filter }) {
  const what = describeFilter(filter);
  const n = (
    <strong data-testid="confirm-count" data-value={pending.count}>
      {plural(pending.count, 'dead letter')}
    </strong>
  );
  const verb = pending.kind === 'requeue' ? 'Requeue' : 'Delete';
  let scope;
  if (pending.scope === 'filter') {
    scope = what ? <> matching {what}</> : <>: every dead letter of the tenant</>;
  } else if (pending.scope === 'one') {
    scope = <> (message {pending.label})</>;
  } else scope = <>, the ones selected</>;
  return (
    <>
      <p>
        {verb} {n}
        {scope}?
      </p>
      {pending.kind === 'requeue' ? (
        <p class="muted">
          Each one's payload is appended to its partition as a new message, and the dead letter is
          removed. The log is shared: every consumer group of the queue reads the copy.
        </p>
      ) : (
        <p class="muted">The dead letters and their payload snapshots are gone for good.</p>
      )}
      {pending.more && (
        <p class="stale" data-testid="confirm-more">
          More than {count(BULK_LIMIT)} match: this takes the {count(BULK_LIMIT)} oldest failures.
          Run it again for the rest.
        </p>
      )}
    </>
  );
}

export function DeadLetters({ query }) {
  const { session } = useSession();
  const filter = readFilter(query);
  const page = pageNumber(query);
  const listing = useApi(listPath(filter, page));
  const action = useAction();
  const [selected, setSelected] = useState(() => new Set());
  const [pending, setPending] = useState(null);
  const [result, setResult] = useState(null);
  const input = useRef(null);
  const table = useRef(null);
  const mayAct = can(session, 'read-write');

  const rows = listing.data?.messages || [];
  const ids = rows.map((d) => d.deadLetterId);
  const total = listing.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / DLQ_PAGE));
  const reasons = [...new Set(rows.map((d) => d.errorMessage).filter(Boolean))];
  // The selection never outlives the rows it was made on (another page, filter or reload).
  useEffect(() => setSelected((s) => prune(s, ids)), [ids.join(',')]);

  const go = (p) => navigate(href('/dlq', { ...filter, page: p > 1 ? p : undefined }));
  useListKeys({
    input,
    table,
    prev: page > 1 ? () => go(page - 1) : null,
    next: page < pages ? () => go(page + 1) : null,
  });

  const start = () => {
    setResult(null);
    action.clear();
  };
  const ask = (kind, scope, chosen, label) => {
    start();
    setPending({ kind, scope, ids: chosen, count: chosen.length, label });
  };
  // Everything the filter matches: the dry run's count is the question's.
  const askFilter = async (kind) => {
    start();
    const dry = await action.run(`/api/v1/dlq/${kind}`, {
      method: 'POST',
      body: filterBody(filter, true),
    });
    if (!dry) return;
    if (dry.matched === 0) setResult({ text: 'No dead letter matches the filter.' });
    else setPending({ kind, scope: 'filter', count: dry.matched, more: dry.more });
  };
  const act = async () => {
    const body = pending.scope === 'filter' ? filterBody(filter) : idsBody(pending.ids);
    const out = await action.run(`/api/v1/dlq/${pending.kind}`, { method: 'POST', body });
    if (!out) return;
    setPending(null);
    setResult({ text: verdictText(out), verdicts: verdicts(out) });
    setSelected(new Set());
    listing.reload();
  };

  const rowKey = (d) => (e) => {
    if (moveRow(e, () => input.current?.focus())) return;
    if (e.target !== e.currentTarget) return;
    if (e.key === ' ' && mayAct) {
      e.preventDefault();
      setSelected((s) => toggle(s, d.deadLetterId));
    } else if (e.key === 'Enter' && messageHref(d)) {
      navigate(messageHref(d));
    } else if (e.key === 'r' && mayAct) {
      ask('requeue', 'one', [d.deadLetterId], d.id);
    } else if (e.key === 'Delete' && mayAct) {
      ask('delete', 'one', [d.deadLetterId], d.id);
    }
  };

  const all = pageState(selected, ids);
  const chosen = ids.filter((id) => selected.has(id));
  const filtered = describeFilter(filter);
  return (
    <ListPage
      id="dlq"
      title="Dead letters"
      head={
        <>
          {listing.data && (
            <span class="badge" data-testid="dlq-total" data-value={total}>
              {`${plural(total, 'dead letter')}${filtered ? ' match' : ''}`}
            </span>
          )}
          <button
            type="button"
            class="secondary"
            onClick={listing.reload}
            disabled={listing.loading}
          >
            Reload
          </button>
        </>
      }
      top={
        <>
          <DeadLetterFilters
            filter={filter}
            reasons={reasons}
            inputRef={input}
            onApply={(f) => navigate(href('/dlq', f))}
          />
          {mayAct && listing.data && (
            <div class="toolbar" role="toolbar" aria-label="Dead-letter actions">
              <span data-testid="dlq-selected" data-value={chosen.length}>
                {chosen.length} selected
              </span>
              <button
                type="button"
                data-testid="dlq-requeue-selected"
                disabled={!chosen.length}
                onClick={() => ask('requeue', 'selection', chosen)}
              >
                Requeue selected
              </button>
              <button
                type="button"
                class="danger"
                data-testid="dlq-delete-selected"
                disabled={!chosen.length}
                onClick={() => ask('delete', 'selection', chosen)}
              >
                Delete selected
              </button>
              <span class="spacer" />
              <button
                type="button"
                class="secondary"
                data-testid="dlq-requeue-filter"
                disabled={action.busy}
                onClick={() => askFilter('requeue')}
              >
                {filtered ? 'Requeue all matching…' : 'Requeue all…'}
              </button>
              <button
                type="button"
                class="secondary"
                data-testid="dlq-delete-filter"
                disabled={action.busy}
                onClick={() => askFilter('delete')}
              >
                {filtered ? 'Delete all matching…' : 'Delete all…'}
              </button>
            </div>
          )}
          {!mayAct && listing.data && (
            <p class="note" data-testid="dlq-read-only">
              This token is {session?.role}: requeueing and deleting dead letters need read-write.
            </p>
          )}
          {action.error && !pending && (
            <p class="result result-error" role="alert" data-testid="dlq-action-error">
              {explain(action.error).title}: {action.error.message}
            </p>
          )}
          {result && (
            <p
              class="result"
              role="status"
              data-testid="dlq-result"
              data-requeued={result.verdicts?.requeued}
              data-deleted={result.verdicts?.deleted}
              data-duplicate={result.verdicts?.duplicate}
              data-gone={result.verdicts?.gone}
              data-more={result.verdicts?.more}
            >
              {result.text}
            </p>
          )}
        </>
      }
      get={listing}
      empty={
        rows.length === 0 &&
        (page > 1 && total > 0 ? (
          <EmptyState title="Past the last page">
            <a href={href('/dlq', { ...filter, page: undefined })}>Back to the first page</a>
          </EmptyState>
        ) : describeFilter(filter) ? (
          <EmptyState title="No dead letter matches the filter">
            <a href={href('/dlq')}>Show every dead letter</a>
          </EmptyState>
        ) : (
          <EmptyState title="No dead letters">
            <p>
              A message lands here when a consumer acks it with <code>"status": "dlq"</code>, or
              fails it past its queue's <code>retryLimit</code>.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, pages, go }}
      bottom={
        pending && (
          <Confirm
            title={`${pending.kind === 'requeue' ? 'Requeue' : 'Delete'} ${plural(pending.count, 'dead letter')}?`}
            action={pending.kind === 'requeue' ? 'Requeue' : 'Delete'}
            danger={pending.kind === 'delete'}
            busy={action.busy}
            error={action.error}
            onConfirm={act}
            onCancel={() => {
              setPending(null);
              action.clear();
            }}
          >
            <Question pending={pending} filter={filter} />
          </Confirm>
        )
      }
    >
      <table class="grid" ref={table} data-testid="dlq-table">
        <thead>
          <tr>
            {mayAct && (
              <th scope="col" class="check">
                <input
                  type="checkbox"
                  data-testid="dlq-select-page"
                  aria-label="Select every dead letter on this page"
                  checked={all === 'all'}
                  indeterminate={all === 'some'}
                  onChange={(e) => setSelected(selectPage(ids, e.currentTarget.checked))}
                />
              </th>
            )}
            <th scope="col">Failed (UTC)</th>
            <th scope="col">Queue</th>
            <th scope="col">Partition</th>
            <th scope="col">Group</th>
            <th scope="col">Reason</th>
            <th scope="col" class="num">
              Retries
            </th>
            <th scope="col">Payload</th>
            {mayAct && (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => {
            const to = messageHref(d);
            const on = selected.has(d.deadLetterId);
            return (
              <tr
                key={d.deadLetterId}
                tabIndex={0}
                onKeyDown={rowKey(d)}
                data-dlq={d.deadLetterId}
                data-queue={d.queue}
                aria-selected={mayAct ? String(on) : undefined}
              >
                {mayAct && (
                  <td class="check">
                    <input
                      type="checkbox"
                      tabIndex={-1}
                      aria-label={`Select dead letter ${d.deadLetterId}`}
                      checked={on}
                      onChange={() => setSelected((s) => toggle(s, d.deadLetterId))}
                    />
                  </td>
                )}
                <td title={d.failedAt}>{failedAt(d.failedAt)}</td>
                <td class="name">{d.queue}</td>
                <td>{d.partition}</td>
                <td>{groupName(d.consumerGroup)}</td>
                <td class="reason">
                  {d.errorMessage ? (
                    <a
                      href={href('/dlq', { ...filter, reason: d.errorMessage, page: undefined })}
                      title="Show only this reason"
                      tabIndex={-1}
                    >
                      {d.errorMessage}
                    </a>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td class="num">{count(d.retryCount)}</td>
                <td class="payload">
                  {to ? (
                    <a href={to} title="Open the message" tabIndex={-1}>
                      <code>{preview(d.data)}</code>
                    </a>
                  ) : (
                    <code>{preview(d.data)}</code>
                  )}
                </td>
                {mayAct && (
                  <td class="row-actions">
                    <button
                      type="button"
                      class="small secondary"
                      tabIndex={-1}
                      data-testid="dlq-requeue-one"
                      onClick={() => ask('requeue', 'one', [d.deadLetterId], d.id)}
                    >
                      Requeue
                    </button>
                    <button
                      type="button"
                      class="small secondary"
                      tabIndex={-1}
                      data-testid="dlq-delete-one"
                      onClick={() => ask('delete', 'one', [d.deadLetterId], d.id)}
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      <p class="keys muted">
        <kbd>↑</kbd> <kbd>↓</kbd> or <kbd>j</kbd> <kbd>k</kbd> move · <kbd>Enter</kbd> opens the
        message
        {mayAct && (
          <>
            {' '}
            · <kbd>space</kbd> selects · <kbd>r</kbd> requeues · <kbd>Delete</kbd> deletes
          </>
        )}{' '}
        · <kbd>[</kbd> <kbd>]</kbd> turn the page
      </p>
    </ListPage>
  );
}
