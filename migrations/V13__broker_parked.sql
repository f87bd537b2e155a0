-- The long-polling pops each broker had parked per queue when it sampled itself (at most the
-- 100 queues with the most, per sample), behind /api/v1/analytics/queue-parked-replicas.
-- A row of broker_samples' sample: written in the same statement, deleted after
-- METRICS_RETENTION_HOURS in bounded batches by the same task. Unlike the rest of the sample
-- these rows name a tenant's queues, so they carry the tenant and are only ever read for one
-- tenant. Keyed by queue name, as the pops named it (a queue need not exist to be waited on).
CREATE TABLE broker_parked (
    tenant      text NOT NULL,
    sampled_at  timestamptz NOT NULL,
    broker_id   uuid NOT NULL,
    queue       text NOT NULL,
    parked      integer NOT NULL,
    PRIMARY KEY (tenant, sampled_at, broker_id, queue)
);
CREATE INDEX broker_parked_age ON broker_parked (sampled_at);
