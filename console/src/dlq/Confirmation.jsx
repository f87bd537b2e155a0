// The question before a requeue or a delete (`pending`: its kind, its scope, how many it
// takes), which neither can be undone; `action` is the call's state (`useAction`).
import { Confirm } from '../components.jsx';
import { BULK_LIMIT, describeFilter, plural } from '../deadletters.js';
import { count } from '../format.js';

export function Confirmation({ pending, filter, action, onConfirm, onCancel }) {
  const verb = pending.kind === 'requeue' ? 'Requeue' : 'Delete';
  return (
    <Confirm
      title={`${verb} ${plural(pending.count, 'dead letter')}?`}
      action={verb}
      danger={pending.kind === 'delete'}
      busy={action.busy}
      error={action.error}
      onConfirm={onConfirm}
      onCancel={onCancel}
    >
      <Question pending={pending} filter={filter} verb={verb} />
    </Confirm>
  );
}

/** What the action takes, and what it does to them. */
function Question({ pending, filter, verb }) {
  const what = describeFilter(filter);
  let scope;
  if (pending.scope === 'filter') {
    scope = what ? <> matching {what}</> : <>: every dead letter of the tenant</>;
  } else if (pending.scope === 'one') {
    scope = <> (message {pending.label})</>;
  } else scope = <>, the ones selected</>;
  return (
    <>
      <p>
        {verb}{' '}
        <strong data-testid="confirm-count" data-value={pending.count}>
          {plural(pending.count, 'dead letter')}
        </strong>
        {scope}?
      </p>
      {pending.kind === 'requeue' ? (
        <p class="muted">
          Each one's payload is appended to its partition as a new message, and the dead letter is
          removed. The log is shared: every consumer group of the queue reads the copy.
        </p>
      ) : (
        <p class="muted">The dead letters and their payload snapshots are gone for good.</p>
      )}
      {pending.more && (
        <p class="stale" data-testid="confirm-more">
          More than {count(BULK_LIMIT)} match: this takes the {count(BULK_LIMIT)} oldest failures.
          Run it again for the rest.
        </p>
      )}
    </>
  );
}
