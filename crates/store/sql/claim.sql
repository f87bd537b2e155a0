-- Claiming partitions for a consumer group and reading their messages (crate::claim), on one
-- PostgreSQL; claim_citus.sql holds the Citus claim. Each `-- name:` section is one statement,
-- exactly as sent (crates/store/build.rs). A statement marked `-- variant of: <name>` differs
-- from that one only in lines that end with `-- (variant)` (crate::sql's tests hold it to that).

-- name: ensure_queue_mode
-- Gives a plain-queue consumer a cursor at the beginning of each partition of the queue (or
-- the one named) it has none on yet; a cursor another pop made meanwhile wins.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: every partition)
INSERT INTO cursors (partition_id, consumer_group, start, queue_id)
SELECT p.id, $2, p.first_offset - 1, p.queue_id FROM partitions p
 WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)
   AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
ON CONFLICT DO NOTHING

-- name: ensure_queue_mode_only
-- variant of: ensure_queue_mode
-- ensure_queue_mode for the partitions just created only: primary-key lookups.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any), $4 the partition ids
INSERT INTO cursors (partition_id, consumer_group, start, queue_id)
SELECT p.id, $2, p.first_offset - 1, p.queue_id FROM partitions p
 WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)
   AND p.id = ANY ($4::uuid[]) -- (variant)
   AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
ON CONFLICT DO NOTHING

-- name: ensure_named
-- A named group's start is stored once per (queue, group) and then always wins: a cursor made
-- later, for a new partition, starts after the last segment appended at or before that instant
-- (or before the first offset the log still holds, when retention deleted those); no start
-- (NULL) is the beginning.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: every partition),
-- $4 the start the group's first join chooses (NULL: the beginning)
WITH sub AS (
       INSERT INTO subscriptions (queue_id, consumer_group, start_after) VALUES ($1, $2, $4)
       ON CONFLICT (queue_id, consumer_group) DO NOTHING RETURNING start_after),
     s AS (SELECT start_after FROM sub
           UNION ALL SELECT start_after FROM subscriptions WHERE queue_id = $1 AND consumer_group = $2
           LIMIT 1)
INSERT INTO cursors (partition_id, consumer_group, start, queue_id)
SELECT p.id, $2,
       CASE WHEN (SELECT start_after FROM s) IS NULL THEN p.first_offset - 1
            ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                     WHERE g.partition_id = p.id
                                       AND g.created_at <= (SELECT start_after FROM s)), -1),
                          p.first_offset - 1)
       END,
       p.queue_id
  FROM partitions p
 WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)
   AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
ON CONFLICT DO NOTHING

-- name: ensure_named_only
-- variant of: ensure_named
-- ensure_named for the partitions just created only: primary-key lookups.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any),
-- $4 the start the group's first join chooses (NULL: the beginning), $5 the partition ids
WITH sub AS (
       INSERT INTO subscriptions (queue_id, consumer_group, start_after) VALUES ($1, $2, $4)
       ON CONFLICT (queue_id, consumer_group) DO NOTHING RETURNING start_after),
     s AS (SELECT start_after FROM sub
           UNION ALL SELECT start_after FROM subscriptions WHERE queue_id = $1 AND consumer_group = $2
           LIMIT 1)
INSERT INTO cursors (partition_id, consumer_group, start, queue_id)
SELECT p.id, $2,
       CASE WHEN (SELECT start_after FROM s) IS NULL THEN p.first_offset - 1
            ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                     WHERE g.partition_id = p.id
                                       AND g.created_at <= (SELECT start_after FROM s)), -1),
                          p.first_offset - 1)
       END,
       p.queue_id
  FROM partitions p
 WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)
   AND p.id = ANY ($5::uuid[]) -- (variant)
   AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
ON CONFLICT DO NOTHING

-- name: claim_and_read
-- Claims up to $5 of the group's partitions, the k-th (walking the group's cursors from just
-- after $9, so a hot partition cannot starve the others) under lease $6[k], and reads them,
-- in one statement: regent_claim (sql/functions.sql) says how.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any), $4 window buffer seconds
-- (partitions pushed to more recently are not claimed), $5 partitions at most, $6 the lease of
-- each partition slot, $7 lease seconds, $8 messages per partition at most, $9 the partition
-- the walk starts after (NULL: from the first)
SELECT * FROM regent_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL)

-- name: claim_hinted
-- claim_and_read over the hinted partitions only ($9: pushed to since the group last looked):
-- primary-key lookups instead of a walk past every partition with nothing to read.
-- $1-$9 as claim_and_read, $10 the hinted partition ids
SELECT * FROM regent_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)

-- name: claim_known
-- claim_and_read of a queue the broker knows, as one statement that is its own transaction:
-- it claims only while the queue still has the options the broker knows ($9), and answers
-- one row more saying whether it did (`fresh`), so a stale queue is told from an empty one.
-- Its commit does not wait for the WAL flush (synchronous_commit off), as a claim that
-- consumes nothing may (crate::claim::lease_only).
-- $1-$9 as claim_and_read, $10 the queue's options as the broker knows them
SELECT * FROM regent_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10)

-- name: claim_known_hinted
-- claim_hinted of a queue the broker knows, as claim_known is of claim_and_read.
-- $1-$9 as claim_and_read, $10 the hinted partition ids, $11 the queue's options as the
-- broker knows them
SELECT * FROM regent_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)

-- name: finish
-- Ends a claim as decided: trims each partition's lease to what was delivered, releases the
-- empty ones, commits auto-acked deliveries, undoes a claim, each only while the claim's lease
-- still holds the partition (regent_finish). One statement for every partition of the claim.
-- $1 partition ids, $2 committed offsets, $3 whether to release, $4 lease ends,
-- $5 consumer group, $6 the lease to hand over to (NULL: keep), $7 whether to undo the claim,
-- $8 the last claim to put back, $9 the lease the claim put the partition under
SELECT regent_finish($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: sweep_turn
-- Two sweeps of one group take turns (crate::claim::sweep says why).
-- $1 queue id, $2 consumer group
SELECT pg_advisory_xact_lock(hashtextextended($1::uuid::text || '/' || $2, 0))

-- name: diagnose_empty
-- Why a partition-route pop found nothing: no such partition, a live lease, or the window
-- buffer (pushed to too recently).
-- $1 queue id, $2 partition name, $3 consumer group, $4 window buffer seconds
SELECT p.id,
       coalesce(c.lease_id IS NOT NULL AND c.lease_expires_at > now(), false) AS leased,
       coalesce($4::float8 > 0
                AND p.last_push_at > now() - make_interval(secs => $4::float8),
                false) AS buffering
  FROM partitions p
  LEFT JOIN cursor_state c ON c.partition_id = p.id AND c.consumer_group = $3
 WHERE p.queue_id = $1 AND p.name = $2

-- name: asynchronous_commit
-- Makes the transaction's commit return without waiting for its WAL flush. Only for a claim
-- that consumes nothing (no autoAck): lost in a crash, its leases are as if they had expired
-- (the messages redeliver and acks under them are refused), which at-least-once delivery
-- allows; a later durable commit (an ack's) flushes it with its own.
-- (no parameters)
SET LOCAL synchronous_commit = off
