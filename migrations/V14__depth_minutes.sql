-- The tenant's backlog over time, a row per minute: what each stats round counted, so the
-- console's depth and lag charts show the last hour (a level, unlike queue_minutes' counts
-- of events: the last round of a minute overwrites its row). Kept per tenant, not per queue:
-- a row per queue per round would write 100,000 rows every ten seconds. Deleted after
-- SERIES_RETENTION_DAYS by the retention clock, with the series.
CREATE TABLE depth_minutes (
    tenant        text NOT NULL,
    minute        timestamptz NOT NULL,
    -- Messages after each partition's furthest-behind cursor, summed over the queues.
    pending       bigint NOT NULL,
    processing    bigint NOT NULL,
    dead_letters  bigint NOT NULL,
    -- Messages behind every (partition, consumer group) cursor, summed.
    lag_messages  bigint NOT NULL,
    -- Seconds since the oldest message a cursor has not read was appended.
    max_time_lag  float8 NOT NULL,
    PRIMARY KEY (tenant, minute)
);
CREATE INDEX depth_minutes_age ON depth_minutes (minute);

-- One queue's backlog over time, for its page's depth chart: a row only when a round counts
-- figures that differ from the queue's latest row (a reader carries a row forward until the
-- next), so an idle queue writes nothing however many rounds run; at most a row per minute.
CREATE TABLE queue_depth_minutes (
    queue_id      uuid NOT NULL,
    minute        timestamptz NOT NULL,
    pending       bigint NOT NULL,
    processing    bigint NOT NULL,
    dead_letters  bigint NOT NULL,
    lag_messages  bigint NOT NULL,
    PRIMARY KEY (queue_id, minute)
);
CREATE INDEX queue_depth_minutes_age ON queue_depth_minutes (minute);
