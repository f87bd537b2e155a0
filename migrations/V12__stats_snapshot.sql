-- The counts behind the inspection routes, refreshed every STATS_INTERVAL_MS by one broker of
-- the fleet (spec §9: Queen's stats table; counts may lag by that much). Counting them when
-- asked means reading every partition and cursor of a tenant, and probing the log once per
-- cursor for its first unread message: 2 s at 100,000 partitions. A round does that work
-- once for every reader; a read is then a few rows.
--
-- Rows of deleted queues are left to the next round (the readers join `queues`), so deleting
-- a queue never waits for a round's row locks.

-- One row: who is refreshing, and when the last round finished. A round holds this row's
-- lock for its whole transaction, so the fleet runs one round at a time.
CREATE TABLE stats_rounds (
    id           int PRIMARY KEY CHECK (id = 1),
    started_at   timestamptz NOT NULL DEFAULT '-infinity',
    finished_at  timestamptz
);
INSERT INTO stats_rounds (id) VALUES (1);

-- Per queue: the overview's and the listings' counts, the lag spreads over its cursors, and
-- the partitions with the most messages after their furthest-behind cursor (the depth list).
CREATE TABLE queue_stats (
    queue_id            uuid PRIMARY KEY,
    tenant              text NOT NULL,
    partitions          bigint NOT NULL,
    partitions_pending  bigint NOT NULL,
    total               bigint NOT NULL,
    pending             bigint NOT NULL,
    processing          bigint NOT NULL,
    completed           bigint NOT NULL,
    failed              bigint NOT NULL,
    dead_letters        bigint NOT NULL,
    cursors             bigint NOT NULL,
    time_lag_avg        float8 NOT NULL,
    time_lag_median     float8 NOT NULL,
    time_lag_min        float8 NOT NULL,
    time_lag_max        float8 NOT NULL,
    offset_lag_avg      float8 NOT NULL,
    offset_lag_median   float8 NOT NULL,
    offset_lag_min      float8 NOT NULL,
    offset_lag_max      float8 NOT NULL,
    top_partitions      text[] NOT NULL,
    top_pending         bigint[] NOT NULL,
    refreshed_at        timestamptz NOT NULL
);
CREATE INDEX queue_stats_tenant ON queue_stats (tenant);

-- Per (queue, consumer group): the group listing's figures over the group's cursors, and the
-- group's depth over every partition (a partition it has no cursor on counts from where its
-- first pop would start it).
CREATE TABLE group_stats (
    queue_id            uuid NOT NULL,
    consumer_group      text NOT NULL,
    tenant              text NOT NULL,
    partitions          bigint NOT NULL,
    partitions_with_lag bigint NOT NULL,
    lag                 bigint NOT NULL,
    -- The oldest last push among its lagging partitions: the listing's maxTimeLag is the time
    -- since then, so it keeps growing between rounds as it would if counted when asked.
    lagging_since       timestamptz,
    consuming           bool NOT NULL,
    pending             bigint NOT NULL,
    partitions_pending  bigint NOT NULL,
    top_partitions      text[] NOT NULL,
    top_pending         bigint[] NOT NULL,
    refreshed_at        timestamptz NOT NULL,
    PRIMARY KEY (queue_id, consumer_group)
);
CREATE INDEX group_stats_tenant ON group_stats (tenant, consumer_group);

-- Per tenant: the cursors whose first unread message is oldest (at most 1,000), for
-- /consumer-groups/lagging.
CREATE TABLE lagging_stats (
    tenant            text NOT NULL,
    queue_id          uuid NOT NULL,
    partition_id      uuid NOT NULL,
    consumer_group    text NOT NULL,
    partition_name    text NOT NULL,
    offset_lag        bigint NOT NULL,
    oldest_unread_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant, oldest_unread_at, partition_id, consumer_group)
);
