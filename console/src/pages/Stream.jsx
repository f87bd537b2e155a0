// One stream query (`#/stream?id=…`): what it reads and writes, its configuration's hash,
// and its source partitions that have had a cycle, most recently cycled first
// (`GET /streams/v1/queries/{id}/partitions`, paged by the broker, which answers a total):
// the state rows each holds now, the cycles committed, the state operations they applied,
// the last cycle's time. A partition opens its state. Keys: arrows or j/k move, Enter
// opens a partition's state, `[` and `]` turn the page.
import { EmptyState } from '../components.jsx';
import { count } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { Loaded } from '../loaded.jsx';
import { instant } from '../messages.js';
import { href, navigate } from '../route.js';
import { Flow } from '../stream-parts.jsx';
import { partitionsQuery, queryHref, stateHref } from '../streams.js';
import { pageCount } from '../traces.js';

const REFRESH_MS = 10000;

export function Stream({ query }) {
  if (!query.id)
    return (
      <EmptyState title="Which query?">
        <p>
          Open a query from the <a href={href('/streams')}>list of stream queries</a>.
        </p>
      </EmptyState>
    );
  return <StreamView key={query.id} id={query.id} query={query} />;
}

/** Where the broker says the query is not the tenant's (or not at all). */
export function QueryNotFound({ id }) {
  return (
    <EmptyState title="Query not found">
      <p data-testid="not-found">
        There is no stream query <code>{id}</code> in this tenant.{' '}
        <a href={href('/streams')}>Back to the stream queries</a>.
      </p>
    </EmptyState>
  );
}

/** A query's registration, as the list shows it, in full. */
export function QueryMeta({ q }) {
  const rows = [
    ['Query id', <span class="mono">{q.query_id}</span>, 'id'],
    ['Source → sink', <Flow q={q} />, 'flow'],
    ['Config hash', <span class="mono">{q.config_hash}</span>, 'hash'],
    ['Registered (UTC)', instant(q.created_at), 'created'],
    ['Updated (UTC)', instant(q.updated_at), 'updated'],
  ];
  return (
    <dl class="meta stream-meta panel" data-testid="query-meta">
      {rows.map(([label, value, id]) => (
        <div key={id} class="meta-row">
          <dt>{label}</dt>
          <dd data-testid={`meta-${id}`}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function StreamView({ id, query }) {
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const listing = useApi(partitionsQuery(id, page), { everyMs: REFRESH_MS });
  const total = listing.data?.total ?? 0;
  const pages = pageCount(total);
  const go = (p) => navigate(queryHref(id, p));
  useListKeys({
    next: page < pages ? () => go(page + 1) : null,
    prev: page > 1 ? () => go(page - 1) : null,
  });

  const d = listing.data;
  if (!d)
    return <Loaded get={listing} failed={(e) => e.status === 404 && <QueryNotFound id={id} />} />;
  const q = d.query;
  const rows = d.partitions || [];
  const open = (p) => stateHref(id, p.partition_id, { name: p.partition });

  return (
    <ListPage
      id="stream"
      title={
        <>
          <a class="crumb" href={href('/streams')}>
            Streams
          </a>{' '}
          / <span data-testid="query-name">{q.name}</span>
        </>
      }
      head={
        <span class="badge" data-testid="partitions-total" data-value={total}>
          {count(total)} partition{total === 1 ? '' : 's'} cycled
        </span>
      }
      top={<QueryMeta q={q} />}
      get={listing}
      empty={
        rows.length === 0 &&
        (page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={queryHref(id)}>Back to the first page</a>
          </EmptyState>
        ) : (
          <EmptyState title="No cycle yet">
            <p>
              A partition of <code>{q.source_queue}</code> is listed once the query has committed a
              cycle on it (<code>POST /streams/v1/cycle</code>): the SDK does after each batch it
              pops.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, pages, go }}
    >
      <table class="grid" data-testid="stream-partitions">
        <caption class="keys-hint">
          Most recently cycled first. Arrows or j/k move, Enter opens the partition's state, [ and ]
          turn the page.
        </caption>
        <thead>
          <tr>
            <th scope="col">Partition</th>
            <th scope="col" class="num" title="State rows the query holds for it now">
              State rows
            </th>
            <th scope="col" class="num" title="Cycles committed (replays not counted)">
              Cycles
            </th>
            <th scope="col" class="num" title="State operations those cycles applied">
              State ops
            </th>
            <th scope="col">Last cycle (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((p) => (
            <tr
              key={p.partition_id}
              tabIndex={0}
              data-partition-id={p.partition_id}
              data-partition={p.partition}
              onKeyDown={rowKeys(() => navigate(open(p)))}
            >
              <td class="name">
                <a href={open(p)} tabIndex={-1}>
                  {p.partition}
                </a>
              </td>
              <td class="num" data-col="state-rows" data-value={p.state_rows}>
                {count(p.state_rows)}
              </td>
              <td class="num" data-col="cycles" data-value={p.cycles}>
                {count(p.cycles)}
              </td>
              <td class="num" data-col="state-ops" data-value={p.state_ops}>
                {count(p.state_ops)}
              </td>
              <td data-col="last-cycle">{instant(p.last_cycle_at, { ms: true })}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}
