-- Claiming partitions for a consumer group and reading their messages (crate::claim), on one
-- PostgreSQL; claim_citus.sql holds the Citus claim. Each `-- name:` section is one statement,
-- exactly as sent (crates/store/build.rs). A statement marked `-- variant of: <name>` differs
-- from that one only in lines that end with `-- (variant)` (crate::sql's tests hold it to that).

-- name: ensure_queue_mode
-- Gives a plain-queue consumer a cursor at the beginning of each partition of the queue (or
-- the one named) it has none on yet; a cursor another pop made meanwhile wins.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: every partition)
INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
SELECT p.id, $2, p.first_offset - 1, p.queue_id FROM partitions p
 WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)
   AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
ON CONFLICT DO NOTHING

-- name: ensure_queue_mode_only
-- variant of: ensure_queue_mode
-- ensure_queue_mode for the partitions just created only: primary-key lookups.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any), $4 the partition ids
INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
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
INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
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
INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
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
-- Claims up to $5 of the group's partitions, the k-th (least recently claimed first, so a hot
-- partition cannot starve the others) under lease $6[k], and reads them, in one statement.
-- Each claimed partition comes back once per segment overlapping its leased range
-- (committed, lease_end]: the segments ending inside it plus the first one ending after it,
-- both bounded index scans however long the backlog behind the range is; a partition with no
-- segment in range comes once, its segment columns NULL.
--
-- Architecture Invariant: a claim reads its own queue's cursors and, through each, its
-- partition: never the whole `partitions` table. The partition is a lateral lookup that cannot
-- be flattened (OFFSET 0), so no plan can start from `partitions`: with the statistics of a
-- working broker (cursor pages grown by updates) the planner preferred an index scan over
-- every queue's partitions, 0.2 ms per claim at 300 of them and growing with every tenant's
-- queues.
--
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any), $4 window buffer seconds
-- (partitions pushed to more recently are not claimed), $5 partitions at most, $6 the lease of
-- each partition slot, $7 lease seconds, $8 messages per partition at most
WITH cand AS ( -- (variant)
       SELECT c.partition_id, c.committed, c.lease_end AS old_end, c.lease_expires_at AS last_claim,
              p.next_offset, p.name
         FROM cursors c
        CROSS JOIN LATERAL (SELECT p.next_offset, p.name, p.last_push_at FROM partitions p
                             WHERE p.id = c.partition_id OFFSET 0) p
        WHERE c.queue_id = $1 -- (variant)
          AND c.consumer_group = $2 AND ($3::text IS NULL OR p.name = $3)
          AND c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($4::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $4::float8))
        ORDER BY c.lease_expires_at NULLS FIRST, c.partition_id
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = ($6::uuid[])[cand.k],
              lease_expires_at = now() + make_interval(secs => $7::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $8)
         FROM (SELECT cand.*,
                      row_number() OVER (ORDER BY cand.last_claim NULLS FIRST, cand.partition_id) AS k
                 FROM cand) cand
        WHERE c.partition_id = cand.partition_id AND c.consumer_group = $2
       RETURNING c.partition_id, c.lease_id, cand.name, cand.committed, c.lease_end, cand.old_end,
                 cand.last_claim,
                 (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
                   WHERE t.partition_id = c.partition_id AND t."offset" > cand.committed
                     AND t."offset" <= c.lease_end) AS tombstoned)
SELECT cl.partition_id, cl.lease_id, cl.name, cl.committed, cl.lease_end, cl.old_end, cl.last_claim,
       cl.tombstoned, now() AS db_now, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM claimed cl
  LEFT JOIN LATERAL (
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.committed
        AND end_offset <= cl.lease_end)
    UNION ALL
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.lease_end
      ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
 ORDER BY cl.partition_id, s.end_offset -- (variant)

-- name: claim_hinted
-- variant of: claim_and_read
-- claim_and_read over the hinted partitions only ($9: pushed to since the group last looked):
-- primary-key lookups instead of a walk past every partition with nothing to read.
--
-- The queue is compared with IS NOT DISTINCT FROM (the same as = on a column that is never
-- NULL) because no index serves it: with `queue_id = $1` the planner read the hinted cursors
-- through the claim-order index, every cursor of the group, and with the xmin horizon held
-- every version of every one of them (7,077 buffers per claim after 30 s; BENCHMARKS.md,
-- "throughput with the xmin horizon held").
--
-- $1-$8 as claim_and_read, $9 the hinted partition ids
WITH cand AS ( -- (variant)
       SELECT c.partition_id, c.committed, c.lease_end AS old_end, c.lease_expires_at AS last_claim,
              p.next_offset, p.name
         FROM cursors c
        CROSS JOIN LATERAL (SELECT p.next_offset, p.name, p.last_push_at FROM partitions p
                             WHERE p.id = c.partition_id OFFSET 0) p
        WHERE c.partition_id = ANY ($9::uuid[]) AND c.queue_id IS NOT DISTINCT FROM $1 -- (variant)
          AND c.consumer_group = $2 AND ($3::text IS NULL OR p.name = $3)
          AND c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($4::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $4::float8))
        ORDER BY c.lease_expires_at NULLS FIRST, c.partition_id
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = ($6::uuid[])[cand.k],
              lease_expires_at = now() + make_interval(secs => $7::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $8)
         FROM (SELECT cand.*,
                      row_number() OVER (ORDER BY cand.last_claim NULLS FIRST, cand.partition_id) AS k
                 FROM cand) cand
        WHERE c.partition_id = cand.partition_id AND c.consumer_group = $2
       RETURNING c.partition_id, c.lease_id, cand.name, cand.committed, c.lease_end, cand.old_end,
                 cand.last_claim,
                 (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
                   WHERE t.partition_id = c.partition_id AND t."offset" > cand.committed
                     AND t."offset" <= c.lease_end) AS tombstoned)
SELECT cl.partition_id, cl.lease_id, cl.name, cl.committed, cl.lease_end, cl.old_end, cl.last_claim,
       cl.tombstoned, now() AS db_now, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM claimed cl
  LEFT JOIN LATERAL (
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.committed
        AND end_offset <= cl.lease_end)
    UNION ALL
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.lease_end
      ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
 ORDER BY cl.partition_id, s.end_offset -- (variant)

-- name: claim_known
-- variant of: claim_and_read
-- claim_and_read of a queue the broker knows, as one statement that is its own transaction:
-- it claims only while the queue still has the options the broker knows ($9), and answers
-- one row more saying whether it did (`fresh`), so a stale queue is told from an empty one.
-- Its commit does not wait for the WAL flush (synchronous_commit off), as a claim that
-- consumes nothing may (crate::claim::lease_only).
-- $1-$8 as claim_and_read, $9 the queue's options as the broker knows them
WITH known AS MATERIALIZED ( -- (variant)
       SELECT set_config('synchronous_commit', 'off', true) FROM queues -- (variant)
        WHERE id = $1 AND options = $9::jsonb), -- (variant)
     cand AS ( -- (variant)
       SELECT c.partition_id, c.committed, c.lease_end AS old_end, c.lease_expires_at AS last_claim,
              p.next_offset, p.name
         FROM cursors c
        CROSS JOIN LATERAL (SELECT p.next_offset, p.name, p.last_push_at FROM partitions p
                             WHERE p.id = c.partition_id OFFSET 0) p
        WHERE c.queue_id = $1
          AND c.consumer_group = $2 AND ($3::text IS NULL OR p.name = $3)
          AND EXISTS (SELECT 1 FROM known) -- (variant)
          AND c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($4::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $4::float8))
        ORDER BY c.lease_expires_at NULLS FIRST, c.partition_id
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = ($6::uuid[])[cand.k],
              lease_expires_at = now() + make_interval(secs => $7::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $8)
         FROM (SELECT cand.*,
                      row_number() OVER (ORDER BY cand.last_claim NULLS FIRST, cand.partition_id) AS k
                 FROM cand) cand
        WHERE c.partition_id = cand.partition_id AND c.consumer_group = $2
       RETURNING c.partition_id, c.lease_id, cand.name, cand.committed, c.lease_end, cand.old_end,
                 cand.last_claim,
                 (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
                   WHERE t.partition_id = c.partition_id AND t."offset" > cand.committed
                     AND t."offset" <= c.lease_end) AS tombstoned)
SELECT k.fresh, r.* FROM (SELECT EXISTS (SELECT 1 FROM known) AS fresh) k -- (variant)
  LEFT JOIN LATERAL ( -- (variant)
SELECT cl.partition_id, cl.lease_id, cl.name, cl.committed, cl.lease_end, cl.old_end, cl.last_claim,
       cl.tombstoned, now() AS db_now, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM claimed cl
  LEFT JOIN LATERAL (
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.committed
        AND end_offset <= cl.lease_end)
    UNION ALL
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.lease_end
      ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
  ) r ON true -- (variant)
 ORDER BY r.partition_id, r.end_offset -- (variant)

-- name: claim_known_hinted
-- variant of: claim_hinted
-- claim_hinted of a queue the broker knows, as claim_known is of claim_and_read.
-- $1-$8 as claim_and_read, $9 the hinted partition ids, $10 the queue's options as the broker
-- knows them
WITH known AS MATERIALIZED ( -- (variant)
       SELECT set_config('synchronous_commit', 'off', true) FROM queues -- (variant)
        WHERE id = $1 AND options = $10::jsonb), -- (variant)
     cand AS ( -- (variant)
       SELECT c.partition_id, c.committed, c.lease_end AS old_end, c.lease_expires_at AS last_claim,
              p.next_offset, p.name
         FROM cursors c
        CROSS JOIN LATERAL (SELECT p.next_offset, p.name, p.last_push_at FROM partitions p
                             WHERE p.id = c.partition_id OFFSET 0) p
        WHERE c.partition_id = ANY ($9::uuid[]) AND c.queue_id IS NOT DISTINCT FROM $1 -- (variant)
          AND c.consumer_group = $2 AND ($3::text IS NULL OR p.name = $3)
          AND EXISTS (SELECT 1 FROM known) -- (variant)
          AND c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($4::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $4::float8))
        ORDER BY c.lease_expires_at NULLS FIRST, c.partition_id
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = ($6::uuid[])[cand.k],
              lease_expires_at = now() + make_interval(secs => $7::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $8)
         FROM (SELECT cand.*,
                      row_number() OVER (ORDER BY cand.last_claim NULLS FIRST, cand.partition_id) AS k
                 FROM cand) cand
        WHERE c.partition_id = cand.partition_id AND c.consumer_group = $2
       RETURNING c.partition_id, c.lease_id, cand.name, cand.committed, c.lease_end, cand.old_end,
                 cand.last_claim,
                 (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
                   WHERE t.partition_id = c.partition_id AND t."offset" > cand.committed
                     AND t."offset" <= c.lease_end) AS tombstoned)
SELECT k.fresh, r.* FROM (SELECT EXISTS (SELECT 1 FROM known) AS fresh) k -- (variant)
  LEFT JOIN LATERAL ( -- (variant)
SELECT cl.partition_id, cl.lease_id, cl.name, cl.committed, cl.lease_end, cl.old_end, cl.last_claim,
       cl.tombstoned, now() AS db_now, s.base_offset, s.end_offset, s.created_at, s.frames
  FROM claimed cl
  LEFT JOIN LATERAL (
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.committed
        AND end_offset <= cl.lease_end)
    UNION ALL
    (SELECT base_offset, end_offset, created_at, frames FROM segments
      WHERE partition_id = cl.partition_id AND end_offset > cl.lease_end
      ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
  ) r ON true -- (variant)
 ORDER BY r.partition_id, r.end_offset -- (variant)

-- name: finish
-- Ends a claim as decided: trims each partition's lease to what was delivered, releases the
-- empty ones, commits auto-acked deliveries, undoes a claim, each only while the claim's lease
-- still holds the partition. One statement for every partition of the claim.
-- $1 partition ids, $2 committed offsets, $3 whether to release, $4 lease ends,
-- $5 consumer group, $6 the lease to hand over to (NULL: keep), $7 whether to undo the claim,
-- $8 the last claim to put back, $9 the lease the claim put the partition under
UPDATE cursors c
   SET committed = u.committed,
       lease_id = CASE WHEN u.release THEN NULL ELSE coalesce(u.lease, c.lease_id) END,
       lease_end = u.lease_end,
       lease_expires_at = CASE WHEN u.undo THEN u.last_claim ELSE c.lease_expires_at END
  FROM unnest($1::uuid[], $2::bigint[], $3::bool[], $4::bigint[], $6::uuid[],
              $7::bool[], $8::timestamptz[], $9::uuid[])
       AS u(pid, committed, release, lease_end, lease, undo, last_claim, held)
 WHERE c.partition_id = u.pid AND c.consumer_group = $5 AND c.lease_id = u.held

-- name: finish_citus
-- variant of: finish
-- finish on Citus: the partitions are named again as a list, which Citus reads to send the
-- update to their shards only (the join with the list alone it sends to every shard).
-- $1-$9 as finish
UPDATE cursors c
   SET committed = u.committed,
       lease_id = CASE WHEN u.release THEN NULL ELSE coalesce(u.lease, c.lease_id) END,
       lease_end = u.lease_end,
       lease_expires_at = CASE WHEN u.undo THEN u.last_claim ELSE c.lease_expires_at END
  FROM unnest($1::uuid[], $2::bigint[], $3::bool[], $4::bigint[], $6::uuid[],
              $7::bool[], $8::timestamptz[], $9::uuid[])
       AS u(pid, committed, release, lease_end, lease, undo, last_claim, held)
 WHERE c.partition_id = u.pid AND c.consumer_group = $5 AND c.lease_id = u.held
   AND c.partition_id = ANY ($1::uuid[]) -- (variant)

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
  LEFT JOIN cursors c ON c.partition_id = p.id AND c.consumer_group = $3
 WHERE p.queue_id = $1 AND p.name = $2

-- name: asynchronous_commit
-- Makes the transaction's commit return without waiting for its WAL flush. Only for a claim
-- that consumes nothing (no autoAck): lost in a crash, its leases are as if they had expired
-- (the messages redeliver and acks under them are refused), which at-least-once delivery
-- allows; a later durable commit (an ack's) flushes it with its own.
-- (no parameters)
SET LOCAL synchronous_commit = off
