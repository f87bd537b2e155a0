// Trace names (`GET /api/v1/traces/names`, most recently seen first) and, for one name
// (`#/traces?name=x`), its events with the messages they were recorded on
// (`GET /api/v1/traces/by-name/{name}`), each opening that message. Both are paged by the
// broker, which answers a total.
import { useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { count } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { instant, messageHref, preview } from '../messages.js';
import { href, navigate } from '../route.js';
import { byNameQuery, namesQuery, pageCount } from '../traces.js';
import '../messages.css';

const REFRESH_MS = 10000;

const RECORD_EXAMPLE = `POST /api/v1/traces
{ "partitionId": "<the message's partition id>",
  "transactionId": "<its transaction id>",
  "traceNames": ["order-flow"],
  "eventType": "processed",
  "data": { "step": "charged", "amount": 42 } }`;

function Names({ page }) {
  const names = useApi(namesQuery(page), { everyMs: REFRESH_MS });
  const [text, setText] = useState('');
  const input = useRef(null);
  const total = names.data?.total ?? 0;
  const pages = pageCount(total);
  const go = (p) => navigate(href('/traces', { page: p > 1 ? p : undefined }));
  const openName = (n) => navigate(href('/traces', { name: n }));
  useListKeys({
    focus: () => input.current?.focus(),
    next: page < pages ? () => go(page + 1) : null,
    prev: page > 1 ? () => go(page - 1) : null,
  });
  const rows = names.data?.trace_names || [];

  return (
    <ListPage
      id="traces"
      title="Traces"
      head={
        <>
          {names.data && (
            <span class="badge" data-testid="names-total" data-value={total}>
              {count(total)} names
            </span>
          )}
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (text.trim()) openName(text.trim());
            }}
          >
            <input
              ref={input}
              class="search"
              type="search"
              placeholder="Open a trace name  ( / )"
              aria-label="Open a trace name"
              data-testid="trace-name-input"
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
            />
          </form>
        </>
      }
      get={names}
      empty={
        rows.length === 0 &&
        (page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={href('/traces')}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState title="No traces recorded yet">
            <p>
              A trace is an event a consumer records on a message it handles; naming it (
              <code>traceNames</code>) groups the events of one flow across queues, so they can be
              followed here. Record one with:
            </p>
            <pre>{RECORD_EXAMPLE}</pre>
            <p class="muted">
              The Python client records them with <code>message.trace(…)</code> in a consume loop. A
              message's own events are on its page, under Messages.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, pages, go }}
    >
      <table class="grid" data-testid="trace-names">
        <caption class="keys-hint">Arrows or j/k move, Enter opens, [ and ] turn the page.</caption>
        <thead>
          <tr>
            <th scope="col">Trace name</th>
            <th scope="col" class="num">
              Events
            </th>
            <th scope="col" class="num">
              Messages
            </th>
            <th scope="col">Last seen (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((n) => (
            <tr
              key={n.trace_name}
              tabIndex={0}
              data-name={n.trace_name}
              onKeyDown={rowKeys(() => openName(n.trace_name), {
                onTop: () => input.current?.focus(),
              })}
            >
              <td class="name">
                <a href={href('/traces', { name: n.trace_name })} tabIndex={-1}>
                  {n.trace_name}
                </a>
              </td>
              <td class="num">{count(n.trace_count)}</td>
              <td class="num">{count(n.message_count)}</td>
              <td>{instant(n.last_seen)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}

function ByName({ name, page }) {
  const events = useApi(byNameQuery(name, page), { everyMs: REFRESH_MS });
  const total = events.data?.total ?? 0;
  const pages = pageCount(total);
  const go = (p) => navigate(href('/traces', { name, page: p > 1 ? p : undefined }));
  useListKeys({
    next: page < pages ? () => go(page + 1) : null,
    prev: page > 1 ? () => go(page - 1) : null,
  });
  const rows = events.data?.traces || [];

  return (
    <ListPage
      id="trace"
      title={
        <>
          Trace <span data-testid="trace-name">{name}</span>
        </>
      }
      head={
        <>
          {events.data && (
            <span class="badge" data-testid="events-total" data-value={total}>
              {count(total)} events
            </span>
          )}
          <a href={href('/traces')}>← All trace names</a>
        </>
      }
      get={events}
      empty={
        rows.length === 0 && (
          <EmptyState title={page > 1 ? 'Past the last page' : `No events named “${name}”`}>
            <p>
              Trace names are exact. Events go with their message: once it is deleted (or removed by
              retention) its events are gone too.
            </p>
            <a href={href('/traces')}>All trace names</a>
          </EmptyState>
        )
      }
      pager={{ page, pages, go }}
    >
      <table class="grid" data-testid="trace-events">
        <caption class="keys-hint">
          Arrows or j/k move, Enter opens the message, [ and ] turn the page.
        </caption>
        <thead>
          <tr>
            <th scope="col">Recorded (UTC)</th>
            <th scope="col">Event</th>
            <th scope="col">Queue / partition</th>
            <th scope="col">Transaction id</th>
            <th scope="col">Data</th>
            <th scope="col">Payload</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => {
            const to = messageHref(t.partition_id, t.transaction_id);
            return (
              <tr
                key={t.id}
                tabIndex={0}
                data-event-id={t.id}
                data-tx={t.transaction_id}
                onKeyDown={rowKeys(() => navigate(to))}
              >
                <td>{instant(t.created_at, { ms: true })}</td>
                <td>{t.event_type}</td>
                <td>
                  {t.queue_name} / {t.partition_name}
                </td>
                <td class="mono clip">
                  <a href={to} tabIndex={-1}>
                    {t.transaction_id}
                  </a>
                </td>
                <td class="mono clip">{preview(t.data, 60)}</td>
                <td class="mono clip">{preview(t.message_payload, 60)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ListPage>
  );
}

export function Traces({ query }) {
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  return query.name ? (
    <ByName key={query.name} name={query.name} page={page} />
  ) : (
    <Names page={page} />
  );
}
