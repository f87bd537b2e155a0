// A column header that sorts: a button inside the `<th>` (so it takes the focus and
// Enter or Space), `aria-sort` on the header so a screen reader says the order.
import { nextSort } from './sort.js';

export function SortHeader({ label, col, sort, desc = true, num, onSort, title }) {
  const on = sort?.key === col;
  const dir = on ? (sort.desc ? 'descending' : 'ascending') : 'none';
  return (
    <th scope="col" class={num ? 'num' : undefined} aria-sort={dir}>
      <button
        type="button"
        class="sort"
        data-sort={col}
        title={title || `Sort this page by ${label.toLowerCase()}`}
        onClick={() => onSort(nextSort(sort, col, desc))}
      >
        {label}
        <span class="sort-mark" aria-hidden="true">
          {on ? (sort.desc ? '▼' : '▲') : ''}
        </span>
      </button>
    </th>
  );
}
