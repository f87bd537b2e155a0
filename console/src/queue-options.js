// The configuration form of one queue, as values the inputs hold (strings; '' = not sent)
// and the `POST /api/v1/configure` body they make.
//
// Configure replaces the whole configuration: an option not sent takes the broker's
// default. The only read of a queue's options is `GET /status/queues/:queue`'s `config`,
// which reports some of them; the rest start blank (not sent) unless this tab saved them,
// in which case configure's echo of every option fills them. The broker validates every
// value; the form sends what was typed and shows the broker's error.

/** The options the form edits: `reported` ones are read from the queue's `config`. */
export const OPTIONS = [
  { key: 'leaseTime', label: 'Lease time', unit: 's', reported: true },
  { key: 'retryLimit', label: 'Retry limit', unit: 'nacks', reported: true },
  { key: 'retryDelay', label: 'Retry delay', unit: 'ms', reported: true },
  { key: 'ttl', label: 'TTL', unit: 's', reported: true },
  { key: 'maxSize', label: 'Max size', unit: 'messages', reported: true },
  { key: 'priority', label: 'Priority', unit: '', reported: true },
  { key: 'delayedProcessing', label: 'Delayed processing', unit: 's' },
  { key: 'windowBuffer', label: 'Window buffer', unit: 's' },
  { key: 'retentionSeconds', label: 'Retention', unit: 's' },
  { key: 'completedRetentionSeconds', label: 'Completed retention', unit: 's' },
  { key: 'maxWaitTimeSeconds', label: 'Max wait time', unit: 's' },
  { key: 'retentionEnabled', label: 'Retention enabled', flag: true },
  { key: 'encryptionEnabled', label: 'Encryption enabled', flag: true },
];

/**
 * The form's starting values from the status route's `queue` and, when this tab saved the
 * queue, configure's echoed `options` (which hold every option, so they win).
 */
export function formValues(queue, echo) {
  const c = queue?.config || {};
  const reported = {
    leaseTime: c.leaseTime,
    retryLimit: c.retryLimit,
    retryDelay: c.retryDelay,
    ttl: c.ttl,
    maxSize: c.maxQueueSize,
    priority: queue?.priority,
  };
  const v = {
    namespace: queue?.namespace ?? '',
    task: queue?.task ?? '',
    deadLetter: deadLetterValue(echo ?? null, c.deadLetterQueue),
  };
  for (const o of OPTIONS) {
    const known = echo && o.key in echo ? echo[o.key] : reported[o.key];
    v[o.key] = known === undefined || known === null ? '' : String(known);
  }
  return v;
}

// Dead-lettering is reported as one effective switch; the broker stores two flags and
// turns it off only when both are false. The echo shows both as stored.
function deadLetterValue(echo, effective) {
  if (echo) {
    const both = [echo.deadLetterQueue, echo.dlqAfterMaxRetries];
    return both.every((f) => f === false) ? 'off' : 'on';
  }
  if (effective === undefined || effective === null) return '';
  return effective ? 'on' : 'off';
}

/** A typed value as sent: '' is not sent, a number as a number, anything else as typed. */
function typed(text, flag) {
  const t = String(text).trim();
  if (t === '') return undefined;
  if (flag) return t === 'true' ? true : t === 'false' ? false : t;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

/** The configure body of queue `name` with the form's values. */
export function configureBody(name, v) {
  const options = {};
  for (const o of OPTIONS) {
    const x = typed(v[o.key] ?? '', o.flag);
    if (x !== undefined) options[o.key] = x;
  }
  // Both flags, so "off" is off (one false flag alone still dead-letters) and "on" is on
  // whatever was stored before.
  if (v.deadLetter === 'on' || v.deadLetter === 'off') {
    options.deadLetterQueue = v.deadLetter === 'on';
    options.dlqAfterMaxRetries = v.deadLetter === 'on';
  }
  return { queue: name, namespace: v.namespace ?? '', task: v.task ?? '', options };
}
