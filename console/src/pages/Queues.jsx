// The tenant's queues, searched and paged by the broker (`/resources/queues` takes
// `search`, `limit` and `offset`), each with its dead letters and last 5 minutes' rates. The table is for the keyboard: `/` focuses the search,
// arrows (or j/k) move between rows, Enter opens one, `[` and `]` turn the page (`keys.js`).
import { useEffect, useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { count, date, rate } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { listingQuery, pageOf } from '../paging.js';
import { href, navigate } from '../route.js';

export function Queues({ query }) {
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const search = query.search || '';
  const [text, setText] = useState(search);
  const listing = useApi(listingQuery(page, search), { everyMs: 10000 });
  const table = useRef(null);
  const input = useRef(null);

  // Typing searches after a pause; the search goes into the URL, back to page 1.
  useEffect(() => {
    if (text === search) return undefined;
    const t = setTimeout(() => navigate(href('/queues', { search: text })), 250);
    return () => clearTimeout(t);
  }, [text]);

  const { rows, more } = pageOf(listing.data?.queues || []);
  const go = (p) => navigate(href('/queues', { search, page: p > 1 ? p : undefined }));

  useListKeys({
    input,
    table,
    prev: page > 1 ? () => go(page - 1) : null,
    next: more ? () => go(page + 1) : null,
  });
  const rowKey = rowKeys((tr) => navigate(href('/queue', { name: tr.dataset.queue })), {
    onTop: () => input.current?.focus(),
  });

  return (
    <ListPage
      id="queues"
      title="Queues"
      head={
        <input
          ref={input}
          class="search"
          type="search"
          placeholder="Search queues  ( / )"
          aria-label="Search queues by name"
          data-testid="queue-search"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      }
      get={listing}
      empty={
        rows.length === 0 &&
        (search ? (
          <EmptyState title={`No queue matches “${search}”`}>
            <p>The search matches any part of a queue's name.</p>
          </EmptyState>
        ) : page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={href('/queues')}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState title="No queues yet">
            <p>
              A queue is created by its first push, or by <code>POST /api/v1/configure</code>.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, more, go }}
    >
      <table class="grid" ref={table} data-testid="queues-table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Namespace</th>
            <th scope="col">Task</th>
            <th scope="col" class="num">
              Partitions
            </th>
            <th scope="col" class="num">
              Messages
            </th>
            <th scope="col" class="num">
              Pending
            </th>
            <th scope="col" class="num" title="The pending messages under a live lease">
              Of which processing
            </th>
            <th scope="col" class="num">
              Dead letters
            </th>
            <th scope="col" class="num" title="Pushed and processed per second, last 5 minutes">
              In / out
            </th>
            <th scope="col">Created (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((q) => (
            <tr key={q.id} tabIndex={0} onKeyDown={rowKey} data-queue={q.name}>
              <td class="name">
                <a href={href('/queue', { name: q.name })}>{q.name}</a>
              </td>
              <td>{q.namespace || <span class="muted">—</span>}</td>
              <td>{q.task || <span class="muted">—</span>}</td>
              <td class="num">{count(q.partitions)}</td>
              <td class="num">{count(q.messages.total)}</td>
              <td class="num">{count(q.messages.pending)}</td>
              <td class="num">{count(q.messages.processing)}</td>
              <td
                class={`num${q.messages.deadLetter > 0 ? ' warn' : ''}`}
                data-col="dead"
                data-value={q.messages.deadLetter}
              >
                {count(q.messages.deadLetter)}
              </td>
              <td class="num" data-col="rate" data-value={q.throughput?.ingestedPerSecond}>
                {rate(q.throughput?.ingestedPerSecond)} / {rate(q.throughput?.processedPerSecond)}
              </td>
              <td>{date(q.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}
