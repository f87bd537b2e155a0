// A page of the listing with no dead letter on it: past the last page, none matching the
// filter, or none at all.
import { EmptyState } from '../components.jsx';
import { describeFilter } from '../deadletters.js';
import { href } from '../route.js';

export function Empty({ filter, page, total }) {
  if (page > 1 && total > 0)
    return (
      <EmptyState title="Past the last page">
        <a href={href('/dlq', { ...filter, page: undefined })}>Back to the first page</a>
      </EmptyState>
    );
  if (describeFilter(filter))
    return (
      <EmptyState title="No dead letter matches the filter">
        <a href={href('/dlq')}>Show every dead letter</a>
      </EmptyState>
    );
  return (
    <EmptyState title="No dead letters">
      <p>
        A message lands here when a consumer acks it with <code>"status": "dlq"</code>, or fails it
        past its queue's <code>retryLimit</code>.
      </p>
    </EmptyState>
  );
}
