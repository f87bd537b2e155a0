import { describe, expect, it } from 'vitest';
import { configureBody, formValues, OPTIONS } from '../../src/queue-options.js';

const status = {
  namespace: 'shop',
  task: 'billing',
  priority: 2,
  config: {
    leaseTime: 300,
    retryLimit: 3,
    retryDelay: 1000,
    ttl: 3600,
    maxQueueSize: 0,
    deadLetterQueue: true,
  },
};

describe('the configuration form', () => {
  it('starts from what the status route reports, the rest blank', () => {
    const v = formValues(status, null);
    expect(v).toMatchObject({
      namespace: 'shop',
      task: 'billing',
      leaseTime: '300',
      retryLimit: '3',
      maxSize: '0',
      priority: '2',
      deadLetter: 'on',
      delayedProcessing: '',
      encryptionEnabled: '',
    });
  });

  it("fills every option from configure's echo once this tab saved", () => {
    const echo = {
      leaseTime: 60,
      retryLimit: 7,
      delayedProcessing: 5,
      deadLetterQueue: false,
      dlqAfterMaxRetries: false,
      encryptionEnabled: true,
    };
    const v = formValues(status, echo);
    expect(v).toMatchObject({
      leaseTime: '60',
      retryLimit: '7',
      delayedProcessing: '5',
      deadLetter: 'off',
      encryptionEnabled: 'true',
      ttl: '3600',
    });
  });

  it('sends numbers as numbers, leaves blanks out and what is not a number as typed', () => {
    const v = { ...formValues(status, null), leaseTime: ' 120 ', retryLimit: 'x1', ttl: '' };
    const body = configureBody('orders', v);
    expect(body.queue).toBe('orders');
    expect(body.namespace).toBe('shop');
    expect(body.options.leaseTime).toBe(120);
    expect(body.options.retryLimit).toBe('x1');
    expect('ttl' in body.options).toBe(false);
    expect('delayedProcessing' in body.options).toBe(false);
  });

  it('turns dead-lettering off with both flags, on with both', () => {
    const off = configureBody('q', { ...formValues(status, null), deadLetter: 'off' });
    expect(off.options).toMatchObject({ deadLetterQueue: false, dlqAfterMaxRetries: false });
    const on = configureBody('q', { ...formValues(status, null), deadLetter: 'on' });
    expect(on.options).toMatchObject({ deadLetterQueue: true, dlqAfterMaxRetries: true });
    const flag = configureBody('q', { ...formValues(status, null), retentionEnabled: 'false' });
    expect(flag.options.retentionEnabled).toBe(false);
  });

  it('round-trips what was reported', () => {
    const body = configureBody('q', formValues(status, null));
    for (const o of OPTIONS.filter(
      (x) => x.reported && x.key !== 'maxSize' && x.key !== 'priority',
    ))
      expect(body.options[o.key]).toBe(status.config[o.key]);
    expect(body.options.maxSize).toBe(0);
    expect(body.options.priority).toBe(2);
  });
});
