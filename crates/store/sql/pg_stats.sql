-- What PostgreSQL itself reports (crate::pg_stats), read one statement after another on one
-- connection for the console. Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs); a `_citus` statement is the Citus layout's in place of the one
-- without the suffix. The pg_buffercache read stays in pg_stats.rs: the view is qualified by
-- the schema the extension was installed in, known only at run time.

-- name: database
-- This database: its size, backends, block reads and hits, commits, rollbacks, deadlocks,
-- conflicts and temporary files, and the database's now().
-- (no parameters)
SELECT now() AS at, d.datname::text AS name,
       pg_database_size(d.datid) AS size_bytes,
       pg_size_pretty(pg_database_size(d.datid)) AS size,
       d.numbackends, d.blks_read, d.blks_hit, d.xact_commit, d.xact_rollback,
       d.deadlocks, d.conflicts, d.temp_files, d.temp_bytes, d.stats_reset
  FROM pg_stat_database d
 WHERE d.datname = current_database()

-- name: table_cache
-- The $1 tables with the most heap blocks read or hit.
-- $1 limit
SELECT schemaname::text, relname::text,
       coalesce(heap_blks_read, 0) AS blks_read,
       coalesce(heap_blks_hit, 0) AS blks_hit
  FROM pg_statio_user_tables
 ORDER BY coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) DESC, relname
 LIMIT $1

-- name: index_cache
-- The $1 indexes with the most blocks read, then hit.
-- $1 limit
SELECT schemaname::text, relname::text, indexrelname::text,
       coalesce(idx_blks_read, 0) AS blks_read,
       coalesce(idx_blks_hit, 0) AS blks_hit
  FROM pg_statio_user_indexes
 ORDER BY coalesce(idx_blks_read, 0) DESC, coalesce(idx_blks_hit, 0) DESC,
          indexrelname
 LIMIT $1

-- name: cache_summary
-- Blocks read and hit, over every table and over every index.
-- (no parameters)
SELECT t.read AS table_read, t.hit AS table_hit, i.read AS index_read,
       i.hit AS index_hit
  FROM (SELECT coalesce(sum(heap_blks_read), 0)::bigint AS read,
               coalesce(sum(heap_blks_hit), 0)::bigint AS hit
          FROM pg_statio_user_tables) t,
       (SELECT coalesce(sum(idx_blks_read), 0)::bigint AS read,
               coalesce(sum(idx_blks_hit), 0)::bigint AS hit
          FROM pg_statio_user_indexes) i

-- name: tables
-- Every user table's vacuum statistics (pg_stats::TableStats), each with its autovacuum
-- settings: its own storage parameters where it has them, else the server's. The store picks
-- the lists (most dead tuples, most updates, autovacuum due) from these rows.
-- (no parameters)
SELECT s.schemaname::text, s.relname::text, s.n_live_tup, s.n_dead_tup, s.n_tup_upd,
       s.n_tup_hot_upd, s.last_vacuum, s.last_autovacuum, s.last_autoanalyze,
       s.autovacuum_count, s.autoanalyze_count,
       (coalesce(o.threshold, current_setting('autovacuum_vacuum_threshold')::float8)
          + coalesce(o.scale_factor,
                     current_setting('autovacuum_vacuum_scale_factor')::float8)
            * greatest(c.reltuples, 0))::bigint AS vacuum_threshold,
       current_setting('autovacuum')::bool AND coalesce(o.enabled, true)
         AS autovacuum_enabled
  FROM pg_stat_user_tables s
  JOIN pg_class c ON c.oid = s.relid
  CROSS JOIN LATERAL (
       SELECT max(option_value) FILTER (WHERE option_name = 'autovacuum_vacuum_threshold')
                ::float8 AS threshold,
              max(option_value) FILTER (WHERE option_name = 'autovacuum_vacuum_scale_factor')
                ::float8 AS scale_factor,
              max(option_value) FILTER (WHERE option_name = 'autovacuum_enabled')::bool
                AS enabled
         FROM pg_options_to_table(c.reloptions)) o

-- name: active
-- The $2 oldest queries running for more than $1 seconds on this database (other backends),
-- each with the statement's first word.
-- $1 seconds, $2 limit
SELECT pid, coalesce(state, '') AS state,
       extract(epoch FROM now() - query_start)::float8 AS seconds,
       wait_event_type, wait_event, backend_type,
       upper(substring(query FROM '^\s*([A-Za-z]+)')) AS kind
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND state IS DISTINCT FROM 'idle'
   AND query_start < now() - make_interval(secs => $1)
 ORDER BY query_start, pid
 LIMIT $2

-- name: memory_settings
-- The memory settings named, in that order, each in bytes and as PostgreSQL prints it.
-- $1 setting names
SELECT s.name, b.bytes, pg_size_pretty(b.bytes) AS pretty
  FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
  JOIN pg_settings s ON s.name = n.name
  CROSS JOIN LATERAL (
       -- A unit is `8kB` or `kB`: the size of one step of the setting.
       SELECT CASE WHEN s.setting ~ '^[0-9]+$' AND s.unit IS NOT NULL
                   THEN s.setting::bigint
                        * pg_size_bytes(CASE WHEN s.unit ~ '^[0-9]' THEN s.unit
                                             ELSE '1' || s.unit END)
              END AS bytes) b
 ORDER BY n.ord

-- name: buffercache_schema
-- The schema pg_buffercache is installed in (no row: it is not; Regent never installs it).
-- (no parameters)
SELECT n.nspname::text FROM pg_extension e
  JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'pg_buffercache'

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
