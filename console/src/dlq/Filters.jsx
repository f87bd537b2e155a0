// The dead-letter page's filter form: queue, group, partition and reason as typed, the
// failure-time range as local date-times (the URL keeps them as ISO UTC instants). It
// applies on Enter or Apply, so a half-typed name does not fetch.
import { useEffect, useState } from 'preact/hooks';
import { fromLocalInput, toLocalInput } from '../instant.js';

function fields(filter) {
  return {
    queue: filter.queue || '',
    group: filter.group || '',
    partition: filter.partition || '',
    reason: filter.reason || '',
    from: toLocalInput(filter.from),
    to: toLocalInput(filter.to),
  };
}

export function Filters({ filter, reasons, inputRef, onApply }) {
  const [v, setV] = useState(fields(filter));
  const key = JSON.stringify(filter);
  // A filter set from elsewhere (a reason clicked in the table, back/forward) shows here.
  useEffect(() => setV(fields(filter)), [key]);
  const set = (k) => (e) => setV({ ...v, [k]: e.currentTarget.value });
  const submit = (e) => {
    e.preventDefault();
    onApply({ ...v, from: fromLocalInput(v.from), to: fromLocalInput(v.to) });
  };
  const text = (k, label, { ref, list, placeholder = 'any' } = {}) => (
    <label class="filter">
      <span>{label}</span>
      <input
        type="text"
        name={k}
        data-testid={`dlq-filter-${k}`}
        value={v[k]}
        onInput={set(k)}
        spellcheck={false}
        autocomplete="off"
        ref={ref}
        list={list}
        placeholder={placeholder}
      />
    </label>
  );
  return (
    <form class="filters" onSubmit={submit} aria-label="Filter dead letters">
      {text('queue', 'Queue', { ref: inputRef, placeholder: 'any  ( / )' })}
      {text('group', 'Consumer group')}
      {text('partition', 'Partition')}
      {text('reason', 'Reason (exact)', { list: 'dlq-reasons' })}
      <datalist id="dlq-reasons">
        {reasons.map((r) => (
          <option key={r} value={r} />
        ))}
      </datalist>
      <label class="filter">
        <span>Failed from</span>
        <input
          type="datetime-local"
          step="1"
          data-testid="dlq-filter-from"
          value={v.from}
          onInput={set('from')}
        />
      </label>
      <label class="filter">
        <span>Failed until</span>
        <input
          type="datetime-local"
          step="1"
          data-testid="dlq-filter-to"
          value={v.to}
          onInput={set('to')}
        />
      </label>
      <div class="filter-actions">
        <button type="submit" data-testid="dlq-apply">
          Apply
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => onApply({})}
          disabled={!Object.values(filter).some(Boolean)}
        >
          Clear
        </button>
      </div>
    </form>
  );
}
