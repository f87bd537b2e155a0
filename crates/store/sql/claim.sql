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

-- name: claim
-- Claims up to $5 of the group's partitions, the k-th under lease $6[k], and reads them, in
-- one statement on one PostgreSQL (claim_citus.sql holds the Citus claim): with $10, the
-- hinted partitions (pushed to since the group last looked), in the order given; without,
-- the walk over the group's cursors in partition order from just after $9 round to it (the
-- broker moves $9 on as it serves, so a hot partition cannot starve the others), which stops
-- at the $5-th cursor it can claim instead of reading every cursor's state. The slots go in
-- the order the claim is served (least recently claimed first, regent_rules::delivery::
-- claim_order), so no lease needs handing over. Then each claimed partition once per
-- segment overlapping its leased range (committed, lease_end] (the segments ending inside it
-- plus the first one ending after it, both bounded index scans), or once with NULL segment
-- columns. With $11 (a queue the broker knows) it claims only while the queue still has
-- those options, and its commit does not wait for the WAL flush (a claim consumes nothing);
-- the first row's `fresh` says whether the queue was found so (always, without $11), and a
-- row with no partition is no claim.
--
-- The candidates are chosen from the state the statement's snapshot sees, each turn taken
-- as the walk reaches a cursor it can claim (SKIP LOCKED: one another writer holds is passed
-- over), and the claims appended as regent_read_in_time allows: a cursor whose state changed
-- after the snapshot meets the newer row and is not claimed ("A stale read loses",
-- sql/functions.sql). The newest log row is read by the view's lateral lookup: a lock
-- cannot go through the view.
--
-- Architecture Invariant: a claim reads its own queue's cursors and, through each, its
-- partition: never the whole `partitions` table (the lateral lookup cannot be flattened).
-- The hinted candidates are read by primary key (`partition_id = ANY`, which a generic plan
-- keeps: joined to the unnested hints it became a scan of the group's cursors), and
-- `queue_id IS NOT DISTINCT FROM` keeps the planner off the group's walk index, which would
-- read every cursor of the group.
-- $1 queue id, $2 consumer group, $3 partition name (NULL: any), $4 window buffer seconds
-- (partitions pushed to more recently are not claimed), $5 partitions at most, $6 the lease of
-- each partition slot, $7 lease seconds, $8 messages per partition at most, $9 the partition
-- the walk starts after (NULL: from the first), $10 the hinted partition ids (NULL: walk),
-- $11 the queue's options as the broker knows them (NULL: not checked)
WITH known AS MATERIALIZED (
       SELECT set_config('synchronous_commit', 'off', true) FROM queues
        WHERE $11::jsonb IS NOT NULL AND id = $1 AND options = $11::jsonb),
     s AS MATERIALIZED (
       SELECT y.*
         FROM (SELECT w.partition_id, l.seq, coalesce(l.committed, w.start) AS committed,
                      l.lease_end, l.lease_expires_at, coalesce(l.retry_count, 0) AS retry_count,
                      p.next_offset, p.name
                 FROM ((SELECT c.partition_id, c.start FROM cursors c
                         WHERE c.partition_id = ANY ($10::uuid[]) AND c.consumer_group = $2
                           AND c.queue_id IS NOT DISTINCT FROM $1
                         ORDER BY array_position($10::uuid[], c.partition_id))
                       UNION ALL
                       (SELECT c.partition_id, c.start FROM cursors c
                         WHERE $10::uuid[] IS NULL AND c.queue_id = $1 AND c.consumer_group = $2
                           AND c.partition_id > coalesce($9::uuid, '00000000-0000-0000-0000-000000000000')
                         ORDER BY c.partition_id)
                       UNION ALL
                       (SELECT c.partition_id, c.start FROM cursors c
                         WHERE $10::uuid[] IS NULL AND c.queue_id = $1 AND c.consumer_group = $2
                           AND c.partition_id <= $9::uuid
                         ORDER BY c.partition_id)) w
                 LEFT JOIN LATERAL (
                      SELECT l.seq, l.committed, l.lease_id, l.lease_expires_at, l.lease_end,
                             l.retry_count
                        FROM cursor_log l
                       WHERE l.partition_id = w.partition_id AND l.consumer_group = $2
                       ORDER BY l.seq DESC LIMIT 1) l ON true
                CROSS JOIN LATERAL (SELECT p.next_offset, p.name, p.last_push_at
                                      FROM partition_heads p
                                     WHERE p.id = w.partition_id OFFSET 0) p
                WHERE ($11::jsonb IS NULL OR EXISTS (SELECT 1 FROM known))
                  AND ($3::text IS NULL OR p.name = $3)
                  AND coalesce(l.committed, w.start) < p.next_offset - 1
                  AND (l.lease_id IS NULL OR l.lease_expires_at <= now())
                  AND ($4::float8 = 0
                       OR p.last_push_at <= now() - make_interval(secs => $4::float8))
               OFFSET 0) y
        -- The turn, taken only on a cursor that can be claimed, as the walk reaches it.
        CROSS JOIN LATERAL (SELECT 1 FROM cursors k
                             WHERE k.partition_id = y.partition_id AND k.consumer_group = $2
                               FOR UPDATE SKIP LOCKED) k
        LIMIT $5),
     n AS (SELECT s.*,
                  row_number() OVER (ORDER BY s.lease_expires_at NULLS FIRST, s.partition_id)
                    AS slot
             FROM s),
     ins AS (
       INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id,
                               lease_expires_at, lease_end, retry_count)
       SELECT n.partition_id, $2, coalesce(n.seq, 0) + 1, n.committed, ($6::uuid[])[n.slot],
              now() + make_interval(secs => $7::float8),
              least(n.next_offset - 1, n.committed + $8), n.retry_count
         FROM n
        WHERE regent_read_in_time()
       ON CONFLICT DO NOTHING
       RETURNING partition_id, lease_id, lease_end)
SELECT k.fresh, r.*
  FROM (SELECT ($11::jsonb IS NULL OR EXISTS (SELECT 1 FROM known)) AS fresh) k
  LEFT JOIN LATERAL (
       SELECT ins.partition_id, ins.lease_id, n.name, n.committed, ins.lease_end,
              n.lease_end AS old_end, n.lease_expires_at AS last_claim,
              (SELECT array_agg(t."offset" ORDER BY t."offset") FROM tombstones t
                WHERE t.partition_id = ins.partition_id AND t."offset" > n.committed
                  AND t."offset" <= ins.lease_end) AS tombstoned,
              now() AS db_now, g.base_offset, g.end_offset, g.created_at, g.frames
         FROM ins JOIN n ON n.partition_id = ins.partition_id
         LEFT JOIN LATERAL (
           (SELECT g.base_offset, g.end_offset, g.created_at, g.frames FROM segments g
             WHERE g.partition_id = ins.partition_id AND g.end_offset > n.committed
               AND g.end_offset <= ins.lease_end)
           UNION ALL
           (SELECT g.base_offset, g.end_offset, g.created_at, g.frames FROM segments g
             WHERE g.partition_id = ins.partition_id AND g.end_offset > ins.lease_end
             ORDER BY g.end_offset LIMIT 1)) g ON g.base_offset <= ins.lease_end) r ON true
 ORDER BY r.partition_id, r.end_offset

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
  FROM partition_heads p
  LEFT JOIN cursor_state c ON c.partition_id = p.id AND c.consumer_group = $3
 WHERE p.queue_id = $1 AND p.name = $2

-- name: asynchronous_commit
-- Makes the transaction's commit return without waiting for its WAL flush. Only for a claim
-- that consumes nothing (no autoAck): lost in a crash, its leases are as if they had expired
-- (the messages redeliver and acks under them are refused), which at-least-once delivery
-- allows; a later durable commit (an ack's) flushes it with its own.
-- (no parameters)
SET LOCAL synchronous_commit = off
