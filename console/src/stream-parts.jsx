// The pieces the Streams pages share: a query's source and sink queues, and a state key
// with its separators shown.
import { href } from './route.js';
import { keyParts, partPrefixes, SEP_SHOWN } from './streams.js';
import './streams.css';

/** A query's source and sink queues, each opening its queue page. */
export function Flow({ q }) {
  return (
    <span class="flow">
      <a href={href('/queue', { name: q.source_queue })} tabIndex={-1} data-testid="source">
        {q.source_queue}
      </a>
      {' → '}
      {q.sink_queue ? (
        <a href={href('/queue', { name: q.sink_queue })} tabIndex={-1} data-testid="sink">
          {q.sink_queue}
        </a>
      ) : (
        <span class="muted" title="The query pushes nothing" data-testid="sink">
          no sink
        </span>
      )}
    </span>
  );
}

/**
 * A state key, its parts as the SDK joined them (operator tag, user key, window), the
 * invisible separators drawn as ` · `: copying the text gives the key as typed into the
 * prefix filter. With `narrow(prefix)`, each part but the last links to the rows that share
 * the key up to it.
 */
export function StateKey({ k, narrow }) {
  const prefixes = partPrefixes(k);
  // A part is known by its place in the key.
  const parts = keyParts(k).map((text, at) => ({ text, at, id: `part-${at}` }));
  const cls = (p) => (parts.length > 1 ? `part part-${Math.min(p.at, 2)}` : 'part');
  return (
    <span class="state-key">
      {parts.map((p) => (
        <span key={p.id}>
          {p.at > 0 && (
            <span class="sep" title="U+001F, the unit separator">
              {SEP_SHOWN}
            </span>
          )}
          {narrow && p.at < prefixes.length ? (
            <a
              class={cls(p)}
              href={narrow(prefixes[p.at])}
              tabIndex={-1}
              title="The rows whose key starts like this"
            >
              {p.text}
            </a>
          ) : (
            <span class={cls(p)}>{p.text}</span>
          )}
        </span>
      ))}
    </span>
  );
}
