// The pieces every page uses: cards, the error and empty states, the token form.
import { useEffect, useRef, useState } from 'preact/hooks';
import { explain, getToken, setToken } from './api.js';
import { useSession } from './session.js';

export function Card({ label, value, raw, hint, id, tone }) {
  return (
    <div class={`card${tone ? ` card-${tone}` : ''}`}>
      <div class="card-label">{label}</div>
      <div class="card-value" data-testid={id} data-value={raw}>
        {value}
      </div>
      {hint && <div class="card-hint">{hint}</div>}
    </div>
  );
}

export function TokenForm({ compact }) {
  const { onToken } = useSession();
  const [value, setValue] = useState('');
  const submit = (e) => {
    e.preventDefault();
    setToken(value);
    setValue('');
    onToken();
  };
  return (
    <form class={compact ? 'token-form compact' : 'token-form'} onSubmit={submit}>
      <label for="token">Bearer token</label>
      <input
        id="token"
        type="password"
        autocomplete="off"
        spellcheck={false}
        placeholder="eyJhbGciOi…"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <button type="submit" disabled={!value.trim()}>
        Use token
      </button>
      {getToken() && (
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setToken('');
            onToken();
          }}
        >
          Forget token
        </button>
      )}
    </form>
  );
}

/** A failed call, said plainly; 401 and 403 offer the token form. */
export function ErrorState({ error, onRetry }) {
  const e = explain(error);
  return (
    <div class="state state-error" role="alert" data-testid="error" data-status={error?.status}>
      <h2>{e.title}</h2>
      <p class="state-detail">{e.detail}</p>
      {e.token ? (
        <>
          <p>
            The broker runs with authentication on. Paste a token (for instance one from{' '}
            <code>regent token --tenant NAME --role read-only</code>); it is kept in this tab only.
          </p>
          <TokenForm />
        </>
      ) : (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function EmptyState({ title, children }) {
  return (
    <div class="state" data-testid="empty">
      <h2>{title}</h2>
      {children}
    </div>
  );
}

/**
 * A modal question before an action that cannot be undone: what will happen (`children`),
 * the button that does it, and Escape or Cancel to back out. `error` shows why the action
 * failed, keeping the dialog open.
 */
export function Confirm({ title, children, action, danger, busy, error, onConfirm, onCancel }) {
  const ref = useRef(null);
  // Set when the page removes the dialog, so the close that follows is not a cancel.
  const gone = useRef(false);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal?.();
    return () => {
      gone.current = true;
      d?.close?.();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      data-testid="confirm"
      aria-labelledby="confirm-title"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
      // Chromium closes a modal on Escape without a cancel event when the page had no user
      // activation since it opened: the dialog is then closed, so back out too.
      onClose={() => gone.current || onCancel()}
    >
      <h2 id="confirm-title">{title}</h2>
      <div class="confirm-body">{children}</div>
      {error && (
        <p class="confirm-error" role="alert">
          {explain(error).title}: {error.message}
        </p>
      )}
      <div class="confirm-actions">
        <button type="button" class="secondary" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button
          type="button"
          class={danger ? 'danger' : undefined}
          data-testid="confirm-action"
          onClick={onConfirm}
          disabled={busy}
        >
          {busy ? 'Working…' : action}
        </button>
      </div>
    </dialog>
  );
}

/**
 * What the last asked action did (`result`: its `text`, its `kind` as `data-kind`, and any
 * `data` attributes the page's test reads), or why it failed (`error`: given only while no
 * question is open, which says it itself); `titled` puts the error's kind before its text.
 * `id` names them for the tests: `{id}-result`, `{id}-action-error`.
 */
export function Outcome({ id, error, result, titled, data }) {
  return (
    <>
      {error && (
        <p class="result result-error" role="alert" data-testid={`${id}-action-error`}>
          {titled && `${explain(error).title}: `}
          {error.message}
        </p>
      )}
      {result && (
        <p
          class="result"
          role="status"
          data-testid={`${id}-result`}
          data-kind={result.kind}
          {...data}
        >
          {result.text}
        </p>
      )}
    </>
  );
}

/**
 * A button in a row's actions cell. Out of the tab order: the row is what is focused, and
 * its keys do what the buttons do.
 */
export function RowAction({ testid, onClick, children, ...rest }) {
  return (
    <button
      type="button"
      class="small secondary"
      tabIndex={-1}
      data-testid={testid}
      onClick={onClick}
      {...rest}
    >
      {children}
    </button>
  );
}

/** The header's Reload of a list (`get`, a `useApi`): asks again now, not while it asks. */
export function Reload({ get }) {
  return (
    <button type="button" class="secondary" onClick={get.reload} disabled={get.loading}>
      Reload
    </button>
  );
}
