-- What PostgreSQL itself reports (crate::pg_stats). Statements still inline in pg_stats.rs
-- move here as they change.

-- name: table_sizes
-- Each table's sizes, largest first.
-- $1 tables at most
WITH sizes AS (SELECT schemaname::text, relname::text, n_live_tup, -- (variant)
                      pg_total_relation_size(relid) AS total_bytes, -- (variant)
                      pg_table_size(relid) AS table_bytes -- (variant)
                 FROM pg_stat_user_tables) -- (variant)
SELECT schemaname, relname, n_live_tup, total_bytes, table_bytes,
       total_bytes - table_bytes AS index_bytes,
       pg_size_pretty(total_bytes) AS total,
       pg_size_pretty(table_bytes) AS table_size,
       pg_size_pretty(total_bytes - table_bytes) AS index_size
  FROM sizes
 ORDER BY total_bytes DESC, relname
 LIMIT $1

-- name: table_sizes_citus
-- variant of: table_sizes
-- table_sizes on Citus: a distributed table's sizes are its shards', summed over the workers.
-- $1 tables at most
WITH sizes AS (SELECT s.schemaname::text, s.relname::text, s.n_live_tup, -- (variant)
                      CASE WHEN d.logicalrelid IS NULL THEN pg_total_relation_size(s.relid) -- (variant)
                           ELSE citus_total_relation_size(s.relid) END AS total_bytes, -- (variant)
                      CASE WHEN d.logicalrelid IS NULL THEN pg_table_size(s.relid) -- (variant)
                           ELSE citus_table_size(s.relid) END AS table_bytes -- (variant)
                 FROM pg_stat_user_tables s -- (variant)
                 LEFT JOIN pg_dist_partition d ON d.logicalrelid = s.relid) -- (variant)
SELECT schemaname, relname, n_live_tup, total_bytes, table_bytes,
       total_bytes - table_bytes AS index_bytes,
       pg_size_pretty(total_bytes) AS total,
       pg_size_pretty(table_bytes) AS table_size,
       pg_size_pretty(total_bytes - table_bytes) AS index_size
  FROM sizes
 ORDER BY total_bytes DESC, relname
 LIMIT $1
