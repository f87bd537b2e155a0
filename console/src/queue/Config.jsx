// The queue's configuration: what the broker reports of it, editable by a read-write token
// through `POST /api/v1/configure`, which validates every value (the form sends what was
// typed and shows the broker's answer, keeping the form as it was).
import { useEffect, useState } from 'preact/hooks';
import { explain } from '../api.js';
import { ErrorState } from '../components.jsx';
import { useAction, useApi } from '../hooks.js';
import { configureBody, formValues, OPTIONS } from '../queue-options.js';
import { can } from '../session.js';

export function Config({ name, session, epoch, onToken, onSaved }) {
  const status = useApi(`/api/v1/status/queues/${encodeURIComponent(name)}?limit=1`, { epoch });
  const save = useAction();
  // Configure's echo of every option, once this tab saved the queue: the status route
  // reports only some of them.
  const [echo, setEcho] = useState(null);
  const [values, setValues] = useState(null);
  const [dirty, setDirty] = useState(false);
  const [saved, setSaved] = useState(false);
  const editable = can(session, 'read-write');

  useEffect(() => {
    if (status.data && !dirty) setValues(formValues(status.data.queue, echo));
  }, [status.data, echo, dirty]);

  if (!status.data && status.error)
    return (
      <div class="panel">
        <h2 class="panel-title">Configuration</h2>
        <ErrorState error={status.error} onToken={onToken} onRetry={status.reload} />
      </div>
    );
  if (!values) return null;

  const set = (key) => (e) => {
    setValues({ ...values, [key]: e.currentTarget.value });
    setDirty(true);
    setSaved(false);
  };
  const submit = async (e) => {
    e.preventDefault();
    const done = await save.run('/api/v1/configure', {
      method: 'POST',
      body: configureBody(name, values),
    });
    if (!done) return;
    setEcho(done.options);
    setDirty(false);
    setSaved(true);
    await status.reload();
    onSaved?.();
  };
  const reset = () => {
    setDirty(false);
    setSaved(false);
    save.clear();
  };

  return (
    <form class="panel config" data-testid="config" onSubmit={submit} noValidate>
      <div class="panel-head">
        <h2 id="config-title">Configuration</h2>
        <span class="legend">
          {editable
            ? 'a save replaces the whole configuration (POST /api/v1/configure)'
            : 'read-only: this token may not configure queues'}
        </span>
      </div>
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
          {OPTIONS.filter((o) => !o.flag).map((o) => (
            <Field
              key={o.key}
              id={`cfg-${o.key}`}
              label={o.label}
              unit={o.unit}
              unreported={!o.reported && !echo}
              value={values[o.key]}
              onInput={set(o.key)}
            />
          ))}
          <div class="field">
            <label for="cfg-deadLetter">Dead-letter exhausted messages</label>
            <select id="cfg-deadLetter" value={values.deadLetter} onChange={set('deadLetter')}>
              {values.deadLetter === '' && <option value="">not sent (default)</option>}
              <option value="on">on</option>
              <option value="off">off</option>
            </select>
          </div>
          {OPTIONS.filter((o) => o.flag).map((o) => (
            <div class="field" key={o.key}>
              <label for={`cfg-${o.key}`}>
                {o.label}
                {!echo && <Unreported />}
              </label>
              <select id={`cfg-${o.key}`} value={values[o.key]} onChange={set(o.key)}>
                <option value="">not sent (default)</option>
                <option value="true">on</option>
                <option value="false">off</option>
              </select>
            </div>
          ))}
        </div>
      </fieldset>
      {!echo && (
        <p class="muted panel-note">
          <Unreported /> The broker does not report these options (
          <code>GET /api/v1/status/queues/:queue</code> has only lease time, retry limit, retry
          delay, TTL, max size, priority and dead-lettering): a blank field is not sent and takes
          the broker's default.
        </p>
      )}
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

function Unreported() {
  return (
    <span class="unreported" title="Not reported by the API">
      *
    </span>
  );
}

function Field({ id, label, unit, unreported, value, onInput, text }) {
  return (
    <div class="field">
      <label for={id}>
        {label}
        {unit && <span class="muted"> ({unit})</span>}
        {unreported && <Unreported />}
      </label>
      <input
        id={id}
        type="text"
        inputMode={text ? undefined : 'numeric'}
        autocomplete="off"
        spellcheck={false}
        placeholder={text ? '' : 'default'}
        value={value}
        onInput={onInput}
      />
    </div>
  );
}
