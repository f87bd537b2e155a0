// The keyboard of a paged table, as the queue list has it: `/` focuses the page's first
// input, `[` and `]` turn the page, arrows (or j/k) move between rows and, from the first
// row, back up to the input.
import { useEffect } from 'preact/hooks';

/** Document-wide page keys while the page is shown; ignored while typing in a field. */
export function usePageKeys({ input, table, prev, next }) {
  useEffect(() => {
    const onKey = (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = e.target.tagName;
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
        if (e.key === 'ArrowDown' && e.target === input?.current) {
          e.preventDefault();
          table?.current?.querySelector('tbody tr')?.focus();
        }
        return;
      }
      if (document.querySelector('dialog[open]')) return;
      if (e.key === '/' && input?.current) {
        e.preventDefault();
        input.current.focus();
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
