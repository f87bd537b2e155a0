// ListPage draws no hooks, so it is called here as a function and its answer read as
// Preact elements, without a DOM: the order of its parts is what every list page shows.
import { h } from 'preact';
import { describe, expect, it } from 'vitest';
import { ListPage } from '../../src/list-page.jsx';
import { Loaded, Stale } from '../../src/loaded.jsx';
import { Pager } from '../../src/pager.jsx';

const get = { data: { rows: [] }, error: null, loading: false, reload: () => {} };
const go = () => {};

/** The element's children, as one flat list without the empty slots. */
function parts(node) {
  return [node.props.children].flat(Infinity).filter((c) => c != null && c !== false);
}

describe('ListPage', () => {
  const page = ListPage({
    id: 'queues',
    title: 'Queues',
    head: h('input', { class: 'search' }),
    top: h('form', { class: 'filters' }),
    get,
    empty: 'none',
    pager: { page: 2, more: true, go },
    bottom: h('dialog', null),
    children: 'the table',
  });

  it('is a section named by its title', () => {
    expect(page.type).toBe('section');
    expect(page.props['aria-labelledby']).toBe('queues-title');
    const [head] = parts(page);
    const [h1, search] = parts(head);
    expect([head.props.class, h1.type, h1.props.id, h1.props.children]).toEqual([
      'page-head',
      'h1',
      'queues-title',
      'Queues',
    ]);
    expect(search.props.class).toBe('search');
  });

  it('puts the filters, the stale banner, the list, the pager and the rest in that order', () => {
    const [, top, stale, list, pager, bottom] = parts(page);
    expect(top.type).toBe('form');
    expect([stale.type, stale.props.get]).toEqual([Stale, get]);
    expect(list.type).toBe(Loaded);
    expect(list.props).toMatchObject({ get, empty: 'none', children: 'the table' });
    expect(pager.type).toBe(Pager);
    expect(pager.props).toMatchObject({ page: 2, more: true, go });
    expect(bottom.type).toBe('dialog');
  });

  it("hands the list a page's own words for an error", () => {
    const failed = () => 'said here';
    const one = ListPage({ id: 'kv', title: 'Key/value', get, failed, pager: false });
    const [, , list] = parts(one);
    expect([list.type, list.props.failed]).toEqual([Loaded, failed]);
  });

  it('leaves the pager out when told so', () => {
    const one = ListPage({ id: 'group', title: 'Group', get, pager: false, children: 'rows' });
    expect(parts(one).map((p) => p.type)).toEqual(['header', Stale, Loaded]);
  });
});
