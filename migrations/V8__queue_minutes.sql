-- What happened to each queue's messages, per minute: the series behind the overview's
-- throughput, the status pages and the analytics routes. Each broker counts in memory and
-- adds its counts here every few seconds (one statement per flush, rows in queue order), so
-- no push or ack writes a shared row. Deleted with the queue, and after
-- SERIES_RETENTION_DAYS by the retention clock.
CREATE TABLE queue_minutes (
    queue_id       uuid NOT NULL,
    minute         timestamptz NOT NULL,
    pushed         bigint NOT NULL DEFAULT 0,
    delivered      bigint NOT NULL DEFAULT 0,
    completed      bigint NOT NULL DEFAULT 0,
    failed         bigint NOT NULL DEFAULT 0,
    dead_lettered  bigint NOT NULL DEFAULT 0,
    expired        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue_id, minute)
);
CREATE INDEX queue_minutes_age ON queue_minutes (minute);
