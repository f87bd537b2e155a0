// Dead letters: the broker's listing (`GET /api/v1/dlq`, filtered and paged by the broker,
// with its total), and what may be done about them with a read-write token: requeue or
// delete one, the rows selected, or everything the filter matches (the bulk routes, asked
// with `dryRun` first so the question names the real count). The parts are under `dlq/`;
// this page holds the listing, the selection and the action in progress.
//
// Keys: `/` focuses the filters, arrows or j/k move between rows, space selects a row,
// Enter opens its message, r requeues it, Delete deletes it, `[` and `]` turn the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Reload } from '../components.jsx';
import {
  DLQ_PAGE,
  describeFilter,
  filterBody,
  idsBody,
  listPath,
  pageNumber,
  plural,
  prune,
  readFilter,
  verdicts,
  verdictText,
} from '../deadletters.js';
import { Confirmation } from '../dlq/Confirmation.jsx';
import { Empty } from '../dlq/Empty.jsx';
import { Filters } from '../dlq/Filters.jsx';
import { Outcome } from '../dlq/Outcome.jsx';
import { Table } from '../dlq/Table.jsx';
import { Toolbar } from '../dlq/Toolbar.jsx';
import { useApi, useAsked } from '../hooks.js';
import { useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { href, navigate } from '../route.js';
import { can, useSession } from '../session.js';
import '../actions.css';

export function DeadLetters({ query }) {
  const { session } = useSession();
  const filter = readFilter(query);
  const page = pageNumber(query);
  const listing = useApi(listPath(filter, page));
  const asked = useAsked();
  const { action, pending, start, ask: askAbout } = asked;
  const [selected, setSelected] = useState(() => new Set());
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

  const ask = (kind, scope, chosen, label) =>
    askAbout({ kind, scope, ids: chosen, count: chosen.length, label });
  // Everything the filter matches: the dry run's count is the question's.
  const askFilter = async (kind) => {
    start();
    const dry = await action.run(`/api/v1/dlq/${kind}`, {
      method: 'POST',
      body: filterBody(filter, true),
    });
    if (!dry) return;
    if (dry.matched === 0) asked.setResult({ text: 'No dead letter matches the filter.' });
    else asked.setPending({ kind, scope: 'filter', count: dry.matched, more: dry.more });
  };
  const act = async () => {
    const body = pending.scope === 'filter' ? filterBody(filter) : idsBody(pending.ids);
    const said = (out) => ({ text: verdictText(out), verdicts: verdicts(out) });
    if (!(await asked.act(`/api/v1/dlq/${pending.kind}`, { method: 'POST', body }, said))) return;
    setSelected(new Set());
    listing.reload();
  };

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
          <Reload get={listing} />
        </>
      }
      top={
        <>
          <Filters
            filter={filter}
            reasons={reasons}
            inputRef={input}
            onApply={(f) => navigate(href('/dlq', f))}
          />
          {mayAct && listing.data && (
            <Toolbar
              chosen={ids.filter((id) => selected.has(id))}
              filtered={filtered}
              busy={action.busy}
              ask={ask}
              askFilter={askFilter}
            />
          )}
          {!mayAct && listing.data && (
            <p class="note" data-testid="dlq-read-only">
              This token is {session?.role}: requeueing and deleting dead letters need read-write.
            </p>
          )}
          <Outcome error={!pending && action.error} result={asked.result} />
        </>
      }
      get={listing}
      empty={rows.length === 0 && <Empty filter={filter} page={page} total={total} />}
      pager={{ page, pages, go }}
      bottom={
        pending && (
          <Confirmation
            pending={pending}
            filter={filter}
            action={action}
            onConfirm={act}
            onCancel={asked.back}
          />
        )
      }
    >
      <Table
        rows={rows}
        filter={filter}
        selected={selected}
        select={setSelected}
        mayAct={mayAct}
        ask={ask}
        inputRef={input}
        tableRef={table}
      />
    </ListPage>
  );
}
