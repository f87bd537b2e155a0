-- Queues (crate::queues). Statements still inline in queues.rs move here as they change.

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
         JOIN partitions p ON p.queue_id = q.id
         LEFT JOIN cursors c ON c.partition_id = p.id
        WHERE q.tenant = $1 AND q.id = $2 AND p.id IN (SELECT id FROM page)
        GROUP BY p.id, q.name, q.namespace, q.task),
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

-- name: pending_by_partition
-- A group's backlog on each partition of a queue, largest first ($3 of them), with their sum
-- and count: after its cursor, or, on a partition it has no cursor on, from where its first
-- pop would start it (after the last segment appended at or before $4, or the beginning).
-- $1 queue id, $2 consumer group, $3 partitions at most, $4 the group's stored start
SELECT name, pending, sum(pending) OVER ()::bigint AS sum, count(*) OVER () AS n
  FROM (SELECT p.name, p.next_offset - 1 - coalesce(
                 (SELECT c.committed FROM cursors c
                   WHERE c.partition_id = p.id AND c.consumer_group = $2),
                 CASE WHEN $4::timestamptz IS NULL THEN p.first_offset - 1
                      ELSE greatest(coalesce((SELECT max(g.end_offset) FROM segments g
                                               WHERE g.partition_id = p.id
                                                 AND g.created_at <= $4::timestamptz), -1),
                                    p.first_offset - 1)
                 END) AS pending
          FROM partitions p WHERE p.queue_id = $1) d
 WHERE pending > 0
 ORDER BY pending DESC, name LIMIT $3
