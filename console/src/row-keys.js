// Keys inside a table of focusable rows (`<tr tabIndex=0>`): arrows or j/k move between
// rows, Enter opens the row when the table can (`open(row element)`). Up from the first
// row calls `top` (the page's search or first control), when there is one.

const MOVES = {
  ArrowDown: 'nextElementSibling',
  j: 'nextElementSibling',
  ArrowUp: 'previousElementSibling',
  k: 'previousElementSibling',
};

export function rowKeys({ open, top } = {}) {
  return (e) => {
    const tr = e.currentTarget;
    const next = MOVES[e.key];
    if (next && tr[next]) {
      e.preventDefault();
      tr[next].focus();
    } else if ((e.key === 'ArrowUp' || e.key === 'k') && top) {
      e.preventDefault();
      top();
    } else if (e.key === 'Enter' && open && e.target === tr) {
      e.preventDefault();
      open(tr);
    }
  };
}

/** Turns the page with `[` and `]` while no input has the focus. */
export function pageKeys({ prev, next }) {
  return (e) => {
    const tag = e.target?.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
    if (e.key === ']' && next) next();
    else if (e.key === '[' && prev) prev();
  };
}
