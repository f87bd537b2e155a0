-- The tenant-wide inspection figures (crate::overview). Statements still inline in
-- overview.rs move here as they change.

-- name: partitions_page
-- A page of the tenant's partitions (of one queue, or of all), by queue and name, each with
-- its counts counted now: `total` kept, `pending` after the furthest-behind cursor,
-- `processing` under live leases, `completed` up to the furthest-ahead cursor, `failed` 1
-- while a group's next message waits for the retry of a nack (the same expressions as
-- stats::recount's `per` and queues::partition_stats, which crate::sql's tests hold them to).
-- The page is chosen before anything is counted.
-- $1 tenant, $2 queue name (NULL: every queue), $3 limit, $4 offset
WITH page AS (
       SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
        WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
        ORDER BY q.name, p.name LIMIT $3 OFFSET $4)
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
 WHERE q.tenant = $1 AND p.id IN (SELECT id FROM page)
 GROUP BY p.id, q.name, q.namespace, q.task
 ORDER BY q.name, p.name
