// A stream query's state in one source partition (`#/stream-state?id=…&partition=…`):
// its rows by key (`POST /streams/v1/state/get`, a read), each key's parts with their
// separators shown as ` · `, its value pretty-printed and when it was last written. The
// prefix filter is sent as `key_prefix` (a ` · ` typed is the separator); the operator tags
// seen are offered as prefixes, and a key's parts narrow to the rows that share them. The
// read has no offset: it answers the first rows by key, 100 unless more are asked for.
// Keys: `/` focuses the prefix, arrows or j/k move, Enter narrows to the row's key but its
// last part.
import { useEffect, useRef, useState } from 'preact/hooks';
import { EmptyState } from '../components.jsx';
import { count } from '../format.js';
import { useApi } from '../hooks.js';
import { rowKeys, useListKeys } from '../keys.js';
import { ListPage } from '../list-page.jsx';
import { instant, pretty } from '../messages.js';
import { href, navigate } from '../route.js';
import { StateKey } from '../stream-parts.jsx';
import {
  MAX_STATE_LIMIT,
  moreLimit,
  partitionsQuery,
  partPrefixes,
  prefixOf,
  queryHref,
  SEP_SHOWN,
  shownKey,
  stateBody,
  stateHref,
  stateLimit,
  stateRows,
  tagPrefixes,
} from '../streams.js';
import { QueryNotFound } from './Stream.jsx';

const REFRESH_MS = 10000;

export function StreamState({ query }) {
  if (!query.id || !query.partition)
    return (
      <EmptyState title="Which partition?">
        <p>
          Open a query from the <a href={href('/streams')}>list of stream queries</a>, then one of
          its partitions.
        </p>
      </EmptyState>
    );
  return <StateView key={`${query.id}/${query.partition}`} query={query} />;
}

function StateView({ query }) {
  const { id, partition, name } = query;
  const prefix = query.prefix || '';
  const limit = stateLimit(query.limit);
  const to = (changes) => stateHref(id, partition, { name, prefix, limit, ...changes });
  // The query itself: its name for the heading, and a 404 when the tenant has none.
  const meta = useApi(partitionsQuery(id, 1, 1));
  const state = useApi('/streams/v1/state/get', {
    body: stateBody({ queryId: id, partitionId: partition, prefix, limit }),
    everyMs: REFRESH_MS,
  });
  const { rows, more } = stateRows(state.data, limit);

  // The operator tags of every answer on this page, so a narrower prefix keeps the others.
  const [tags, setTags] = useState([]);
  useEffect(() => {
    if (state.data) setTags((seen) => tagPrefixes(state.data.rows, seen));
  }, [state.data]);

  const [text, setText] = useState(shownKey(prefix));
  // A prefix from a link: shown in the field, unless the field already reads as it.
  useEffect(() => {
    if (prefixOf(text) !== prefix) setText(shownKey(prefix));
  }, [prefix]);
  // Typing filters after a pause, as every list's search does; Enter at once. A new prefix
  // asks for the default number of rows again.
  const apply = (t) => navigate(to({ prefix: prefixOf(t), limit: undefined }));
  useEffect(() => {
    if (prefixOf(text) === prefix) return undefined;
    const t = setTimeout(() => apply(text), 250);
    return () => clearTimeout(t);
  }, [text]);

  const input = useRef(null);
  const table = useRef(null);
  useListKeys({ input, table });

  if (meta.error?.status === 404 && !meta.data) return <QueryNotFound id={id} />;
  const q = meta.data?.query;
  const narrow = (p) => to({ prefix: p, limit: undefined });

  return (
    <ListPage
      id="stream-state"
      title={
        <>
          <a class="crumb" href={href('/streams')}>
            Streams
          </a>{' '}
          /{' '}
          <a class="crumb" href={queryHref(id)} data-testid="query-name">
            {q ? q.name : '…'}
          </a>{' '}
          / <span data-testid="partition-name">{name || partition}</span>
        </>
      }
      head={
        state.data && (
          <span class="badge" data-testid="state-count" data-value={rows.length}>
            {count(rows.length)}
            {more ? '+' : ''} row{rows.length === 1 && !more ? '' : 's'}
          </span>
        )
      }
      top={
        <form
          class="panel"
          aria-label="Filter the state by key prefix"
          onSubmit={(e) => {
            e.preventDefault();
            apply(text);
          }}
        >
          <div class="filters">
            <label>
              Key prefix
              <input
                ref={input}
                class="search"
                name="prefix"
                autocomplete="off"
                spellcheck={false}
                placeholder={`tag${SEP_SHOWN}key${SEP_SHOWN}   ( / )`}
                data-testid="state-prefix"
                value={text}
                onInput={(e) => setText(e.currentTarget.value)}
              />
            </label>
            <div class="actions">
              <button
                type="button"
                class="secondary"
                title="Append the separator (U+001F) to the prefix"
                data-testid="state-sep"
                onClick={() => {
                  setText(`${text}${SEP_SHOWN}`);
                  input.current?.focus();
                }}
              >
                + separator
              </button>
              <button type="submit">Apply</button>
            </div>
          </div>
          <p class="filters-hint muted">
            The SDK joins a key's parts (operator tag, key, window) with the invisible U+001F, shown
            and typed as <code>{SEP_SHOWN.trim()}</code> between spaces (<code>\u001f</code> is read
            as it too). A part of a key narrows to the rows that share it.
          </p>
          {tags.length > 0 && (
            <p class="tags" data-testid="state-tags">
              <span class="muted">Operator tags seen:</span>{' '}
              <a href={to({ prefix: '', limit: undefined })} aria-current={!prefix || undefined}>
                all
              </a>
              {tags.map((t) => (
                <a
                  key={t}
                  href={narrow(t)}
                  data-prefix={t}
                  aria-current={prefix === t || undefined}
                >
                  {shownKey(t)}
                </a>
              ))}
            </p>
          )}
        </form>
      }
      get={state}
      empty={
        rows.length === 0 && (
          <EmptyState
            title={
              prefix ? `No key starts with “${shownKey(prefix)}”` : 'No state in this partition'
            }
          >
            <p>
              {prefix
                ? 'The prefix matches the start of a key, separators included.'
                : 'The query holds no state here: none written yet, or all of it deleted by its cycles.'}
            </p>
            {prefix && <a href={to({ prefix: '', limit: undefined })}>Every key</a>}
          </EmptyState>
        )
      }
      pager={false}
      bottom={
        more && (
          <p class="note" data-testid="state-more">
            More keys match than the first {count(limit)} shown, by key.{' '}
            {limit < MAX_STATE_LIMIT ? (
              <a href={to({ limit: moreLimit(limit) })}>Show up to {count(moreLimit(limit))}</a>
            ) : (
              'Narrow the prefix to see the others.'
            )}
          </p>
        )
      }
    >
      <table class="grid state-table" ref={table} data-testid="state-table">
        <caption class="keys-hint">
          By key. Arrows or j/k move, Enter narrows to the row's key but its last part.
        </caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">Updated (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const up = partPrefixes(r.key);
            return (
              <tr
                key={r.key}
                tabIndex={0}
                data-key={r.key}
                onKeyDown={rowKeys(up.length ? () => navigate(narrow(up[up.length - 1])) : null, {
                  onTop: () => input.current?.focus(),
                })}
              >
                <td class="key">
                  <StateKey k={r.key} narrow={narrow} />
                </td>
                <td>
                  <pre class="state-value" data-col="value">
                    {pretty(r.value)}
                  </pre>
                </td>
                <td data-col="updated">{instant(r.updated_at, { ms: true })}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ListPage>
  );
}
