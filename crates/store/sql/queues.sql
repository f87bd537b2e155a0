-- Queues (crate::queues): configured, found by name or by namespace and task, listed with
-- their counts, inspected partition by partition, cleared, deleted with everything that hangs
-- off them. Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs);
-- a `_citus` statement is the Citus layout's in place of the one without the suffix.

-- name: upsert
-- Creates the queue or replaces its whole configuration (not a patch); returns its row.
-- $1 a new queue id (used only when the queue is new), $2 tenant, $3 queue name,
-- $4 namespace, $5 task, $6 options (as the client set them)
INSERT INTO queues AS q (id, tenant, name, namespace, task, options)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant, name) DO UPDATE
  SET namespace = EXCLUDED.namespace, task = EXCLUDED.task, options = EXCLUDED.options
RETURNING q.id, q.name, q.namespace, q.task, q.options, q.created_at

-- name: find
-- The tenant's queue of that name.
-- $1 tenant, $2 queue name
SELECT q.id, q.name, q.namespace, q.task, q.options, q.created_at
  FROM queues q WHERE q.tenant = $1 AND q.name = $2

-- name: find_scoped
-- The queues of a namespace and/or task, highest `priority` first.
-- $1 tenant, $2 namespace (NULL: any), $3 task (NULL: any)
SELECT q.id, q.name, q.namespace, q.task, q.options, q.created_at FROM queues q
 WHERE q.tenant = $1 AND ($2::text IS NULL OR q.namespace = $2)
   AND ($3::text IS NULL OR q.task = $3)
 ORDER BY coalesce((q.options ->> 'priority')::bigint, 0) DESC, q.name

-- name: list
-- A page of the tenant's queues, newest first, with their counts from the stats snapshot
-- (zeros for a queue no round has counted yet) and what the series counted for each since
-- $7. `pending` counts messages after each partition's furthest-behind cursor.
-- $1 tenant, $2 text the name contains (NULL: any), $3 limit, $4 offset, $5 namespace
-- (NULL: any), $6 task (NULL: any), $7 the instant "recently" starts at
SELECT q.id, q.name, q.namespace, q.task, q.options, q.created_at,
       coalesce(s.partitions, 0) AS partitions,
       coalesce(s.total, 0) AS total, coalesce(s.pending, 0) AS pending,
       coalesce(s.processing, 0) AS processing,
       coalesce(s.dead_letters, 0) AS dead_letters,
       coalesce(m.pushed, 0) AS pushed_recently,
       coalesce(m.completed, 0) AS completed_recently
  FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
  LEFT JOIN LATERAL (
       SELECT sum(pushed)::bigint AS pushed, sum(completed)::bigint AS completed
         FROM queue_minutes
        WHERE queue_id = q.id
          AND minute >= date_trunc('minute', $7::timestamptz)) m ON true
 WHERE q.tenant = $1 AND ($2::text IS NULL OR strpos(q.name, $2) > 0)
   AND ($5::text IS NULL OR q.namespace = $5) AND ($6::text IS NULL OR q.task = $6)
 ORDER BY q.created_at DESC, q.name
 LIMIT $3 OFFSET $4

-- name: partition_stats
-- A page of a queue's partitions, by name, each with its counts counted now (as
-- overview::partitions_page counts them), its dead letters, and its oldest and newest message
-- times (the first and last segments': index probes, not scans). The page is chosen before
-- anything is counted, so it costs the same at 100 partitions or 100,000.
-- $1 tenant, $2 queue id, $3 limit, $4 offset
WITH page AS (SELECT id FROM partitions WHERE queue_id = $2
               ORDER BY name LIMIT $3 OFFSET $4),
     per AS (
       SELECT p.id, q.name AS queue, q.namespace, q.task, p.name, p.created_at, p.last_push_at,
              p.next_offset - p.first_offset AS total,
              p.next_offset - 1 - coalesce(min(c.committed), p.first_offset - 1) AS pending,
              coalesce(max(c.lease_end - c.committed)
                       FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0)
                AS processing,
              greatest(coalesce(max(c.committed), p.first_offset - 1) + 1 - p.first_offset, 0)
                AS completed,
              (CASE WHEN bool_or(c.retry_count > 0) THEN 1 ELSE 0 END)::bigint AS failed
         FROM queues q
         JOIN partition_heads p ON p.queue_id = q.id
         LEFT JOIN cursor_state c ON c.partition_id = p.id
        WHERE q.tenant = $1 AND q.id = $2 AND p.id IN (SELECT id FROM page)
        GROUP BY p.id, p.name, p.created_at, p.last_push_at, p.next_offset, p.first_offset,
                 q.name, q.namespace, q.task),
     d AS (SELECT partition_id, count(*) AS n FROM dead_letters
            WHERE tenant = $1 AND queue_id = $2
              AND partition_id IN (SELECT id FROM page)
            GROUP BY partition_id)
SELECT per.id, per.name, per.created_at, per.total, per.pending, per.processing,
       per.completed, per.failed, coalesce(d.n, 0) AS dead_letters,
       (SELECT g.created_at FROM segments g WHERE g.partition_id = per.id
         ORDER BY g.end_offset LIMIT 1) AS oldest,
       (SELECT g.created_at FROM segments g WHERE g.partition_id = per.id
         ORDER BY g.end_offset DESC LIMIT 1) AS newest
  FROM per LEFT JOIN d ON d.partition_id = per.id
 ORDER BY per.name

-- name: start_after
-- A named group's stored start point, read first on its own: Citus plans no correlated
-- subquery over a reference table such as `subscriptions`.
-- $1 queue id, $2 consumer group
SELECT start_after FROM subscriptions WHERE queue_id = $1 AND consumer_group = $2

-- name: pending_by_partition
-- A group's backlog on each partition of a queue, largest first ($3 of them), with their sum
-- and count: after its cursor, or, on a partition it has no cursor on, from where its first
-- pop would start it (after the last segment appended at or before $4, or the beginning).
-- $1 queue id, $2 consumer group, $3 partitions at most, $4 the group's stored start
SELECT name, pending, sum(pending) OVER ()::bigint AS sum, count(*) OVER () AS n
  FROM (SELECT p.name, p.next_offset - 1 - coalesce(
                 (SELECT c.committed FROM cursor_state c
                   WHERE c.partition_id = p.id AND c.consumer_group = $2),
                 CASE WHEN $4::timestamptz IS NULL THEN p.first_offset - 1
                      ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                               WHERE g.partition_id = p.id
                                                 AND g.created_at <= $4::timestamptz), -1),
                                    p.first_offset - 1)
                 END) AS pending
          FROM partition_heads p WHERE p.queue_id = $1) d
 WHERE pending > 0
 ORDER BY pending DESC, name LIMIT $3

-- name: delete
-- Deletes the tenant's queue and returns its id (no row: there was none).
-- $1 tenant, $2 queue name
DELETE FROM queues WHERE tenant = $1 AND name = $2 RETURNING id

-- name: lock_partitions
-- Waits for the queue's in-flight appends, so the deletes after it (a fresh snapshot) see
-- every segment those appends commit.
-- $1 queue id
SELECT id FROM partitions WHERE queue_id = $1 FOR UPDATE

-- name: lock_partitions_citus
-- lock_partitions on Citus: an update that changes nothing takes the locks (see
-- partitions::lock).
-- $1 queue id
UPDATE partitions SET first_offset = first_offset WHERE queue_id = $1

-- name: delete_contents
-- Everything that hangs off a deleted queue: partitions, the log, cursors, subscriptions,
-- dead letters, traces, its series and buffered pushes. The transaction index is left to its
-- purge clock: its rows hold only hashes keyed by partition ids, which are never reused, and
-- it has no partition index to delete by.
-- $1 queue id
WITH p AS (DELETE FROM partitions WHERE queue_id = $1 RETURNING id),
     s AS (DELETE FROM segments WHERE partition_id IN (SELECT id FROM p)),
     c AS (DELETE FROM cursors WHERE partition_id IN (SELECT id FROM p)),
     cl AS (DELETE FROM cursor_log WHERE partition_id IN (SELECT id FROM p)),
     d AS (DELETE FROM dead_letters WHERE queue_id = $1),
     t AS (DELETE FROM traces WHERE queue_id = $1),
     m AS (DELETE FROM queue_minutes WHERE queue_id = $1),
     h AS (DELETE FROM queue_depth_minutes WHERE queue_id = $1),
     k AS (DELETE FROM tombstones WHERE partition_id IN (SELECT id FROM p)),
     b AS (DELETE FROM push_buffer WHERE partition_id IN (SELECT id FROM p)),
     ss AS (DELETE FROM stream_state WHERE partition_id IN (SELECT id FROM p)),
     sp AS (DELETE FROM stream_partitions WHERE partition_id IN (SELECT id FROM p))
DELETE FROM subscriptions WHERE queue_id = $1

-- name: delete_timers
-- A deleted queue's pending timers: a timer left behind would fire into a queue that is gone
-- and create it again. (A statement of its own: on Citus `timers` is distributed by queue
-- name, the tables delete_contents empties by partition.)
-- $1 tenant, $2 queue name
DELETE FROM timers WHERE tenant = $1 AND queue = $2

-- name: stored_messages
-- How many messages a tenant holds in the log: every offset its queues' logs still hold
-- (retention gives room back).
-- $1 tenant
SELECT coalesce(sum(p.next_offset - p.first_offset), 0)::bigint AS stored
  FROM queues q JOIN partition_heads p ON p.queue_id = q.id
 WHERE q.tenant = $1

-- name: id
-- The tenant's queue's id.
-- $1 tenant, $2 queue name
SELECT id FROM queues WHERE tenant = $1 AND name = $2

-- name: lock_cleared_partitions
-- Locks the partitions a clear empties, in id order: in-flight appends commit before, later
-- ones after.
-- $1 queue id, $2 partition name (NULL: every partition)
SELECT id FROM partitions WHERE queue_id = $1 AND ($2::text IS NULL OR name = $2)
 ORDER BY id FOR UPDATE

-- name: lock_cleared_partitions_citus
-- lock_cleared_partitions on Citus: an update that changes nothing takes the locks.
-- $1 queue id, $2 partition name (NULL: every partition)
UPDATE partitions SET first_offset = first_offset
 WHERE queue_id = $1 AND ($2::text IS NULL OR name = $2) RETURNING id

-- name: clear_cursors
-- Then every cursor of those partitions to the partition's end, leases released and retry
-- counts reset (regent_clear_cursors), one at a time in the global lock order.
-- $1 the partition ids
SELECT regent_clear_cursors($1)

-- name: clear
-- Deletes every message of the partitions (locked above, their cursors moved to the end by
-- clear_cursors); returns how many messages the log no longer holds. Dead letters, which are
-- snapshots, and the transaction index, on its own clock, stay. Each partition keeps its head
-- in its row (partition_heads), read under the statement's snapshot, which still holds the
-- segments the statement deletes.
-- $1 the partition ids
WITH s AS (DELETE FROM segments WHERE partition_id = ANY($1)
            RETURNING end_offset - base_offset + 1 AS n),
     t AS (DELETE FROM traces WHERE partition_id = ANY($1)),
     k AS (DELETE FROM tombstones WHERE partition_id = ANY($1)),
     u AS (UPDATE partitions p SET first_offset = h.next_offset, last_push_at = h.last_push_at
             FROM partition_heads h WHERE h.id = p.id AND p.id = ANY($1))
SELECT coalesce(sum(n), 0)::bigint AS deleted FROM s
