-- How long delivered messages waited between their append and their delivery, per queue and
-- minute: the sum (for the average) and the longest, behind /api/v1/analytics/queue-lag.
ALTER TABLE queue_minutes
    ADD COLUMN lag_ms_sum bigint NOT NULL DEFAULT 0,
    ADD COLUMN lag_ms_max bigint NOT NULL DEFAULT 0;
