import { describe, expect, it } from 'vitest';
import { configureBody, deadLettering, formValues, OPTIONS } from '../../src/queue-options.js';

// `queue` as `GET /status/queues/:queue` answers it, `options` as configure echoes them.
const queue = {
  namespace: 'shop',
  task: 'billing',
  options: {
    leaseTime: 300,
    retryLimit: 3,
    retryDelay: 1000,
    ttl: 3600,
    maxSize: 0,
    priority: 2,
    delayedProcessing: 5,
    windowBuffer: 7,
    retentionSeconds: 0,
    completedRetentionSeconds: 0,
    maxWaitTimeSeconds: 30,
    deadLetterQueue: null,
    dlqAfterMaxRetries: false,
    retentionEnabled: false,
    encryptionEnabled: true,
  },
};

describe('the configuration form', () => {
  it('starts from every option the queue reports', () => {
    expect(formValues(queue)).toEqual({
      namespace: 'shop',
      task: 'billing',
      leaseTime: '300',
      retryLimit: '3',
      retryDelay: '1000',
      ttl: '3600',
      maxSize: '0',
      priority: '2',
      delayedProcessing: '5',
      windowBuffer: '7',
      retentionSeconds: '0',
      completedRetentionSeconds: '0',
      maxWaitTimeSeconds: '30',
      deadLetterQueue: '',
      dlqAfterMaxRetries: 'false',
      retentionEnabled: 'false',
      encryptionEnabled: 'true',
    });
  });

  it('edits every option configure echoes', () => {
    expect(OPTIONS.map((o) => o.key).sort()).toEqual(Object.keys(queue.options).sort());
  });

  it('sends every option back exactly as reported when nothing was edited', () => {
    expect(configureBody('orders', formValues(queue), queue.options)).toEqual({
      queue: 'orders',
      namespace: 'shop',
      task: 'billing',
      options: queue.options,
    });
  });

  it('sends an edit with the rest unchanged, and an option it does not know as it was', () => {
    const stored = { ...queue.options, futureOption: 'x' };
    const v = { ...formValues(queue), retryLimit: ' 9 ', deadLetterQueue: 'false' };
    expect(configureBody('q', v, stored).options).toEqual({
      ...stored,
      retryLimit: 9,
      deadLetterQueue: false,
    });
  });

  it('sends what is not a number as typed, for the broker to refuse', () => {
    const v = { ...formValues(queue), leaseTime: 'x1', ttl: '' };
    const { options } = configureBody('q', v, queue.options);
    expect(options.leaseTime).toBe('x1');
    expect(options.ttl).toBe('');
  });

  it('says whether the flags dead-letter: off only when both are off', () => {
    expect(deadLettering(formValues(queue))).toBe(true);
    expect(deadLettering({ deadLetterQueue: 'false', dlqAfterMaxRetries: 'false' })).toBe(false);
    expect(deadLettering({ deadLetterQueue: '', dlqAfterMaxRetries: 'false' })).toBe(true);
  });
});
