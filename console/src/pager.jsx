// The pager under every paged list: previous and next (the `[` and `]` keys do the same,
// `keys.js`), and where the broker gives a total, how many pages there are. Without one the
// page asks for a row more than it shows, and `more` says whether a next page exists.
// `children` replaces the "Page n" text where a list says more (rows shown, a total).
// `KeysetPager`: the pager of a list paged by key (`after`), which has no count of pages.
import { navigate } from './route.js';

export function Pager({ page, pages, more, go, label = 'Pages', testid = 'page', children }) {
  const last = pages ? page >= pages : !more;
  return (
    <nav class="pager" aria-label={label}>
      <button
        type="button"
        disabled={page <= 1}
        onClick={() => go(page - 1)}
        title="Previous page ( [ )"
      >
        ← Previous
      </button>
      <span data-testid={testid}>
        {children ?? (pages ? `Page ${page} of ${pages}` : `Page ${page}`)}
      </span>
      <button
        type="button"
        data-testid={`${testid}-next`}
        disabled={last}
        onClick={() => go(page + 1)}
        title="Next page ( ] )"
      >
        Next →
      </button>
    </nav>
  );
}

/**
 * The pager of a keyset list (the key/value rows, a queue's timers): each answer names the
 * key the next page starts after, and there is no offset, so no count of pages and no
 * "previous", only the first page again. `after`: where this page starts ('' on the first);
 * `first`, `next`: the links (`next` null on the last page). Nothing on a lone first page.
 * `id` names it for the tests: `{id}-pager`, `{id}-page`, `{id}-first`, `{id}-next`.
 */
export function KeysetPager({ id, after, first, next }) {
  if (!after && !next) return null;
  return (
    <nav class="pager" aria-label="Pages" data-testid={`${id}-pager`}>
      {after && (
        <a href={first} data-testid={`${id}-first`} title="The first page ( [ )">
          ← First page
        </a>
      )}
      <span data-testid={`${id}-page`}>
        {after ? `Keys after “${after}”` : 'First page'}
        {next ? '' : ' (the last page)'}
      </span>
      {next && (
        <a href={next} data-testid={`${id}-next`} title="Next page ( ] )">
          Next page →
        </a>
      )}
    </nav>
  );
}

/** The `[` and `]` of a keyset list, for `useListKeys`: back to the first page, the next. */
export function keysetTurns({ after, first, next }) {
  return {
    prev: after ? () => navigate(first) : null,
    next: next ? () => navigate(next) : null,
  };
}
