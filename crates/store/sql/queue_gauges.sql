-- The Prometheus gauges of queues (crate::queue_gauges), from the stats snapshot. Each
-- `-- name:` section is one statement, exactly as sent (crates/store/build.rs).

-- name: queue_gauges
-- Every queue of the tenant (of every tenant when $1 is NULL), by tenant and name: its depth,
-- its dead letters, and each group with a cursor on it and its lag, by name.
-- $1 tenant (NULL: every tenant)
SELECT q.id, q.tenant, q.name, coalesce(s.pending, 0) AS depth,
       coalesce(s.dead_letters, 0) AS dead_letters,
       (SELECT array_agg(g.consumer_group ORDER BY g.consumer_group)
          FROM group_stats g WHERE g.queue_id = q.id AND g.partitions > 0) AS groups,
       (SELECT array_agg(g.lag ORDER BY g.consumer_group)
          FROM group_stats g WHERE g.queue_id = q.id AND g.partitions > 0) AS lags
  FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
 WHERE $1::text IS NULL OR q.tenant = $1
 ORDER BY q.tenant, q.name
