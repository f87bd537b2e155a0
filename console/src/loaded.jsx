// What a GET's answer (`useApi`) shows, one way everywhere: the error while there is no
// answer, "Loading…" until the first, then what the answer holds or says it lacks. A failed
// refresh keeps the last answer on screen, under the `Stale` banner.
import { ErrorState } from './components.jsx';

/**
 * `children`: what the answer shows, or a function of the answer (for what reads it).
 * `empty`: shown instead when the answer has nothing to show, false otherwise. `inline` is
 * for a panel's part of a page, where a state box would sit in a box. `failed(error)` may
 * say an error in its own words; without it, or when it answers nothing, ErrorState does.
 */
export function Loaded({ get, empty, inline, loading, failed, children }) {
  const { data, error } = get;
  if (error && !data) return failed?.(error) || <ErrorState error={error} onRetry={get.reload} />;
  if (!data) {
    if (loading !== undefined) return loading;
    return inline ? <p class="muted">Loading…</p> : <div class="state muted">Loading…</div>;
  }
  if (empty) return empty;
  return typeof children === 'function' ? children(data) : children;
}

/** The banner over an answer kept on screen after a refresh failed; `children` adds to it. */
export function Stale({ get, children }) {
  if (!get.error || !get.data) return null;
  return (
    <p class="stale">
      Refresh failed: {get.error.message}.{children}
    </p>
  );
}
