// The keyboard of the list pages: `/` focuses the page's search or first filter, `[` and
// `]` turn the page, and in a table arrows (or j/k) move between rows and Enter opens one.
import { useEffect } from 'preact/hooks';

const FIELDS = new Set(['INPUT', 'SELECT', 'TEXTAREA']);

/** Page-wide keys, ignored while typing in a field or while a dialog is open. */
export function useListKeys({ focus, prev, next }) {
  useEffect(() => {
    const onKey = (e) => {
      if (FIELDS.has(e.target.tagName) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (document.querySelector('dialog[open]')) return;
      if (e.key === '/' && focus) {
        e.preventDefault();
        focus();
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

/** A row's keydown handler: move to the next or previous row, Enter calls `open`. */
export function rowKeys(open, { onTop } = {}) {
  return (e) => {
    const tr = e.currentTarget;
    const move = MOVES[e.key];
    if (move) {
      e.preventDefault();
      if (tr[move]) tr[move].focus();
      else if (move === 'previousElementSibling') onTop?.();
    } else if (e.key === 'Enter' && e.target === tr) {
      e.preventDefault();
      open(tr);
    }
  };
}
