-- Queen's ephemeral queues (`/api/v1/ephemeral/*`, spec §18.3): a queue's declared
-- configuration is durable; its contents survive nothing (docs/design/ephemeral.md).
--
-- The declaration is an ordinary table. Everything else is UNLOGGED: shared by every broker
-- of the database, never written to the WAL, and emptied by PostgreSQL's crash recovery,
-- which is the loss the class promises. A queue's live row carries the incarnation (`epoch`)
-- its message ids name: after a crash the row is gone, the next one gets another epoch, and
-- an ack of an id from before answers `stale`.
--
-- Every table leads with `tenant`: on Citus they are distributed by it and co-located, so a
-- queue's statements all run on one worker.

-- A declared queue and the options it was declared with (NULL: the default).
CREATE TABLE ephemeral_queues (
    tenant         text NOT NULL,
    name           text NOT NULL,
    max_bytes      bigint,
    max_length     bigint,
    policy         text,
    ttl_seconds    bigint,
    lease_seconds  bigint,
    retry_limit    bigint,
    window_ms      bigint,
    window_count   bigint,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name)
);

-- A queue with contents or consumers (declared or not): the lock every write of the queue
-- takes first, the incarnation, the next sequence number, what the queue holds and what it
-- dropped.
CREATE UNLOGGED TABLE ephemeral_live (
    tenant          text NOT NULL,
    queue           text NOT NULL,
    epoch           bigint NOT NULL DEFAULT floor(random() * 4503599627370496)::bigint,
    next_seq        bigint NOT NULL DEFAULT 0,
    length          bigint NOT NULL DEFAULT 0,
    bytes           bigint NOT NULL DEFAULT 0,
    dropped_bounds  bigint NOT NULL DEFAULT 0,
    dropped_ttl     bigint NOT NULL DEFAULT 0,
    dropped_retry   bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, queue)
);

-- The partitions holding messages: where a pop that names none looks.
CREATE UNLOGGED TABLE ephemeral_rings (
    tenant     text NOT NULL,
    queue      text NOT NULL,
    partition  text NOT NULL,
    PRIMARY KEY (tenant, queue, partition)
);

-- The messages, numbered queue-wide in push order (so FIFO within each partition): the
-- client's JSON text and its size.
CREATE UNLOGGED TABLE ephemeral_messages (
    tenant       text NOT NULL,
    queue        text NOT NULL,
    seq          bigint NOT NULL,
    partition    text NOT NULL,
    payload      text NOT NULL,
    bytes        bigint NOT NULL,
    enqueued_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, queue, seq)
);
CREATE INDEX ephemeral_messages_by_partition ON ephemeral_messages (tenant, queue, partition, seq);
CREATE INDEX ephemeral_messages_by_age ON ephemeral_messages (tenant, queue, enqueued_at);

-- The consumer groups a queue has been popped with: a message leaves the queue once every
-- one of them is past it.
CREATE UNLOGGED TABLE ephemeral_groups (
    tenant  text NOT NULL,
    queue   text NOT NULL,
    grp     text NOT NULL,
    PRIMARY KEY (tenant, queue, grp)
);

-- Per (group, partition): the next sequence number the group has not been handed. A missing
-- row is 0, the head: sequence numbers only grow, so a cursor of an emptied partition is
-- dropped with it.
CREATE UNLOGGED TABLE ephemeral_cursors (
    tenant     text NOT NULL,
    queue      text NOT NULL,
    grp        text NOT NULL,
    partition  text NOT NULL,
    next_seq   bigint NOT NULL,
    PRIMARY KEY (tenant, queue, grp, partition)
);

-- A message handed to a group and not yet acked: its deliveries so far and its lease. Due
-- again once `lease_until` passes (an expired lease, or a nack setting it to now).
CREATE UNLOGGED TABLE ephemeral_deliveries (
    tenant       text NOT NULL,
    queue        text NOT NULL,
    grp          text NOT NULL,
    seq          bigint NOT NULL,
    partition    text NOT NULL,
    attempts     integer NOT NULL,
    lease_until  timestamptz NOT NULL,
    PRIMARY KEY (tenant, queue, grp, seq)
);
