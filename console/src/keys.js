// The keyboard of the list pages, one way everywhere: `/` focuses the page's search or
// first filter, ArrowDown from it enters the table, `[` and `]` turn the page; in a table of
// focusable rows (`<tr tabIndex=0>`) arrows or j/k move between rows, up from the first goes
// back to the search, and Enter opens a row.
import { useEffect } from 'preact/hooks';

const FIELDS = new Set(['INPUT', 'SELECT', 'TEXTAREA']);

/**
 * Page-wide keys while the page is shown, ignored while a dialog is open and (but for
 * ArrowDown from `input` into `table`) while typing in a field. `focus` defaults to
 * focusing `input`; `prev`/`next` are null when there is no such page.
 */
export function useListKeys({ input, table, focus, prev, next }) {
  useEffect(() => {
    const onKey = (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      if (document.querySelector('dialog[open]')) return;
      if (FIELDS.has(e.target.tagName)) {
        if (e.key === 'ArrowDown' && input && e.target === input.current) {
          e.preventDefault();
          table?.current?.querySelector('tbody tr')?.focus();
        }
        return;
      }
      const toSearch = focus || (input && (() => input.current?.focus()));
      if (e.key === '/' && toSearch) {
        e.preventDefault();
        toSearch();
      } else if (e.key === ']' && next) next();
      else if (e.key === '[' && prev) prev();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  });
}

const MOVES = {
  ArrowDown: 'nextElementSibling',
  j: 'nextElementSibling',
  ArrowUp: 'previousElementSibling',
  k: 'previousElementSibling',
};

/**
 * A row's arrow keys: focus the next or previous row; from the first, `onTop` (the search).
 * Answers whether it handled the key. Keys from controls inside the row are theirs.
 */
export function moveRow(e, onTop) {
  const tr = e.currentTarget;
  if (e.target !== tr) return false;
  const to = MOVES[e.key];
  if (!to) return false;
  e.preventDefault();
  if (tr[to]) tr[to].focus();
  else if (to === 'previousElementSibling') onTop?.();
  return true;
}

/** A row's keydown handler: `moveRow`, and Enter calls `open(row)` when there is one. */
export function rowKeys(open, { onTop } = {}) {
  return (e) => {
    if (moveRow(e, onTop)) return;
    if (e.key === 'Enter' && open && e.target === e.currentTarget) {
      e.preventDefault();
      open(e.currentTarget);
    }
  };
}

/**
 * A row's keydown handler where Delete asks to remove it (`ask()`: a question first, never
 * the act), the row's own key only; every other key goes to `keys` (`rowKeys`).
 */
export function deleteAsks(ask, keys) {
  return (e) => {
    if (e.key === 'Delete' && e.target === e.currentTarget) {
      e.preventDefault();
      ask();
    } else keys(e);
  };
}
