// A queue's partitions, two ways. "All, paged": the broker's pages (by name, 50 a page,
// each partition counted now), sortable within the page. "Deepest": the stats snapshot's
// 100 partitions with the most pending, the only whole-queue order there is: at 100,000
// partitions the browser must not fetch them all to sort them.
import { EmptyState } from '../components.jsx';
import { count, date, statsAge } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { Loaded } from '../loaded.jsx';
import { Pager } from '../pager.jsx';
import { parseSort, sortRows } from '../sort.js';
import { SortHeader } from '../sort-header.jsx';

const COUNTS = [
  ['total', 'Messages'],
  ['pending', 'Pending'],
  ['processing', 'Of which processing', 'The pending messages under a live lease'],
  ['completed', 'Completed'],
  ['failed', 'Retrying', 'A nacked message waits for its retry (1 per partition at most)'],
  ['deadLetter', 'Dead letters'],
];
const PAGE_KEYS = ['name', ...COUNTS.map(([k]) => k), 'newest'];
const DEEP_KEYS = ['name', 'pending'];

function pageValue(key) {
  if (key === 'name') return (p) => p.name;
  if (key === 'newest') return (p) => (p.newestMessage ? Date.parse(p.newestMessage) : null);
  return (p) => p.stats?.[key];
}

export function Partitions({ name, query, go, listing }) {
  const deepest = query.view === 'deepest';
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const sort = parseSort(query.sort, deepest ? DEEP_KEYS : PAGE_KEYS);
  const { rows, more, total, offset } = listing;

  const turn = (p) => go({ page: p > 1 ? p : undefined });
  useListKeys({
    prev: !deepest && page > 1 ? () => turn(page - 1) : null,
    next: !deepest && more ? () => turn(page + 1) : null,
  });

  const onSort = (s) => go({ sort: s, page: query.page });
  const setView = (v) => go({ view: v, page: undefined, sort: undefined });

  return (
    <div class="panel" data-testid="partitions">
      <div class="panel-head">
        <h2 id="partitions-title">Partitions</h2>
        <fieldset class="segmented">
          <legend class="sr-only">Which partitions</legend>
          <button
            type="button"
            class={deepest ? 'secondary' : undefined}
            aria-pressed={!deepest}
            data-testid="view-all"
            onClick={() => setView(undefined)}
          >
            All, paged
          </button>
          <button
            type="button"
            class={deepest ? undefined : 'secondary'}
            aria-pressed={deepest}
            data-testid="view-deepest"
            onClick={() => setView('deepest')}
          >
            Deepest 100 (snapshot)
          </button>
        </fieldset>
      </div>
      {deepest ? (
        <Deepest name={name} sort={sort} onSort={onSort} />
      ) : (
        <>
          <p class="muted panel-note">
            By name, {listing.size} a page, each counted now. A column header sorts this page only;
            “Deepest 100” orders the whole queue by pending.
          </p>
          {rows.length === 0 ? (
            page > 1 ? (
              <EmptyState title="Past the last page">
                <button type="button" onClick={() => turn(1)}>
                  Back to the first page
                </button>
              </EmptyState>
            ) : (
              <EmptyState title="No partitions">
                <p>A partition is created by the first push that names it.</p>
              </EmptyState>
            )
          ) : (
            <table class="grid" data-testid="partitions-table" aria-labelledby="partitions-title">
              <thead>
                <tr>
                  <SortHeader label="Name" col="name" desc={false} sort={sort} onSort={onSort} />
                  {COUNTS.map(([k, label, title]) => (
                    <SortHeader
                      key={k}
                      label={label}
                      col={k}
                      num
                      sort={sort}
                      onSort={onSort}
                      title={title}
                    />
                  ))}
                  <SortHeader label="Newest (UTC)" col="newest" sort={sort} onSort={onSort} />
                </tr>
              </thead>
              <tbody>
                {(sort ? sortRows(rows, pageValue(sort.key), sort.desc) : rows).map((p) => (
                  <tr key={p.id} tabIndex={0} onKeyDown={rowKeys(null)} data-partition={p.name}>
                    <td class="name">{p.name}</td>
                    {COUNTS.map(([k]) => (
                      <td key={k} class="num" data-col={k}>
                        {count(p.stats?.[k])}
                      </td>
                    ))}
                    <td>{date(p.newestMessage)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager page={page} more={more} go={turn} label="Partition pages" testid="partitions-page">
            <span data-total={total}>
              Page {page}
              {total > 0 && ` of ${count(Math.max(1, Math.ceil(total / listing.size)))}`} ·{' '}
              {total > 0 && offset < total
                ? `${count(offset + 1)}–${count(offset + rows.length)} of `
                : ''}
              {count(total)} partitions
            </span>
          </Pager>
        </>
      )}
    </div>
  );
}

function Deepest({ name, sort, onSort }) {
  const depth = useApi(`/api/v1/resources/queues/${encodeURIComponent(name)}/depth`, {
    everyMs: 10000,
  });
  const d = depth.data;
  if (!d || d.statsAge < 0)
    return (
      <Loaded
        get={depth}
        empty={
          <EmptyState title="Not counted yet">
            <p>The stats snapshot has not counted this queue yet; its next round will.</p>
          </EmptyState>
        }
      />
    );
  const ranked = d.partitions.map((p, i) => ({ ...p, rank: i + 1 }));
  const shown = sort
    ? sortRows(ranked, (p) => (sort.key === 'name' ? p.partition : p.pending), sort.desc)
    : ranked;
  return (
    <>
      <p class="muted panel-note">
        The {count(d.partitions.length)} partitions with the most pending, from the stats snapshot (
        {statsAge(d.statsAge)}): {count(d.pending)} pending over {count(d.partitionsPending)}{' '}
        partitions with a backlog.
      </p>
      {ranked.length === 0 ? (
        <EmptyState title="No backlog">
          <p>No partition had pending messages when the snapshot counted this queue.</p>
        </EmptyState>
      ) : (
        <table class="grid" data-testid="deepest-table" aria-label="Deepest partitions">
          <thead>
            <tr>
              <th scope="col" class="num">
                #
              </th>
              <SortHeader label="Name" col="name" desc={false} sort={sort} onSort={onSort} />
              <SortHeader label="Pending" col="pending" num sort={sort} onSort={onSort} />
            </tr>
          </thead>
          <tbody>
            {shown.map((p) => (
              <tr
                key={p.partition}
                tabIndex={0}
                onKeyDown={rowKeys(null)}
                data-partition={p.partition}
              >
                <td class="num muted">{p.rank}</td>
                <td class="name">{p.partition}</td>
                <td class="num" data-col="pending">
                  {count(p.pending)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
