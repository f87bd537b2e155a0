// Clearing and deleting the queue (admin routes), each behind a confirmation that says
// what will go, by the snapshot's counts: neither route has a dry run.
import { useState } from 'preact/hooks';
import { Confirm } from '../components.jsx';
import { count, statsAge } from '../format.js';
import { useAction } from '../hooks.js';

export function AdminActions({ name, totals, partitions, age, onCleared, onDeleted }) {
  const [asking, setAsking] = useState(null);
  const act = useAction();
  const path = encodeURIComponent(name);
  const close = () => {
    setAsking(null);
    act.clear();
  };
  const clear = async () => {
    const done = await act.run(`/api/v1/queues/${path}/clear`, { method: 'DELETE' });
    if (!done) return;
    setAsking(null);
    onCleared(done.deleted);
  };
  const remove = async () => {
    const done = await act.run(`/api/v1/resources/queues/${path}`, { method: 'DELETE' });
    if (done) onDeleted();
  };
  const counted = `${count(totals.total)} messages over ${count(partitions)} partitions, ${statsAge(age)}`;
  return (
    <>
      <button
        type="button"
        class="secondary"
        data-testid="clear"
        onClick={() => setAsking('clear')}
      >
        Clear…
      </button>
      <button type="button" class="danger" data-testid="delete" onClick={() => setAsking('delete')}>
        Delete…
      </button>
      {asking === 'clear' && (
        <Confirm
          title={`Clear ${name}?`}
          action="Clear the queue"
          danger
          busy={act.busy}
          error={act.error}
          onConfirm={clear}
          onCancel={close}
        >
          <p>
            Deletes every message of <strong>{name}</strong> ({counted}). Its consumer groups'
            cursors move to the end and their leases are released. Dead letters stay.
          </p>
          <p>This cannot be undone.</p>
        </Confirm>
      )}
      {asking === 'delete' && (
        <Confirm
          title={`Delete ${name}?`}
          action="Delete the queue"
          danger
          busy={act.busy}
          error={act.error}
          onConfirm={remove}
          onCancel={close}
        >
          <p>
            Deletes the queue <strong>{name}</strong> with its partitions, messages ({counted}),
            cursors and dead letters.
          </p>
          <p>This cannot be undone.</p>
        </Confirm>
      )}
    </>
  );
}
