// The key/value page's logic, kept pure: its route (`#/kv?ns=…&prefix=…&after=…`), the
// `POST /api/v1/kv` bodies it sends (a `getPrefix` read, a delete fenced by the version
// shown) and what their answers say. A namespace is not listed whole: the broker refuses an
// empty prefix (`kv_prefix_required`), so the page asks for one. Pages are keyset pages:
// each answers `nextAfter`, the key the next page starts after; there is no offset, so no
// count of pages and no "previous", only the first page again.
import { instant } from './messages.js';
import { href } from './route.js';

/** The rows a page asks for: the broker's default, well under its 1,000 maximum. */
export const KV_PAGE = 100;

/** The namespace, prefix and keyset position a route names; absent ones are empty. */
export function readKv(query = {}) {
  // Taken as typed, spaces included: a key's bytes are what a prefix matches.
  return { ns: query.ns || '', prefix: query.prefix || '', after: query.after || '' };
}

/** What the page lacks before it can read, or null: a namespace, then a prefix. */
export function missing({ ns, prefix }) {
  if (!ns) return 'ns';
  if (!prefix) return 'prefix';
  return null;
}

/** The page of `ns` and `prefix` that starts after the key `after` (the first page without). */
export function kvHref({ ns, prefix, after } = {}) {
  return href('/kv', { ns, prefix, after });
}

/** The read of one page: `getPrefix` from `after` (exclusive), `size` rows. */
export function prefixBody({ ns, prefix, after }, size = KV_PAGE) {
  const op = { op: 'getPrefix', ns, prefix };
  if (after) op.after = after;
  op.limit = size;
  return { operations: [op] };
}

/** The rows of a read's answer, and the key the next page starts after (null on the last). */
export function prefixPage(answer) {
  const r = answer?.results?.[0];
  const rows = r?.rows || [];
  // `nextAfter` is only meant when the page was cut short; never a link to an empty page.
  const nextAfter = r?.truncated && r.nextAfter ? r.nextAfter : null;
  return { rows, nextAfter };
}

/** When a row expires: "never" for one kept forever (`expiresAt: null`). */
export function expires(iso) {
  return iso ? instant(iso, { ms: true }) : 'never';
}

/**
 * The delete of a row as shown: fenced by its version (`expect`), so a row written since it
 * was read is not deleted. Not `required`: a fenced miss answers 200 with its reason rather
 * than a 409, and the page says what it found.
 */
export function deleteBody({ ns, key, version }) {
  return { operations: [{ op: 'delete', ns, key, expect: version }] };
}

/**
 * What a delete's answer means: `kind` (`deleted`, `changed`: written since it was shown,
 * `absent`: gone already, deleted or expired) and the sentence the page shows.
 */
export function deleteVerdict(answer, key) {
  const r = answer?.results?.[0] || {};
  if (r.applied) return { kind: 'deleted', text: `Deleted “${key}” (version ${r.version}).` };
  if (r.reason === 'version')
    return {
      kind: 'changed',
      text: `“${key}” was written since it was shown (it is at version ${r.version} now): nothing was deleted. Look at its value again before deleting it.`,
    };
  if (r.reason === 'absent')
    return {
      kind: 'absent',
      text: `“${key}” was gone already (deleted, or expired): nothing was deleted.`,
    };
  return { kind: 'other', text: `“${key}” was not deleted (${r.reason || 'no reason given'}).` };
}
