// The pieces every page uses: cards, the error and empty states, the token form.
import { useState } from 'preact/hooks';
import { explain, getToken, setToken } from './api.js';

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

export function TokenForm({ onToken, compact }) {
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
export function ErrorState({ error, onToken, onRetry }) {
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
          <TokenForm onToken={onToken} />
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
