-- Messages deleted one by one (`DELETE /api/v1/messages/:partitionId/:transactionId`, and
-- a move to the dead-letter queue): the log is never rewritten, so a deletion is a
-- tombstone that every pop skips and every cursor passes over. Deleted with their partition,
-- and by retention and clearing once the log no longer holds the offset.
CREATE TABLE tombstones (
    partition_id  uuid NOT NULL,
    "offset"      bigint NOT NULL,
    deleted_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, "offset")
);
