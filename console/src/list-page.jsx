// A page of one paged listing, laid out one way everywhere: the header (the `title`, then
// what `head` adds: a count, a search, a link), what the page says above the list (`top`:
// filters, notes, an action's outcome), the banner over a kept answer, the list as `Loaded`
// shows it (`empty`, `children`; `failed`, an error in the page's own words), the pager
// (`pager`: its props, or false for none), and `bottom` (a dialog, a preview).
import { Loaded, Stale } from './loaded.jsx';
import { Pager } from './pager.jsx';

export function ListPage({ id, title, head, top, get, empty, failed, pager, bottom, children }) {
  return (
    <section aria-labelledby={`${id}-title`}>
      <header class="page-head">
        <h1 id={`${id}-title`}>{title}</h1>
        {head}
      </header>
      {top}
      <Stale get={get} />
      <Loaded get={get} empty={empty} failed={failed}>
        {children}
      </Loaded>
      {pager && <Pager {...pager} />}
      {bottom}
    </section>
  );
}
