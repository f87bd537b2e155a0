// The pager under every paged list: previous and next (the `[` and `]` keys do the same,
// `keys.js`), and where the broker gives a total, how many pages there are. Without one the
// page asks for a row more than it shows, and `more` says whether a next page exists.
// `children` replaces the "Page n" text where a list says more (rows shown, a total).

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
