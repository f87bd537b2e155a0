-- Dead letters (crate::dead_letters): snapshots of the frames of messages a group gave up on,
-- with the reason, so they outlive the log. Each `-- name:` section is one statement, exactly
-- as sent (crates/store/build.rs); a `_citus` statement is the Citus layout's in place of the
-- one without the suffix.

-- name: segment
-- The segment holding the message being dead-lettered (the caller copies its frame's bytes).
-- $1 partition id, $2 offset
SELECT base_offset, created_at, frames FROM segments
 WHERE partition_id = $1 AND end_offset >= $2 ORDER BY end_offset LIMIT 1

-- name: file
-- Files a dead letter: the message's frame, copied from the log, and why the group gave up.
-- $1 tenant, $2 queue id, $3 partition id, $4 consumer group, $5 offset, $6 message id,
-- $7 transaction id, $8 frame, $9 appended at, $10 error, $11 retry count
INSERT INTO dead_letters
    (tenant, queue_id, partition_id, consumer_group, "offset", message_id,
     transaction_id, frame, created_at, error, retry_count)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)

-- name: list
-- A page of the tenant's dead letters a listing matches, newest failure first, each row with
-- how many match in all (`total`); a page past the end is one row with only `total` (its
-- `id` NULL). `matched` is inlined into both its readers (NOT MATERIALIZED): the count reads
-- no frame.
-- $1 tenant, $2 queue (NULL: any), $3 consumer group (NULL: any), $4 partition (NULL: any),
-- $5 failed at or after (NULL: any), $6 failed at or before (NULL: any), $7 error (NULL: any),
-- $8 limit, $9 offset
WITH matched AS NOT MATERIALIZED (
       SELECT d.id, d.partition_id, q.name AS queue, p.name AS partition, d.consumer_group,
              d.error, d.retry_count, d."offset", d.frame, d.created_at, d.failed_at
         FROM dead_letters d
         JOIN queues q ON q.id = d.queue_id
         JOIN partitions p ON p.id = d.partition_id
        WHERE d.tenant = $1
          AND ($2::text IS NULL OR q.name = $2)
          AND ($3::text IS NULL OR d.consumer_group = $3)
          AND ($4::text IS NULL OR p.name = $4)
          AND ($5::timestamptz IS NULL OR d.failed_at >= $5)
          AND ($6::timestamptz IS NULL OR d.failed_at <= $6)
          AND ($7::text IS NULL OR d.error = $7))
SELECT t.total, m.*
  FROM (SELECT * FROM matched ORDER BY failed_at DESC, id DESC LIMIT $8 OFFSET $9) m
 RIGHT JOIN (SELECT count(*) AS total FROM matched) t ON true
 ORDER BY m.failed_at DESC, m.id DESC

-- name: expire
-- Deletes up to $2 dead letters that failed before $1, oldest first.
-- $1 failed before, $2 limit
DELETE FROM dead_letters WHERE id IN (
    SELECT id FROM dead_letters WHERE failed_at < $1 ORDER BY failed_at LIMIT $2)

-- name: pick
-- Up to $9 of the tenant's dead letters a selector matches, oldest failure first: the ids
-- named, when given, and whatever the set fields match (AND). Only dead letters whose queue
-- and partition still exist match (as in list).
-- $1 tenant, $2 ids (NULL: any), $3 queue (NULL: any), $4 partition (NULL: any), $5 consumer
-- group (NULL: any), $6 error (NULL: any), $7 failed at or after (NULL: any), $8 failed at or
-- before (NULL: any), $9 limit
SELECT d.id, d.partition_id, d.transaction_id, d.consumer_group
  FROM dead_letters d
  JOIN queues q ON q.id = d.queue_id AND q.tenant = d.tenant
  JOIN partitions p ON p.id = d.partition_id
 WHERE d.tenant = $1
   AND ($2::bigint[] IS NULL OR d.id = ANY ($2))
   AND ($3::text IS NULL OR q.name = $3)
   AND ($4::text IS NULL OR p.name = $4)
   AND ($5::text IS NULL OR d.consumer_group = $5)
   AND ($6::text IS NULL OR d.error = $6)
   AND ($7::timestamptz IS NULL OR d.failed_at >= $7)
   AND ($8::timestamptz IS NULL OR d.failed_at <= $8)
 ORDER BY d.failed_at, d.id
 LIMIT $9

-- name: take
-- Deletes the tenant's dead letters $2 and returns them with their queue's name, where their
-- partition still exists, locked in id order first (two bulk calls over the same rows then
-- wait for each other instead of deadlocking).
-- $1 tenant, $2 dead-letter ids
DELETE FROM dead_letters d
 USING queues q, partitions p
 WHERE d.id IN (SELECT id FROM dead_letters WHERE tenant = $1 AND id = ANY ($2) -- (variant)
                 ORDER BY id FOR UPDATE) -- (variant)
   AND q.id = d.queue_id AND p.id = d.partition_id
RETURNING d.id, d.queue_id, q.name AS queue, d.partition_id, d.consumer_group,
          d.error, d."offset", d.frame

-- name: take_citus
-- variant of: take
-- take on Citus: the rows are deleted on every shard at once, in no global order, so two
-- bulk calls over the same rows may deadlock there, which Citus breaks and the caller's retry
-- repeats.
-- $1 tenant, $2 dead-letter ids
DELETE FROM dead_letters d
 USING queues q, partitions p
 WHERE d.tenant = $1 AND d.id = ANY ($2) -- (variant)
   AND q.id = d.queue_id AND p.id = d.partition_id
RETURNING d.id, d.queue_id, q.name AS queue, d.partition_id, d.consumer_group,
          d.error, d."offset", d.frame

-- name: read
-- The tenant's dead letters $2 whose partitions exist, read as take would delete them (a dry
-- run), without locking anything.
-- $1 tenant, $2 dead-letter ids
SELECT d.id, d.queue_id, q.name AS queue, d.partition_id, d.consumer_group,
       d.error, d."offset", d.frame
  FROM dead_letters d
  JOIN queues q ON q.id = d.queue_id
  JOIN partitions p ON p.id = d.partition_id
 WHERE d.tenant = $1 AND d.id = ANY ($2)
