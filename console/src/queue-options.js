// The configuration form of one queue, as values the inputs hold (strings) and the
// `POST /api/v1/configure` body they make.
//
// Configure replaces the whole configuration: an option not sent takes the broker's
// default. `GET /status/queues/:queue` names every option as configure echoes it
// (`queue.options`), so the form starts from all of them and sends all of them back, the
// ones not edited unchanged. The broker validates every value; the form sends what was
// typed and shows the broker's error.

/**
 * The options the form edits, in its order. `kind`: `int` (a number input), `flag` (on or
 * off), `tri` (on, off, or never set: the dead-letter flags, stored as `null` until set).
 * `storedOnly`: the broker stores and echoes it (as Queen 0.15 does) but applies it nowhere
 * (docs/api.md, "Options stored but not applied"), so the form says so.
 */
export const OPTIONS = [
  { key: 'leaseTime', label: 'Lease time', unit: 's', kind: 'int' },
  { key: 'retryLimit', label: 'Retry limit', unit: 'nacks', kind: 'int' },
  { key: 'retryDelay', label: 'Retry delay', unit: 'ms', kind: 'int', storedOnly: true },
  { key: 'ttl', label: 'TTL', unit: 's', kind: 'int', storedOnly: true },
  { key: 'maxSize', label: 'Max size', unit: 'messages', kind: 'int', storedOnly: true },
  { key: 'priority', label: 'Priority', kind: 'int' },
  { key: 'delayedProcessing', label: 'Delayed processing', unit: 's', kind: 'int' },
  { key: 'windowBuffer', label: 'Window buffer', unit: 's', kind: 'int' },
  { key: 'retentionSeconds', label: 'Retention', unit: 's', kind: 'int' },
  { key: 'completedRetentionSeconds', label: 'Completed retention', unit: 's', kind: 'int' },
  { key: 'maxWaitTimeSeconds', label: 'Max wait time', unit: 's', kind: 'int' },
  { key: 'deadLetterQueue', label: 'Dead-letter queue', kind: 'tri' },
  { key: 'dlqAfterMaxRetries', label: 'Dead-letter after the retry limit', kind: 'tri' },
  { key: 'retentionEnabled', label: 'Retention enabled', kind: 'flag' },
  { key: 'encryptionEnabled', label: 'Encryption enabled', kind: 'flag' },
];

/** The form's values from the status route's `queue`: every option as a string. */
export function formValues(queue) {
  const o = queue?.options || {};
  const v = { namespace: queue?.namespace ?? '', task: queue?.task ?? '' };
  for (const { key } of OPTIONS) {
    const x = o[key];
    v[key] = x === undefined || x === null ? '' : String(x);
  }
  return v;
}

/** A typed value as sent: a number as a number, a flag as a boolean, the rest as typed. */
function typed(text, kind) {
  const t = String(text ?? '').trim();
  if (kind === 'tri' && t === '') return null;
  if (kind !== 'int') return t === 'true' ? true : t === 'false' ? false : t;
  const n = t === '' ? Number.NaN : Number(t);
  return Number.isFinite(n) ? n : t;
}

/**
 * The configure body of queue `name` with the form's values. `stored` (the queue's
 * `options`) is the base, so an option the form does not know is sent back as it was.
 */
export function configureBody(name, v, stored = {}) {
  const options = { ...stored };
  for (const { key, kind } of OPTIONS) options[key] = typed(v[key], kind);
  return { queue: name, namespace: v.namespace ?? '', task: v.task ?? '', options };
}

/** Whether the flags dead-letter: only both explicitly off (`false`) turn it off. */
export function deadLettering(v) {
  return !(v.deadLetterQueue === 'false' && v.dlqAfterMaxRetries === 'false');
}
