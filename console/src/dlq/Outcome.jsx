// What the last action did, counted from the broker's verdicts (`result`), or why it failed.
import { explain } from '../api.js';

export function Outcome({ error, result }) {
  return (
    <>
      {error && (
        <p class="result result-error" role="alert" data-testid="dlq-action-error">
          {explain(error).title}: {error.message}
        </p>
      )}
      {result && (
        <p
          class="result"
          role="status"
          data-testid="dlq-result"
          data-requeued={result.verdicts?.requeued}
          data-deleted={result.verdicts?.deleted}
          data-duplicate={result.verdicts?.duplicate}
          data-gone={result.verdicts?.gone}
          data-more={result.verdicts?.more}
        >
          {result.text}
        </p>
      )}
    </>
  );
}
