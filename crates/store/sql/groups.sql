-- What the consumer groups of a tenant are doing (crate::groups): one row per (group, queue)
-- and the lagging list, from the stats snapshot; a page of one group's cursors, counted now.
-- Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs).

-- name: list
-- A page of the (group, queue) pairs of the tenant with at least one cursor, by group, then
-- queue, as the last stats round counted them.
-- $1 tenant, $2 limit, $3 offset, $4 queue (NULL: any), $5 text the group's name contains
-- (NULL: any)
SELECT g.consumer_group, q.name AS queue, g.partitions, g.partitions_with_lag,
       g.lag,
       coalesce(floor(extract(epoch FROM now() - g.lagging_since)), 0)::bigint
         AS max_time_lag,
       g.consuming, s.start_after, s.created_at AS joined_at
  FROM group_stats g
  JOIN queues q ON q.id = g.queue_id
  LEFT JOIN subscriptions s
         ON s.queue_id = g.queue_id AND s.consumer_group = g.consumer_group
 WHERE g.tenant = $1 AND g.partitions > 0
   AND ($4::text IS NULL OR q.name = $4)
   AND ($5::text IS NULL OR strpos(g.consumer_group, $5) > 0)
 ORDER BY g.consumer_group, q.name LIMIT $2 OFFSET $3

-- name: cursors
-- A page of one group's cursors counted now. Pages go in partition-id order (the order
-- partitions were created, and the cursors' primary key, so a page is read off the index
-- without sorting every cursor of the group); within a page, by queue and partition name.
-- Only the page's cursors are probed for their first unread message's time. The page is
-- chosen first, then its cursors read again with their partitions and log probes: on Citus
-- that second read is one statement every shard runs, a lateral probe from the page's rows
-- themselves being one it cannot plan.
-- $1 tenant, $2 consumer group, $3 limit, $4 offset
WITH page AS MATERIALIZED (
  SELECT c.partition_id FROM cursors c
   WHERE c.consumer_group = $2
     AND c.queue_id IN (SELECT id FROM queues WHERE tenant = $1)
   ORDER BY c.partition_id LIMIT $3 OFFSET $4)
SELECT $2::text AS consumer_group, q.name AS queue, p.name AS partition,
       c.partition_id, c.committed + 1 AS consumed,
       greatest(p.next_offset - 1 - c.committed, 0) AS lag,
       o.created_at AS oldest_unread_at,
       coalesce(floor(extract(epoch FROM now() - o.created_at)), 0)::bigint AS lag_secs,
       (c.lease_id IS NOT NULL AND c.lease_expires_at > now()) AS leased
  FROM cursor_state c
  JOIN partition_heads p ON p.id = c.partition_id
  JOIN queues q ON q.id = c.queue_id
  LEFT JOIN LATERAL (
       SELECT g.created_at FROM segments g
        WHERE g.partition_id = c.partition_id AND g.end_offset > c.committed
        ORDER BY g.end_offset LIMIT 1) o ON c.committed < p.next_offset - 1
 WHERE c.consumer_group = $2 AND c.partition_id IN (SELECT partition_id FROM page)
 ORDER BY q.name, p.name

-- name: lagging
-- A page of the tenant's cursors whose first unread message is older than $2 seconds, longest
-- first, from the last stats round's list (the 1,000 oldest of the tenant).
-- $1 tenant, $2 seconds, $3 limit, $4 offset
SELECT l.consumer_group, q.name AS queue, l.partition_name, l.partition_id,
       l.offset_lag, l.oldest_unread_at,
       floor(extract(epoch FROM now() - l.oldest_unread_at))::bigint AS lag_secs
  FROM lagging_stats l JOIN queues q ON q.id = l.queue_id
 WHERE l.tenant = $1
   AND l.oldest_unread_at < now() - make_interval(secs => $2::float8)
 ORDER BY l.oldest_unread_at, l.partition_id, l.consumer_group
 LIMIT $3 OFFSET $4

-- name: resubscribe
-- Sets the stored start instant of the tenant's named group on every queue it has joined.
-- Cursors the group already has stay where they are: the instant places only the cursors of
-- partitions it meets from now on.
-- $1 tenant, $2 consumer group, $3 start instant (NULL: the beginning)
UPDATE subscriptions s SET start_after = $3
  FROM queues q
 WHERE q.id = s.queue_id AND q.tenant = $1 AND s.consumer_group = $2
