// The tenant's messages, newest first, filtered and paged by the broker
// (`GET /api/v1/messages`: queue, partition, status, from/to, limit/offset). The filters
// live in the URL, so a reload or a shared link shows the same page. The listing carries no
// payloads: the focused row's is fetched on its own and shown at the bottom.
import { useEffect, useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { useDebounced } from '../debounced.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { Loaded } from '../loaded.jsx';
import { StatusBadge } from '../message-parts.jsx';
import {
  filtersOf,
  inputFromIso,
  instant,
  isoFromInput,
  messageHref,
  messagesHref,
  messagesQuery,
  preview,
  STATUSES,
} from '../messages.js';
import { pageOf } from '../paging.js';
import { navigate } from '../route.js';

const REFRESH_MS = 10000;

const rowId = (m) => `${m.partitionId}/${m.transactionId}`;

function draftOf(f) {
  return {
    queue: f.queue,
    partition: f.partition,
    status: f.status,
    from: inputFromIso(f.from),
    to: inputFromIso(f.to),
  };
}

/** Suggestions for a filter field, asked of the broker only while the field is in use. */
function Suggest({ id, path, pick }) {
  const s = useApi(path);
  return (
    <datalist id={id}>
      {pick(s.data).map((v) => (
        <option key={v} value={v} />
      ))}
    </datalist>
  );
}

function Filters({ filters, firstField }) {
  const [draft, setDraft] = useState(draftOf(filters));
  const [typing, setTyping] = useState(false);
  const key = messagesHref(filters);
  useEffect(() => setDraft(draftOf(filters)), [key]);
  const queueText = useDebounced(draft.queue);
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const apply = (next = draft) =>
    navigate(
      messagesHref({
        queue: next.queue.trim(),
        partition: next.partition.trim(),
        status: next.status,
        from: isoFromInput(next.from),
        to: isoFromInput(next.to),
      }),
    );
  const from = isoFromInput(draft.from);
  const to = isoFromInput(draft.to);
  return (
    <form
      class="panel"
      aria-label="Filter messages"
      onSubmit={(e) => {
        e.preventDefault();
        apply();
      }}
    >
      <div class="filters">
        <label>
          Queue (exact name)
          <input
            ref={firstField}
            name="queue"
            list="queue-names"
            autocomplete="off"
            spellcheck={false}
            placeholder="any queue  ( / )"
            data-testid="filter-queue"
            value={draft.queue}
            onFocus={() => setTyping(true)}
            onInput={set('queue')}
          />
        </label>
        {typing && (
          <Suggest
            id="queue-names"
            path={`/api/v1/resources/queues?limit=20&search=${encodeURIComponent(queueText.trim())}`}
            pick={(d) => (d?.queues || []).map((q) => q.name)}
          />
        )}
        <label>
          Partition (name)
          <input
            name="partition"
            list="partition-names"
            autocomplete="off"
            spellcheck={false}
            placeholder="any partition"
            data-testid="filter-partition"
            value={draft.partition}
            onInput={set('partition')}
          />
        </label>
        {typing && queueText.trim() && (
          <Suggest
            id="partition-names"
            path={`/api/v1/resources/partitions?limit=100&queue=${encodeURIComponent(queueText.trim())}`}
            pick={(d) => (d?.partitions || []).map((p) => p.name)}
          />
        )}
        <label>
          Status
          <select
            name="status"
            data-testid="filter-status"
            value={draft.status}
            onChange={(e) => {
              const next = { ...draft, status: e.currentTarget.value };
              setDraft(next);
              apply(next);
            }}
          >
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          From (UTC)
          <input
            type="datetime-local"
            name="from"
            data-testid="filter-from"
            value={draft.from}
            onInput={set('from')}
          />
        </label>
        <label>
          To (UTC)
          <input
            type="datetime-local"
            name="to"
            data-testid="filter-to"
            value={draft.to}
            onInput={set('to')}
          />
        </label>
        <div class="actions">
          <button type="submit" data-testid="filter-apply">
            Apply
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => navigate(messagesHref({}))}
            data-testid="filter-clear"
          >
            Clear
          </button>
        </div>
      </div>
      {from && to && from > to ? (
        <p class="filters-hint warn">From is after To: no message can match.</p>
      ) : (
        <p class="filters-hint muted">
          {filters.from || filters.to
            ? `From ${filters.from ? instant(filters.from) : 'an hour before To'} to ${
                filters.to ? `the end of ${instant(filters.to).slice(0, 16)}` : 'now'
              } (UTC).`
            : 'Without From and To: the last hour.'}{' '}
          Enter applies; the status applies at once.
        </p>
      )}
    </form>
  );
}

/** The focused row's payload, one GET per row the user stops on. */
function Peek({ row }) {
  const m = useApi(`/api/v1/messages/${row.partitionId}/${encodeURIComponent(row.transactionId)}`);
  return (
    <div class="peek" data-testid="peek" aria-live="polite">
      <div class="peek-head">
        <strong>
          {row.queue} / {row.partition}
        </strong>
        <span class="mono">{row.transactionId}</span>
        {m.data?.retryCount != null && <span>retries: {m.data.retryCount}</span>}
        {m.data?.errorMessage && <span>error: {m.data.errorMessage}</span>}
        <a href={messageHref(row.partitionId, row.transactionId)}>Open (Enter) →</a>
      </div>
      <code data-testid="peek-payload">
        <Loaded get={m} loading="…" failed={(e) => `Payload unavailable: ${e.message}`}>
          {(d) => preview(d.payload, 400)}
        </Loaded>
      </code>
    </div>
  );
}

export function Messages({ query }) {
  const filters = filtersOf(query);
  const listing = useApi(messagesQuery(filters), { everyMs: REFRESH_MS });
  const { rows, more } = pageOf(listing.data?.messages || []);
  const [focused, setFocused] = useState(null);
  const settled = useDebounced(focused, 200);
  // Rows are new objects after each refresh: the focused one is found again by its ids.
  const peeked = settled && rows.find((m) => rowId(m) === settled);
  const firstField = useRef(null);
  const table = useRef(null);
  const page = filters.page;
  const go = (p) => navigate(messagesHref({ ...filters, page: p }));
  const open = (m) => navigate(messageHref(m.partitionId, m.transactionId));

  useListKeys({
    focus: () => firstField.current?.focus(),
    next: more ? () => go(page + 1) : null,
    prev: page > 1 ? () => go(page - 1) : null,
  });
  // A new page or filter: the focused row is gone.
  const key = messagesQuery(filters);
  useEffect(() => setFocused(null), [key]);

  const scope = [
    filters.queue && `queue “${filters.queue}”`,
    filters.partition && `partition “${filters.partition}”`,
    filters.status && `status ${filters.status.replace('_', ' ')}`,
  ].filter(Boolean);

  return (
    <ListPage
      id="messages"
      title="Messages"
      head={
        listing.data && (
          <span class="badge" data-testid="messages-count" data-value={rows.length}>
            {rows.length}
            {more ? '+' : ''} on this page
          </span>
        )
      }
      top={<Filters filters={filters} firstField={firstField} />}
      get={listing}
      empty={
        rows.length === 0 &&
        (page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={messagesHref({ ...filters, page: 1 })}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState
            title={`No messages${scope.length ? ` of ${scope.join(', ')}` : ''} in this window`}
          >
            <p>
              The list shows messages created between From and To (the last hour when neither is
              set), newest first. Widen the window, or check the queue's exact name on the{' '}
              <a href="#/queues">Queues</a> page.
            </p>
            <p class="muted">
              Messages are pushed with <code>POST /api/v1/push</code>; consumed ones stay listed
              (status completed) until retention removes them.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, more, go }}
      bottom={peeked && <Peek key={rowId(peeked)} row={peeked} />}
    >
      <table class="grid" ref={table} data-testid="messages-table">
        <caption class="keys-hint">Arrows or j/k move, Enter opens, [ and ] turn the page.</caption>
        <thead>
          <tr>
            <th scope="col">Created (UTC)</th>
            <th scope="col">Queue</th>
            <th scope="col">Partition</th>
            <th scope="col">Transaction id</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Groups done
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((m) => (
            <tr
              key={rowId(m)}
              tabIndex={0}
              data-tx={m.transactionId}
              data-partition-id={m.partitionId}
              onKeyDown={rowKeys(() => open(m), { onTop: () => firstField.current?.focus() })}
              onFocus={() => setFocused(rowId(m))}
            >
              <td>{instant(m.createdAt)}</td>
              <td class="name">{m.queue}</td>
              <td>{m.partition}</td>
              <td class="mono clip">
                <a href={messageHref(m.partitionId, m.transactionId)} tabIndex={-1}>
                  {m.transactionId}
                </a>
              </td>
              <td>
                <StatusBadge status={m.status} />
              </td>
              <td class="num" title="Named consumer groups that have read it">
                {m.busStatus?.totalGroups
                  ? `${m.busStatus.consumedBy} / ${m.busStatus.totalGroups}`
                  : '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}
