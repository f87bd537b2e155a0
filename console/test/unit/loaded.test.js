// Loaded and Stale draw no hooks, so they are called here as functions and their answers
// read as Preact elements, without a DOM.
import { describe, expect, it } from 'vitest';
import { ErrorState } from '../../src/components.jsx';
import { Loaded, Stale } from '../../src/loaded.jsx';

const reload = () => {};
const failure = Object.assign(new Error('boom'), { status: 500 });
const waiting = { data: null, error: null, loading: true, reload };
const failing = { data: null, error: failure, loading: false, reload };
const answered = { data: { rows: [1] }, error: null, loading: false, reload };
const stale = { ...answered, error: failure };

/** An element's text, its components left as they are. */
function text(node) {
  if (node == null || typeof node === 'boolean') return '';
  if (typeof node !== 'object') return String(node);
  if (Array.isArray(node)) return node.map(text).join('');
  return text(node.props.children);
}

describe('Loaded', () => {
  it('says it is loading until the first answer, as a box or a panel line', () => {
    const box = Loaded({ get: waiting, children: 'rows' });
    expect([box.type, box.props.class, text(box)]).toEqual(['div', 'state muted', 'Loading…']);
    const line = Loaded({ get: waiting, inline: true, children: 'rows' });
    expect([line.type, line.props.class, text(line)]).toEqual(['p', 'muted', 'Loading…']);
    expect(Loaded({ get: waiting, loading: null })).toBe(null);
  });

  it('shows the error, with a retry, while there is no answer', () => {
    const shown = Loaded({ get: failing, children: 'rows' });
    expect(shown.type).toBe(ErrorState);
    expect(shown.props).toMatchObject({ error: failure, onRetry: reload });
  });

  it('lets a page say an error in its own words, or leave it to ErrorState', () => {
    const own = Loaded({ get: failing, failed: (e) => `unavailable: ${e.message}` });
    expect(own).toBe('unavailable: boom');
    expect(Loaded({ get: failing, failed: (e) => e.status === 404 && 'gone' }).type).toBe(
      ErrorState,
    );
  });

  it('shows the empty state only once answered', () => {
    expect(Loaded({ get: waiting, empty: 'none', inline: true }).type).toBe('p');
    expect(Loaded({ get: answered, empty: 'none', children: 'rows' })).toBe('none');
    expect(Loaded({ get: answered, empty: false, children: 'rows' })).toBe('rows');
  });

  it('hands the answer to a function child, and keeps it over a failed refresh', () => {
    expect(Loaded({ get: answered, children: (d) => d.rows.length })).toBe(1);
    expect(Loaded({ get: stale, children: (d) => d.rows.length })).toBe(1);
  });
});

describe('Stale', () => {
  it('shows only over an answer kept after a failed refresh', () => {
    expect(Stale({ get: waiting })).toBe(null);
    expect(Stale({ get: failing })).toBe(null);
    expect(Stale({ get: answered })).toBe(null);
    const banner = Stale({ get: stale, children: ' Showing the last answer.' });
    expect([banner.props.class, text(banner)]).toEqual([
      'stale',
      'Refresh failed: boom. Showing the last answer.',
    ]);
  });
});
