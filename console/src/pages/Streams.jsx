// The tenant's stream queries (`GET /streams/v1/queries`, by name): what each reads and
// writes, its configuration's hash, when it was registered and last changed. The broker
// answers them all at once, so the filter (name or queue) and the pages of 50 are the
// page's own; the keys are every list's: `/` focuses the filter, arrows or j/k move, Enter
// opens a query, `[` and `]` turn the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { count } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { instant } from '../messages.js';
import { href, navigate } from '../route.js';
import { Flow } from '../stream-parts.jsx';
import { filterQueries, queryHref, slicePage } from '../streams.js';

const REFRESH_MS = 10000;

const REGISTER_EXAMPLE = `POST /streams/v1/queries
{ "name": "orders.per-minute",
  "source_queue": "orders",
  "sink_queue": "orders.totals",
  "config_hash": "9f2c" }`;

export function Streams({ query }) {
  const search = query.search || '';
  const [text, setText] = useState(search);
  const listing = useApi('/streams/v1/queries', { everyMs: REFRESH_MS });
  const input = useRef(null);
  const table = useRef(null);

  // Typing filters after a pause; the filter goes into the URL, back to page 1.
  useEffect(() => {
    if (text === search) return undefined;
    const t = setTimeout(() => navigate(href('/streams', { search: text })), 250);
    return () => clearTimeout(t);
  }, [text]);

  const all = listing.data?.queries || [];
  const matching = filterQueries(all, search);
  const { rows, page, pages } = slicePage(matching, query.page);
  const go = (p) => navigate(href('/streams', { search, page: p > 1 ? p : undefined }));
  useListKeys({
    input,
    table,
    prev: page > 1 ? () => go(page - 1) : null,
    next: page < pages ? () => go(page + 1) : null,
  });
  const rowKey = rowKeys((tr) => navigate(queryHref(tr.dataset.queryId)), {
    onTop: () => input.current?.focus(),
  });

  return (
    <ListPage
      id="streams"
      title="Streams"
      head={
        <>
          {listing.data && (
            <span class="badge" data-testid="streams-total" data-value={all.length}>
              {count(all.length)} {all.length === 1 ? 'query' : 'queries'}
            </span>
          )}
          <input
            ref={input}
            class="search"
            type="search"
            placeholder="Filter by name or queue  ( / )"
            aria-label="Filter the queries by a part of their name or queues"
            data-testid="stream-search"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </>
      }
      get={listing}
      empty={
        rows.length === 0 &&
        (search && matching.length === 0 ? (
          <EmptyState title={`No query matches “${search}”`}>
            <p>The filter matches any part of a query's name, source or sink queue.</p>
            <button type="button" class="secondary" onClick={() => setText('')}>
              Clear the filter
            </button>
          </EmptyState>
        ) : page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={href('/streams', { search })}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState title="No stream queries yet">
            <p>
              A query is registered by the streams SDK when it starts (Python:{' '}
              <code>Stream….run(query_id, url=…)</code>), or by:
            </p>
            <pre>{REGISTER_EXAMPLE}</pre>
          </EmptyState>
        ))
      }
      pager={{ page, pages, go }}
    >
      <table class="grid" ref={table} data-testid="streams-table">
        <caption class="keys-hint">Arrows or j/k move, Enter opens, [ and ] turn the page.</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Source → sink</th>
            <th scope="col">Config hash</th>
            <th scope="col">Created (UTC)</th>
            <th scope="col">Updated (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((q) => (
            <tr
              key={q.query_id}
              tabIndex={0}
              onKeyDown={rowKey}
              data-query-id={q.query_id}
              data-name={q.name}
            >
              <td class="name">
                <a href={queryHref(q.query_id)} tabIndex={-1}>
                  {q.name}
                </a>
              </td>
              <td data-col="queues">
                <Flow q={q} />
              </td>
              <td class="mono clip" data-col="hash" title={q.config_hash}>
                {q.config_hash}
              </td>
              <td data-col="created">{instant(q.created_at)}</td>
              <td data-col="updated">{instant(q.updated_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}
