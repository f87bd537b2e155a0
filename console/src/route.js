// Hash routes (`#/queues?search=x&page=2`): the broker serves one index.html at `/`, so
// the pages need no server-side routes and a reload keeps the page and its query.

export function parse(hash) {
  const raw = (hash || '').replace(/^#/, '') || '/';
  const [path, query = ''] = raw.split('?');
  return { path: path || '/', query: Object.fromEntries(new URLSearchParams(query)) };
}

export function href(path, query = {}) {
  const q = new URLSearchParams(
    Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== ''),
  ).toString();
  return `#${path}${q ? `?${q}` : ''}`;
}

export function navigate(to) {
  location.hash = to;
}
