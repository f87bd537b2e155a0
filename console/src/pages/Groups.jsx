// Consumer groups: one row per (group, queue) the group reads, and queue mode's on a queue
// nobody has read (its whole backlog is the lag: docs/metrics.md, "What lag counts"), from
// the stats snapshot (`GET /api/v1/consumer-groups`, paged by the broker, by group then
// queue), the name filter applied by the broker (`search`: groups whose name contains it).
//
// Keys: `/` focuses the filter, arrows or j/k move between rows, Enter opens the group,
// `[` and `]` turn the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { count, date, duration, statsAge } from '../format.js';
import { groupLabel, groupsPath, stateClass } from '../groups.js';
import { useApi } from '../hooks.js';
import { moveRow, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { pageOf } from '../paging.js';
import { href, navigate } from '../route.js';
import '../actions.css';

export function Groups({ query }) {
  const page = Math.max(1, Number.parseInt(query.page, 10) || 1);
  const search = query.search || '';
  const [text, setText] = useState(search);
  const listing = useApi(groupsPath(page, { search }), { everyMs: 10000 });
  const overview = useApi('/api/v1/resources/overview', { everyMs: 10000 });
  const input = useRef(null);
  const table = useRef(null);

  useEffect(() => {
    if (text === search) return undefined;
    // A new filter starts at its first page.
    const t = setTimeout(() => navigate(href('/groups', { search: text })), 250);
    return () => clearTimeout(t);
  }, [text]);

  const { rows, more } = pageOf(Array.isArray(listing.data) ? listing.data : []);
  const go = (p) => navigate(href('/groups', { search, page: p > 1 ? p : undefined }));
  useListKeys({
    input,
    table,
    prev: page > 1 ? () => go(page - 1) : null,
    next: more ? () => go(page + 1) : null,
  });

  const open = (name) => href('/group', { name });
  const rowKey = (g) => (e) => {
    if (moveRow(e, () => input.current?.focus())) return;
    if (e.key === 'Enter' && e.target === e.currentTarget) navigate(open(g.name));
  };

  return (
    <ListPage
      id="groups"
      title="Consumer groups"
      head={
        <>
          {overview.data && (
            <span
              class="badge"
              data-testid="stats-age"
              data-value={overview.data.statsAge}
              title="Lags come from the stats snapshot; a group's page counts its cursors now"
            >
              {statsAge(overview.data.statsAge)}
            </span>
          )}
          <input
            ref={input}
            class="search"
            type="search"
            placeholder="Filter by group name  ( / )"
            aria-label="Filter the groups by a part of their name"
            data-testid="group-search"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </>
      }
      get={listing}
      empty={
        rows.length === 0 &&
        (page > 1 ? (
          <EmptyState title="Past the last page">
            <a href={href('/groups', { search })}>Back to the first page</a>
          </EmptyState>
        ) : search ? (
          <EmptyState title={`No group's name contains “${search}”`}>
            <p>The filter matches any part of a name, letter case included.</p>
            <button type="button" class="secondary" onClick={() => setText('')}>
              Clear the filter
            </button>
          </EmptyState>
        ) : (
          <EmptyState title="No consumer groups yet">
            <p>
              A group appears once it has popped a queue (<code>?consumerGroup=NAME</code>) and the
              stats snapshot has counted it. Queue-mode consumers show as <em>queue mode</em>, and
              so does a queue nobody has read yet, its whole backlog behind.
            </p>
          </EmptyState>
        ))
      }
      pager={{ page, more, go }}
    >
      <table class="grid" ref={table} data-testid="groups-table">
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Queue</th>
            <th scope="col" class="num">
              Partitions
            </th>
            <th scope="col" class="num">
              With lag
            </th>
            <th scope="col" class="num">
              Total lag
            </th>
            <th scope="col" class="num">
              Max time lag
            </th>
            <th scope="col">State</th>
            <th scope="col">Subscribed (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((g) => (
            <tr
              key={`${g.name}\u0000${g.queueName}`}
              tabIndex={0}
              onKeyDown={rowKey(g)}
              data-group={g.name}
              data-queue={g.queueName}
            >
              <td class="name">
                <a href={open(g.name)} tabIndex={-1}>
                  {groupLabel(g.name)}
                </a>
              </td>
              <td>{g.queueName}</td>
              <td class="num" data-col="partitions" data-value={g.members}>
                {count(g.members)}
              </td>
              <td class="num" data-col="with-lag" data-value={g.partitionsWithLag}>
                {count(g.partitionsWithLag)}
              </td>
              <td class="num" data-col="lag" data-value={g.totalLag}>
                {count(g.totalLag)}
              </td>
              <td class="num" data-col="time-lag" data-value={g.maxTimeLag}>
                {duration(g.maxTimeLag)}
              </td>
              <td>
                <span class={stateClass(g.state)} data-col="state">
                  {g.state}
                </span>
              </td>
              <td title={g.subscriptionCreatedAt || undefined}>
                {g.subscriptionTimestamp ? (
                  <>from {date(g.subscriptionTimestamp)}</>
                ) : (
                  date(g.subscriptionCreatedAt)
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ListPage>
  );
}
