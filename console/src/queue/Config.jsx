// The queue's configuration: every option as the broker reports it, editable by a
// read-write token through `POST /api/v1/configure`, which replaces them all and validates
// every value (the form sends them all, as typed, and shows the broker's answer, keeping
// the form as it was).
import { useEffect, useRef, useState } from 'preact/hooks';
import { explain } from '../api.js';
import { ErrorState } from '../components.jsx';
import { useAction, useApi } from '../hooks.js';
import { Loaded } from '../loaded.jsx';
import { configureBody, deadLettering, formValues, OPTIONS } from '../queue-options.js';
import { can, useSession } from '../session.js';

export function Config({ name, onSaved }) {
  const { session } = useSession();
  const status = useApi(`/api/v1/status/queues/${encodeURIComponent(name)}?limit=1`);
  const save = useAction();
  const [values, setValues] = useState(null);
  const [dirty, setDirtyState] = useState(false);
  // Read by the refill below: an effect runs after the paint, and a key typed in between
  // must not be overwritten by the answer that rendered before it.
  const editing = useRef(false);
  const setDirty = (d) => {
    editing.current = d;
    setDirtyState(d);
  };
  const [saved, setSaved] = useState(false);
  const queue = status.data?.queue;
  // Without every option the form cannot send the others back as they are.
  const known = Boolean(queue?.options);
  const editable = can(session, 'read-write') && known;

  // A fresh answer refills the form, unless the user is editing it.
  useEffect(() => {
    if (queue && !editing.current) setValues(formValues(queue));
  }, [status.data]);

  if (!values)
    return (
      <Loaded
        get={status}
        loading={null}
        failed={(e) => (
          <div class="panel">
            <h2 class="panel-title">Configuration</h2>
            <ErrorState error={e} onRetry={status.reload} />
          </div>
        )}
      />
    );

  const set = (key) => (e) => {
    const typed = e.currentTarget.value;
    setValues((v) => ({ ...v, [key]: typed }));
    setDirty(true);
    setSaved(false);
  };
  const submit = async (e) => {
    e.preventDefault();
    const done = await save.run('/api/v1/configure', {
      method: 'POST',
      body: configureBody(name, values, queue.options),
    });
    if (!done) return;
    // Configure's echo is the queue now: shown at once, then the status route's answer.
    setValues(formValues(done));
    setDirty(false);
    setSaved(true);
    status.reload();
    onSaved?.();
  };
  const reset = () => {
    setValues(formValues(queue));
    setDirty(false);
    setSaved(false);
    save.clear();
  };

  return (
    <form class="panel config" data-testid="config" onSubmit={submit} noValidate>
      <div class="panel-head">
        <h2 id="config-title">Configuration</h2>
        <span class="legend">
          {!can(session, 'read-write')
            ? 'read-only: this token may not configure queues'
            : 'a save sends every option: configure replaces the whole configuration'}
        </span>
      </div>
      {!known && (
        <p class="stale" data-testid="config-unknown">
          This broker does not report the queue's options, so the form cannot send them back
          unchanged: it is read-only.
        </p>
      )}
      <fieldset disabled={!editable || save.busy} aria-labelledby="config-title">
        <div class="fields">
          <Field
            id="cfg-namespace"
            label="Namespace"
            value={values.namespace}
            onInput={set('namespace')}
            text
          />
          <Field id="cfg-task" label="Task" value={values.task} onInput={set('task')} text />
          {OPTIONS.filter((o) => o.kind === 'int').map((o) => (
            <Field
              key={o.key}
              id={`cfg-${o.key}`}
              label={o.label}
              unit={o.unit}
              storedOnly={o.storedOnly}
              value={values[o.key]}
              onInput={set(o.key)}
            />
          ))}
          {OPTIONS.filter((o) => o.kind !== 'int').map((o) => (
            <div class="field" key={o.key}>
              <label for={`cfg-${o.key}`}>{o.label}</label>
              <select id={`cfg-${o.key}`} value={values[o.key]} onChange={set(o.key)}>
                {o.kind === 'tri' && <option value="">not set (on)</option>}
                <option value="true">on</option>
                <option value="false">off</option>
              </select>
            </div>
          ))}
        </div>
      </fieldset>
      <p class="muted panel-note" data-testid="config-dead-lettering">
        Messages past the retry limit{' '}
        {deadLettering(values) ? 'are dead-lettered' : 'are not dead-lettered'}: only both
        dead-letter flags off turn it off.
      </p>
      {save.error && (
        <p class="config-error" role="alert" data-testid="config-error">
          {explain(save.error).title}: {save.error.message}
        </p>
      )}
      {saved && !save.error && (
        <p class="config-saved" role="status" data-testid="config-saved">
          Saved; the values below are the broker's.
        </p>
      )}
      {editable && (
        <div class="config-actions">
          <button type="button" class="secondary" onClick={reset} disabled={!dirty || save.busy}>
            Undo changes
          </button>
          <button type="submit" data-testid="config-save" disabled={save.busy}>
            {save.busy ? 'Saving…' : 'Save configuration'}
          </button>
        </div>
      )}
    </form>
  );
}

function Field({ id, label, unit, storedOnly, value, onInput, text }) {
  return (
    <div class="field">
      <label for={id}>
        {label}
        {unit && <span class="muted"> ({unit})</span>}
        {storedOnly && (
          <span
            class="muted"
            data-testid="stored-only"
            title="Stored and echoed, as Queen 0.15 does; the broker does not apply it"
          >
            {' '}
            · stored only
          </span>
        )}
      </label>
      <input
        id={id}
        type="text"
        inputMode={text ? undefined : 'numeric'}
        autocomplete="off"
        spellcheck={false}
        value={value}
        onInput={onInput}
      />
    </div>
  );
}
