// The consumer groups reading the queue with their lag, from the stats snapshot, as the
// broker filters and pages them (`/consumer-groups?queue=`); each links to its group's page.
import { EmptyState } from '../components.jsx';
import { count, duration } from '../format.js';
import { GROUPS_PAGE, groupsPath, QUEUE_MODE } from '../groups.js';
import { useApi } from '../hooks.js';
import { rowKeys } from '../keys.js';
import { Loaded, Stale } from '../loaded.jsx';
import { Pager } from '../pager.jsx';
import { pageOf } from '../paging.js';
import { href, navigate } from '../route.js';

export function Groups({ name, page, turn }) {
  const listing = useApi(groupsPath(page, { queue: name }), { everyMs: 30000 });
  const { rows, more } = pageOf(Array.isArray(listing.data) ? listing.data : [], GROUPS_PAGE);
  return (
    <div class="panel" data-testid="groups">
      <div class="panel-head">
        <h2>Consumer groups</h2>
        <span class="legend">lag from the stats snapshot</span>
      </div>
      <Stale get={listing} />
      <Loaded
        get={listing}
        empty={
          rows.length === 0 &&
          (page > 1 ? (
            <EmptyState title="Past the last page">
              <button type="button" onClick={() => turn(1)}>
                Back to the first page
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No consumer group reads this queue">
              <p>
                A group appears once it has popped (and the stats snapshot has counted it). A pop
                without <code>consumerGroup</code> reads in queue mode.
              </p>
            </EmptyState>
          ))
        }
      >
        <table class="grid" data-testid="groups-table" aria-label="Consumer groups of this queue">
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Partitions
              </th>
              <th scope="col" class="num">
                With lag
              </th>
              <th scope="col" class="num">
                Lag (messages)
              </th>
              <th scope="col" class="num">
                Time lag
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((g) => {
              const to = href('/group', { name: g.name });
              return (
                <tr
                  key={g.name}
                  tabIndex={0}
                  data-group={g.name}
                  onKeyDown={rowKeys(() => navigate(to))}
                >
                  <td class="name">
                    <a href={to}>{g.name === QUEUE_MODE ? 'queue mode' : g.name}</a>
                    {g.name === QUEUE_MODE && <span class="muted"> ({QUEUE_MODE})</span>}
                  </td>
                  <td>
                    <span class={`badge state-${String(g.state).toLowerCase()}`}>{g.state}</span>
                  </td>
                  <td class="num">{count(g.members)}</td>
                  <td class="num">{count(g.partitionsWithLag)}</td>
                  <td class="num" data-col="lag" data-value={g.totalLag}>
                    {count(g.totalLag)}
                  </td>
                  <td class="num">{duration(g.maxTimeLag)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Loaded>
      {(page > 1 || more) && (
        <Pager
          page={page}
          more={more}
          go={turn}
          label="Pages of consumer groups"
          testid="groups-page"
        />
      )}
    </div>
  );
}
