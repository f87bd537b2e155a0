-- Single messages on the log (crate::messages): found by transaction id, listed newest first
-- across partitions, deleted by tombstone; the cursors and dead letters a message's status is
-- decided from. Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs). A `_citus` statement is the Citus layout's in place of the one
-- without the suffix; one marked `-- variant of: <name>` differs from that one only in lines
-- that end with `-- (variant)`.

-- name: place
-- The tenant's partition with this id, with its queue.
-- $1 partition id, $2 tenant
SELECT p.id AS partition_id, p.name AS partition, q.id AS queue_id,
       q.name AS queue, q.namespace, q.task, q.options, p.last_push_at
  FROM partition_heads p JOIN queues q ON q.id = p.queue_id
 WHERE p.id = $1 AND q.tenant = $2

-- name: indexed_offset
-- The offset the transaction index holds for $1 (of this partition and a transaction id),
-- while it is inside the index's window. On one PostgreSQL the partition is inside the hash.
-- $1 index hash, $2 partition id (unused)
SELECT "offset" FROM tx_index
 WHERE hash = $1 AND $2::uuid IS NOT NULL -- (variant)

-- name: indexed_offset_citus
-- variant of: indexed_offset
-- indexed_offset on Citus: the partition named too, so its index rows are found on its shard.
-- $1 index hash, $2 partition id
SELECT "offset" FROM tx_index
 WHERE hash = $1 AND partition_id = $2 -- (variant)

-- name: at
-- The segment that holds offset $2, while the log holds it (the caller checks its base).
-- $1 partition id, $2 offset
SELECT base_offset, created_at, frames FROM segments
 WHERE partition_id = $1 AND end_offset >= $2 ORDER BY end_offset LIMIT 1

-- name: search
-- The partition's newest $2 segments, newest first: where a message is searched for once the
-- index has forgotten its transaction id.
-- $1 partition id, $2 segments
SELECT base_offset, created_at, frames FROM segments
 WHERE partition_id = $1 ORDER BY end_offset DESC LIMIT $2

-- name: cursors
-- Every group's cursor on the partitions, with its lease's end while the lease is live.
-- $1 partition ids
SELECT partition_id, consumer_group, committed,
       CASE WHEN lease_id IS NOT NULL AND lease_expires_at > now() THEN lease_end END
         AS lease_end,
       lease_expires_at
  FROM cursor_state WHERE partition_id = ANY($1)
 ORDER BY partition_id, consumer_group

-- name: dead_marks
-- The tenant's dead letters filed for these (partition, offset) pairs, newest first: by which
-- group, why, after how many retries.
-- $1 tenant, $2 partition ids, $3 offsets (pairwise)
SELECT d.partition_id, d."offset", d.consumer_group, d.error, d.retry_count
  FROM dead_letters d
  JOIN unnest($2::uuid[], $3::bigint[]) AS u(p, o)
    ON d.partition_id = u.p AND d."offset" = u.o
 WHERE d.tenant = $1
 ORDER BY d.failed_at DESC

-- name: tombstoned
-- Which of these (partition, offset) pairs are deleted.
-- $1 partition ids, $2 offsets (pairwise)
SELECT t.partition_id, t."offset" FROM tombstones t
  JOIN unnest($1::uuid[], $2::bigint[]) AS u(p, o)
    ON t.partition_id = u.p AND t."offset" = u.o

-- name: tombstone
-- Deletes message $2 of partition $1: its tombstone, its index entry, its traces. `n` is 0
-- when it was already deleted (the tombstone existed), and then nothing else is touched.
-- $1 partition id, $2 offset, $3 index hash
WITH t AS (INSERT INTO tombstones (partition_id, "offset") VALUES ($1, $2)
           ON CONFLICT DO NOTHING RETURNING 1),
     x AS (DELETE FROM tx_index WHERE hash = $3 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t)),
     r AS (DELETE FROM traces WHERE partition_id = $1 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t))
SELECT count(*) AS n FROM t

-- name: tombstone_citus
-- variant of: tombstone
-- tombstone on Citus: the partition named in the index, where Citus routes by it.
-- $1 partition id, $2 offset, $3 index hash
WITH t AS (INSERT INTO tombstones (partition_id, "offset") VALUES ($1, $2)
           ON CONFLICT DO NOTHING RETURNING 1),
     x AS (DELETE FROM tx_index WHERE hash = $3 AND "offset" = $2
              AND partition_id = $1 -- (variant)
              AND EXISTS (SELECT 1 FROM t)),
     r AS (DELETE FROM traces WHERE partition_id = $1 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t))
SELECT count(*) AS n FROM t

-- name: recent_places
-- Up to $9 of the tenant's partitions in scope pushed to since $2, most recently pushed
-- first, after ($7, $8) (the last one of the previous batch), each with its queue.
-- $1 tenant, $2 from, $3 queue (NULL: any), $4 partition (NULL: any), $5 namespace (NULL:
-- any), $6 task (NULL: any), $7 the previous batch's last push time (NULL: the first batch),
-- $8 its partition id, $9 limit
SELECT p.id AS partition_id, p.name AS partition, q.id AS queue_id,
       q.name AS queue, q.namespace, q.task, q.options, p.last_push_at
  FROM partition_heads p JOIN queues q ON q.id = p.queue_id
 WHERE q.tenant = $1 AND p.last_push_at >= $2
   AND ($3::text IS NULL OR q.name = $3) AND ($4::text IS NULL OR p.name = $4)
   AND ($5::text IS NULL OR q.namespace = $5) AND ($6::text IS NULL OR q.task = $6)
   AND ($7::timestamptz IS NULL OR (p.last_push_at, p.id) < ($7, $8::uuid))
 ORDER BY p.last_push_at DESC, p.id DESC
 LIMIT $9

-- name: dead_letter_places
-- The newest $8 dead-lettered messages of the tenant in scope, by their append time: place,
-- offset and append time, one per message however many groups dead-lettered it. Read from the
-- dead letters, so the listing of that status does not search the log for them.
-- $1 tenant, $2 from, $3 to, $4 queue (NULL: any), $5 partition (NULL: any), $6 namespace
-- (NULL: any), $7 task (NULL: any), $8 limit
SELECT * FROM (
  SELECT DISTINCT ON (d.partition_id, d."offset")
         p.id AS partition_id, p.name AS partition, q.id AS queue_id,
         q.name AS queue, q.namespace, q.task, q.options, p.last_push_at,
         d."offset", d.created_at AS appended_at
    FROM dead_letters d
    JOIN partition_heads p ON p.id = d.partition_id
    JOIN queues q ON q.id = d.queue_id
   WHERE d.tenant = $1 AND d.created_at >= $2 AND d.created_at <= $3
     AND ($4::text IS NULL OR q.name = $4) AND ($5::text IS NULL OR p.name = $5)
     AND ($6::text IS NULL OR q.namespace = $6) AND ($7::text IS NULL OR q.task = $7)
   ORDER BY d.partition_id, d."offset") x
 ORDER BY appended_at DESC, "offset" DESC, partition_id DESC
 LIMIT $8

-- name: heads
-- The newest $4 segments appended in [$2, $3] of each partition of $1.
-- $1 partition ids, $2 from, $3 to, $4 segments per partition
SELECT s.partition_id, s.base_offset, s.end_offset, s.created_at
  FROM unnest($1::uuid[]) AS u(p)
  CROSS JOIN LATERAL (
    SELECT partition_id, base_offset, end_offset, created_at FROM segments
     WHERE partition_id = u.p AND created_at >= $2 AND created_at <= $3
     ORDER BY end_offset DESC LIMIT $4) s

-- name: heads_citus
-- heads on Citus, one partition per statement: Citus plans no lateral probe of a distributed
-- table from a list, so the caller sends one per partition (each routed to its shard),
-- pipelined.
-- $1 partition id, $2 from, $3 to, $4 segments
SELECT partition_id, base_offset, end_offset, created_at FROM segments
 WHERE partition_id = $1 AND created_at >= $2 AND created_at <= $3
 ORDER BY end_offset DESC LIMIT $4

-- name: segments_at
-- The segment holding each (partition of $1, offset of $2), each once.
-- $1 partition ids, $2 offsets (pairwise)
SELECT DISTINCT ON (s.partition_id, s.end_offset)
       s.partition_id, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM unnest($1::uuid[], $2::bigint[]) AS u(p, o)
  CROSS JOIN LATERAL (
    SELECT partition_id, base_offset, end_offset, created_at, frames FROM segments
     WHERE partition_id = u.p AND end_offset >= u.o
     ORDER BY end_offset LIMIT 1) s

-- name: segments_at_citus
-- segments_at on Citus, one partition per statement (as heads_citus): the segment holding
-- each offset of $2, each once.
-- $1 partition id, $2 offsets
SELECT DISTINCT ON (s.end_offset)
       s.partition_id, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM unnest($2::bigint[]) AS u(o)
  CROSS JOIN LATERAL (
    SELECT partition_id, base_offset, end_offset, created_at, frames
      FROM segments WHERE partition_id = $1 AND end_offset >= u.o
     ORDER BY end_offset LIMIT 1) s
