-- Queen Streams (crate::streams): registered queries (`stream_queries`, a reference table on
-- Citus), each (source partition, query)'s last cycle (`stream_partitions`), and the state rows
-- (`stream_state`). Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs). Every statement of a cycle names its source partition, so on Citus
-- it runs on that partition's worker.

-- name: register
-- Registers the query unless its name is taken in its tenant (one row: this call created it).
-- $1 query id, $2 tenant, $3 name, $4 source queue, $5 sink queue (NULL: none),
-- $6 configuration hash
INSERT INTO stream_queries (id, tenant, name, source_queue, sink_queue, config_hash)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, name) DO NOTHING

-- name: lock
-- The tenant's query of that name, locked until the transaction ends.
-- $1 tenant, $2 name
SELECT id, name, source_queue, sink_queue, config_hash, created_at, updated_at FROM stream_queries WHERE tenant = $1 AND name = $2 FOR UPDATE

-- name: delete_state
-- A query started over: its state rows.
-- $1 query id
DELETE FROM stream_state WHERE query_id = $1

-- name: delete_partitions
-- A query started over: its cycle records.
-- $1 query id
DELETE FROM stream_partitions WHERE query_id = $1

-- name: adopt
-- A query started over adopts the configuration sent.
-- $1 query id, $2 configuration hash, $3 source queue, $4 sink queue (NULL: none)
UPDATE stream_queries SET config_hash = $2, source_queue = $3, sink_queue = $4,
       updated_at = now()
 WHERE id = $1

-- name: find
-- The tenant's query.
-- $1 query id, $2 tenant
SELECT id, name, source_queue, sink_queue, config_hash, created_at, updated_at FROM stream_queries WHERE id = $1 AND tenant = $2

-- name: find_named
-- The tenant's query of that name (the name its client registered it under).
-- $1 tenant, $2 name
SELECT id, name, source_queue, sink_queue, config_hash, created_at, updated_at FROM stream_queries WHERE tenant = $1 AND name = $2

-- name: list
-- The tenant's queries, by name.
-- $1 tenant
SELECT id, name, source_queue, sink_queue, config_hash, created_at, updated_at FROM stream_queries WHERE tenant = $1 ORDER BY name

-- name: scope
-- The tenant's query, and the name of the queue partition $3 belongs to (NULL: no such
-- partition in the tenant). The partition's queue is an uncorrelated subquery: Citus runs it
-- on the partition's worker as a plan of its own, where a correlated one would be refused.
-- $1 query id, $2 tenant, $3 partition id
SELECT id, name, source_queue, sink_queue, config_hash, created_at, updated_at,
       (SELECT s.name FROM partitions p JOIN queues s ON s.id = p.queue_id
         WHERE p.id = $3 AND p.tenant = $2 AND s.tenant = $2) AS partition_queue
  FROM stream_queries WHERE id = $1 AND tenant = $2

-- name: lock_cycle
-- Locks the (partition, query)'s cycle row (concurrent cycles of one partition of one query
-- commit one after another) and returns its stored answer when the last committed cycle's
-- digest is $3 (a replay). The lock writes no row version (record_cycle writes the one), and
-- the stored answer is read only for a replay. No row: the first cycle (add_cycle).
-- $1 partition id, $2 query id, $3 the cycle's digest
SELECT CASE WHEN last_digest = $3 THEN last_answer END AS answer
  FROM stream_partitions
 WHERE partition_id = $1 AND query_id = $2
   FOR UPDATE

-- name: add_cycle
-- The (partition, query)'s cycle row, on its first cycle.
-- $1 partition id, $2 query id
INSERT INTO stream_partitions (partition_id, query_id) VALUES ($1, $2)
ON CONFLICT (partition_id, query_id) DO NOTHING

-- name: write_state
-- Deletes $3 and upserts ($4, $5, $6) in the (partition, query)'s state, in one call of
-- `regent_stream_state` (V15); each key at most once in all.
-- $1 partition id, $2 query id, $3 keys to delete, $4 keys to upsert, $5 their values (JSON
-- text), $6 their `windowEnd`s
SELECT regent_stream_state($1, $2, $3, $4, $5, $6)

-- name: record_cycle
-- Records the (partition, query)'s cycle as committed (with the transaction): its digest, its
-- answer, and how many state operations it applied.
-- $1 partition id, $2 query id, $3 digest, $4 answer, $5 state operations
UPDATE stream_partitions
   SET last_digest = $3, last_answer = $4, last_cycle_at = now(),
       cycles = cycles + 1, state_ops = state_ops + $5
 WHERE partition_id = $1 AND query_id = $2

-- name: read_state
-- The tenant's query's state rows in the partition a read wants, by key.
-- $1 partition id, $2 query id, $3 tenant, $4 keys (empty: every key), $5 key prefix (NULL:
-- any), $6 rows whose `windowEnd` is at or before this, epoch ms (NULL: any), $7 limit (NULL:
-- none)
SELECT s.key, s.value, s.updated_at
  FROM stream_state s JOIN stream_queries q ON q.id = s.query_id
 WHERE s.partition_id = $1 AND s.query_id = $2 AND q.tenant = $3
   AND (cardinality($4::text[]) = 0 OR s.key = ANY($4))
   AND ($5::text IS NULL OR starts_with(s.key, $5))
   AND ($6::float8 IS NULL OR s.window_end <= $6)
 ORDER BY s.key
 LIMIT $7

-- name: partitions
-- A page of the query's source partitions, most recently cycled first, each with its state
-- rows counted.
-- $1 query id, $2 limit, $3 offset
SELECT sp.partition_id, p.name, sp.cycles, sp.state_ops, sp.last_cycle_at,
       (SELECT count(*) FROM stream_state s
         WHERE s.partition_id = sp.partition_id AND s.query_id = sp.query_id)
         AS state_rows
  FROM stream_partitions sp JOIN partitions p ON p.id = sp.partition_id
 WHERE sp.query_id = $1
 ORDER BY sp.last_cycle_at DESC NULLS LAST, sp.partition_id
 LIMIT $2 OFFSET $3

-- name: partition_count
-- How many source partitions the query has.
-- $1 query id
SELECT count(*) AS n FROM stream_partitions WHERE query_id = $1
