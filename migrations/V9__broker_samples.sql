-- What each broker of the fleet measured of itself, one row per broker every
-- METRICS_SAMPLE_INTERVAL ms, so that any broker can answer the fleet's system and worker
-- metrics (`/api/v1/analytics/system-metrics`, `/worker-metrics`). Gauges are the value at
-- `sampled_at`; counters (CPU time, requests, messages) are what happened over the
-- `interval_ms` before it (since this broker's previous sample, or its start), so a bucket's
-- figure is a plain sum. No tenant owns a row: a sample names hosts and counts, never a queue.
-- Deleted after METRICS_RETENTION_HOURS by the brokers' sampling task, in bounded batches.
CREATE TABLE broker_samples (
    broker_id             uuid NOT NULL,
    sampled_at            timestamptz NOT NULL,
    hostname              text NOT NULL,
    port                  integer NOT NULL,
    interval_ms           bigint NOT NULL,
    cpu_user_us           bigint NOT NULL,
    cpu_system_us         bigint NOT NULL,
    rss_bytes             bigint NOT NULL,
    virtual_bytes         bigint NOT NULL,
    pool_size             integer NOT NULL,
    pool_open             integer NOT NULL,
    pool_idle             integer NOT NULL,
    pool_waiting          integer NOT NULL,
    push_requests         bigint NOT NULL,
    push_messages         bigint NOT NULL,
    pop_requests          bigint NOT NULL,
    pop_messages          bigint NOT NULL,
    ack_requests          bigint NOT NULL,
    ack_messages          bigint NOT NULL,
    transaction_requests  bigint NOT NULL,
    transaction_messages  bigint NOT NULL,
    pending_handovers     integer NOT NULL,
    -- The size of each in-memory map, {"wakeups": 3, ...} (`regent_runtime::Runtime::sizes`).
    runtime_entries       jsonb NOT NULL,
    PRIMARY KEY (broker_id, sampled_at)
);
CREATE INDEX broker_samples_age ON broker_samples (sampled_at);
