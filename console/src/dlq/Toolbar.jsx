// The bulk actions, for a read-write token: requeue or delete the rows selected (`chosen`),
// or everything the filter matches (`askFilter`, which asks the broker for the count first).

export function Toolbar({ chosen, filtered, busy, ask, askFilter }) {
  return (
    <div class="toolbar" role="toolbar" aria-label="Dead-letter actions">
      <span data-testid="dlq-selected" data-value={chosen.length}>
        {chosen.length} selected
      </span>
      <button
        type="button"
        data-testid="dlq-requeue-selected"
        disabled={!chosen.length}
        onClick={() => ask('requeue', 'selection', chosen)}
      >
        Requeue selected
      </button>
      <button
        type="button"
        class="danger"
        data-testid="dlq-delete-selected"
        disabled={!chosen.length}
        onClick={() => ask('delete', 'selection', chosen)}
      >
        Delete selected
      </button>
      <span class="spacer" />
      <button
        type="button"
        class="secondary"
        data-testid="dlq-requeue-filter"
        disabled={busy}
        onClick={() => askFilter('requeue')}
      >
        {filtered ? 'Requeue all matching…' : 'Requeue all…'}
      </button>
      <button
        type="button"
        class="secondary"
        data-testid="dlq-delete-filter"
        disabled={busy}
        onClick={() => askFilter('delete')}
      >
        {filtered ? 'Delete all matching…' : 'Delete all…'}
      </button>
    </div>
  );
}
