// What the last action did, counted from the broker's verdicts (`result`), or why it failed:
// the shared `Outcome`, carrying the verdicts' counts for the test.
import { Outcome as Said } from '../components.jsx';

export function Outcome({ error, result }) {
  const v = result?.verdicts;
  return (
    <Said
      id="dlq"
      titled
      error={error}
      result={result}
      data={{
        'data-requeued': v?.requeued,
        'data-deleted': v?.deleted,
        'data-duplicate': v?.duplicate,
        'data-gone': v?.gone,
        'data-more': v?.more,
      }}
    />
  );
}
