// The tenant's key/value rows (`#/kv?ns=…&prefix=…&after=…`): one namespace, browsed by key
// prefix, 100 rows a page in key order (`POST /api/v1/kv` with a `getPrefix` read), each
// with its value pretty-printed, its version, when it expires and when it was written; the
// next page starts after the last key (`nextAfter`). A row is deleted after a confirmation,
// fenced by the version shown. `POST /api/v1/kv` carries writes as well as reads, so the
// route is read-write: the tab is not shown to a read-only token, and the page says why.
// Keys: `/` focuses the namespace, arrows or j/k move, Delete deletes a row, `]` turns to
// the next page and `[` back to the first.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Confirm, EmptyState, ErrorState, Outcome, Reload, RowAction } from '../components.jsx';
import { count } from '../format.js';
import { useApi, useAsked } from '../hooks.js';
import { deleteAsks, rowKeys, useListKeys } from '../keys.js';
import {
  deleteBody,
  deleteVerdict,
  expires,
  KV_PAGE,
  kvHref,
  missing,
  prefixBody,
  prefixPage,
  readKv,
} from '../kv.js';
import { ListPage } from '../list-page.jsx';
import { instant, pretty } from '../messages.js';
import { KeysetPager, keysetTurns } from '../pager.jsx';
import { navigate } from '../route.js';
import { can, useSession } from '../session.js';
import '../actions.css';
import '../streams.css';

const REFRESH_MS = 10000;
const PATH = '/api/v1/kv';
// What `Loaded` is given while the page lacks a namespace or prefix: an answer of nothing,
// so it shows what the page lacks rather than "Loading…".
const ASKED_NOTHING = { data: {}, error: null };

/** The refusal a read-only token gets: said before asking, or for the broker's own 403. */
function readOnly(role) {
  return Object.assign(
    new Error(
      `The key/value page needs a read-write or admin token${role ? `, not ${role}` : ''}: POST /api/v1/kv carries writes as well as reads, so the broker refuses it to a read-only token.`,
    ),
    { status: 403 },
  );
}

export function KeyValue({ query }) {
  const { session } = useSession();
  if (!can(session, 'read-write')) return <ErrorState error={readOnly(session?.role)} />;
  return <Browser query={query} />;
}

function Browser({ query }) {
  const where = readKv(query);
  const lacking = missing(where);
  const [ns, setNs] = useState(where.ns);
  const [prefix, setPrefix] = useState(where.prefix);
  // A namespace or prefix from a link: shown in the fields.
  useEffect(() => setNs(where.ns), [where.ns]);
  useEffect(() => setPrefix(where.prefix), [where.prefix]);
  // Typing browses after a pause, as every list's search does; Enter at once. Another
  // namespace or prefix starts at its first page.
  const apply = () => navigate(kvHref({ ns, prefix }));
  useEffect(() => {
    if (ns === where.ns && prefix === where.prefix) return undefined;
    const t = setTimeout(apply, 250);
    return () => clearTimeout(t);
  }, [ns, prefix]);
  const input = useRef(null);

  const form = (
    <form
      class="panel"
      aria-label="The namespace and key prefix to browse"
      onSubmit={(e) => {
        e.preventDefault();
        apply();
      }}
    >
      <div class="filters">
        <Field
          label="Namespace"
          inputRef={input}
          name="ns"
          placeholder="namespace   ( / )"
          value={ns}
          set={setNs}
        />
        <Field
          label="Key prefix"
          name="prefix"
          placeholder="user:"
          value={prefix}
          set={setPrefix}
        />
        <div class="actions">
          <button type="submit">Browse</button>
        </div>
      </div>
      <p class="filters-hint muted">
        A namespace is browsed by key prefix, never listed whole (the broker refuses an empty
        prefix): the rows whose key starts with the prefix, byte for byte, in key order,{' '}
        {count(KV_PAGE)} a page.
      </p>
    </form>
  );

  const table = useRef(null);
  // Nothing is asked until both are given: the broker refuses an empty prefix. The fields
  // stay the same elements either way, so typing is never interrupted by the page changing.
  const read = useApi(lacking ? null : PATH, {
    body: lacking ? undefined : prefixBody(where),
    everyMs: lacking ? 0 : REFRESH_MS,
  });
  const { rows, nextAfter } = prefixPage(lacking ? null : read.data);
  const first = kvHref({ ns: where.ns, prefix: where.prefix });
  const next = nextAfter && kvHref({ ...where, after: nextAfter });
  useListKeys({ input, table, ...keysetTurns({ after: where.after, first, next }) });

  // What a delete did is said about the rows it was done on, not another namespace's.
  const asked = useAsked([where.ns, where.prefix]);
  const { pending } = asked;
  const ask = (row) => asked.ask({ ns: where.ns, key: row.key, version: row.version });
  const remove = async () => {
    const body = deleteBody(pending);
    const said = (out) => deleteVerdict(out, pending.key);
    if (await asked.act(PATH, { method: 'POST', body }, said)) read.reload();
  };

  return (
    <ListPage
      id="kv"
      title={<>Key/value{lacking ? '' : <span class="muted"> / {where.ns}</span>}</>}
      head={
        !lacking &&
        read.data && (
          <>
            <span class="badge" data-testid="kv-count" data-value={rows.length}>
              {count(rows.length)} row{rows.length === 1 ? '' : 's'}
            </span>
            <Reload get={read} />
          </>
        )
      }
      top={
        <>
          {form}
          <Outcome id="kv" error={!pending && asked.action.error} result={asked.result} />
        </>
      }
      get={lacking ? ASKED_NOTHING : read}
      // Reached with a token whose role the session did not know: the broker's 403, said as
      // the page says it.
      failed={(error) => error.status === 403 && <ErrorState error={readOnly()} />}
      empty={
        lacking ? (
          <Lacking what={lacking} />
        ) : (
          rows.length === 0 && (
            <EmptyState
              title={
                where.after
                  ? `No key after “${where.after}” starts with “${where.prefix}”`
                  : `No key in “${where.ns}” starts with “${where.prefix}”`
              }
            >
              <p>
                The prefix matches the start of a key, byte for byte; expired rows are never shown.
              </p>
              {where.after && <a href={first}>First page</a>}
            </EmptyState>
          )
        )
      }
      pager={false}
      bottom={
        <>
          <KeysetPager id="kv" after={where.after} first={first} next={next} />
          {pending && (
            <Confirm
              title={`Delete “${pending.key}”?`}
              action="Delete"
              danger
              {...asked.confirm}
              onConfirm={remove}
            >
              <p>
                The row <code>{pending.key}</code> of namespace <code>{pending.ns}</code>, at
                version <strong data-testid="confirm-version">{pending.version}</strong>, is deleted
                for good.
              </p>
              <p class="muted">
                Only that version is: if the row was written since this page read it, nothing is
                deleted and the page says so.
              </p>
            </Confirm>
          )}
        </>
      }
    >
      <Rows rows={rows} ask={ask} inputRef={input} tableRef={table} />
    </ListPage>
  );
}

/** A field of the form: typed as is, a key's bytes being what a prefix matches. */
function Field({ label, inputRef, name, placeholder, value, set }) {
  return (
    <label>
      {label}
      <input
        ref={inputRef}
        class="search"
        name={name}
        required
        autocomplete="off"
        spellcheck={false}
        placeholder={placeholder}
        data-testid={`kv-${name}`}
        value={value}
        onInput={(e) => set(e.currentTarget.value)}
      />
    </label>
  );
}

/** What the page needs before it reads anything. */
function Lacking({ what }) {
  return (
    <EmptyState title={what === 'ns' ? 'Which namespace?' : 'Which keys?'}>
      <p>
        {what === 'ns'
          ? 'Name the namespace the rows were written to (each operation’s ns), and the start of their keys.'
          : 'Give the start of the keys to browse: a namespace is browsed by prefix, not listed whole.'}
      </p>
    </EmptyState>
  );
}

function Rows({ rows, ask, inputRef, tableRef }) {
  const onTop = () => inputRef.current?.focus();
  return (
    <table class="grid state-table" ref={tableRef} data-testid="kv-table">
      <caption class="keys-hint">
        By key. Arrows or j/k move, Delete deletes a row, <kbd>]</kbd> turns to the next page and{' '}
        <kbd>[</kbd> back to the first.
      </caption>
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Value</th>
          <th scope="col" class="num">
            Version
          </th>
          <th scope="col">Expires (UTC)</th>
          <th scope="col">Updated (UTC)</th>
          <th scope="col">
            <span class="sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr
            key={r.key}
            tabIndex={0}
            data-key={r.key}
            onKeyDown={deleteAsks(() => ask(r), rowKeys(null, { onTop }))}
          >
            <td class="key">
              <span class="state-key">{r.key}</span>
            </td>
            <td>
              <pre class="state-value" data-col="value">
                {pretty(r.value)}
              </pre>
            </td>
            <td class="num" data-col="version" data-value={r.version}>
              {count(r.version)}
            </td>
            <td data-col="expires">{expires(r.expiresAt)}</td>
            <td data-col="updated">{instant(r.updatedAt, { ms: true })}</td>
            <td class="row-actions">
              <RowAction testid="kv-delete" onClick={() => ask(r)}>
                Delete
              </RowAction>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
