// The dead letters of a page, one row each, and their keys: arrows or j/k move, Enter opens
// the message, and with `mayAct` space selects, r requeues, Delete deletes. A reason links to
// the listing of that reason; `ask` puts a row's action to the user (`Confirmation.jsx`).
import { RowAction } from '../components.jsx';
import { failedAt, pageState, preview, selectPage, toggle } from '../deadletters.js';
import { count } from '../format.js';
import { moveRow } from '../keys.js';
import { href, navigate } from '../route.js';

function groupName(g) {
  return g === '__QUEUE_MODE__' ? <span class="muted">queue mode</span> : g;
}

function messageHref(d) {
  return d.partitionId && d.transactionId
    ? href('/message', { partition: d.partitionId, tx: d.transactionId })
    : null;
}

export function Table({ rows, filter, selected, select, mayAct, ask, inputRef, tableRef }) {
  const ids = rows.map((d) => d.deadLetterId);
  const all = pageState(selected, ids);
  const rowKey = (d) => (e) => {
    if (moveRow(e, () => inputRef.current?.focus())) return;
    if (e.target !== e.currentTarget) return;
    if (e.key === ' ' && mayAct) {
      e.preventDefault();
      select((s) => toggle(s, d.deadLetterId));
    } else if (e.key === 'Enter' && messageHref(d)) {
      navigate(messageHref(d));
    } else if (e.key === 'r' && mayAct) {
      ask('requeue', 'one', [d.deadLetterId], d.id);
    } else if (e.key === 'Delete' && mayAct) {
      ask('delete', 'one', [d.deadLetterId], d.id);
    }
  };
  return (
    <>
      <table class="grid" ref={tableRef} data-testid="dlq-table">
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
                  onChange={(e) => select(selectPage(ids, e.currentTarget.checked))}
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
                      onChange={() => select((s) => toggle(s, d.deadLetterId))}
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
                    <RowAction
                      testid="dlq-requeue-one"
                      onClick={() => ask('requeue', 'one', [d.deadLetterId], d.id)}
                    >
                      Requeue
                    </RowAction>
                    <RowAction
                      testid="dlq-delete-one"
                      onClick={() => ask('delete', 'one', [d.deadLetterId], d.id)}
                    >
                      Delete
                    </RowAction>
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
    </>
  );
}
