-- Partitions (crate::partitions): found by name, created with their queues, located on Citus,
-- and locked in the global lock order. Each `-- name:` section is one statement, exactly as
-- sent (crates/store/build.rs); a `_citus` statement is sent on Citus only.

-- name: lookup
-- The tenant's partitions of these (queue, partition) names that exist, with their queues.
-- $1 tenant, $2 queue names, $3 partition names (pairwise)
SELECT q.id AS queue_id, q.name AS queue, q.options, p.id, p.name
  FROM unnest($2::text[], $3::text[]) AS r(qn, pn)
  JOIN queues q ON q.tenant = $1 AND q.name = r.qn
  JOIN partitions p ON p.queue_id = q.id AND p.name = r.pn

-- name: lookup_queues_citus
-- lookup on Citus, first step: the queues (a reference table, read on the coordinator); then
-- lookup_by_id_citus finds the partitions by the ids their names give (crate::partitions::id_of),
-- so only the shards holding them are asked.
-- $1 tenant, $2 queue names
SELECT q.id AS queue_id, q.name AS queue, q.options
  FROM queues q WHERE q.tenant = $1 AND q.name = ANY ($2::text[])

-- name: lookup_by_id_citus
-- lookup on Citus, second step: the partitions of these ids that exist.
-- $1 partition ids
SELECT p.queue_id, p.id, p.name FROM partitions p
 WHERE p.id = ANY ($1::uuid[])

-- name: places_citus
-- The node group holding each partition's shard on Citus (every table of a partition is
-- co-located with `partitions`), asked of the coordinator's metadata alone.
-- $1 partition ids
SELECT u.id, pl.groupid AS place
  FROM unnest($1::uuid[]) AS u(id)
  JOIN pg_dist_placement pl
    ON pl.shardid = get_shard_id_for_distribution_column('partitions', u.id)

-- name: create_queue
-- Creates the queue unless it exists (a queue that exists keeps its configuration).
-- $1 a new queue id, $2 tenant, $3 queue name, $4 namespace, $5 task
INSERT INTO queues (id, tenant, name, namespace, task) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant, name) DO NOTHING

-- name: queue_id
-- The tenant's queue's id.
-- $1 tenant, $2 queue name
SELECT id FROM queues WHERE tenant = $1 AND name = $2

-- name: ensure
-- Creates the named partition of a queue unless it exists (no row: it did). Two statements,
-- not one (this, then ensure_found): when a concurrent transaction commits the same partition,
-- the insert waits for it and returns nothing, and only a statement started after that sees
-- the committed row (a single statement keeps its older snapshot). The conflict is on
-- (queue, name) on one PostgreSQL, on the id derived from them on Citus.
-- $1 partition id (v7 on one PostgreSQL, derived from queue and name on Citus), $2 tenant,
-- $3 queue id, $4 partition name
INSERT INTO partitions (id, tenant, queue_id, name) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING RETURNING id

-- name: ensure_found
-- The id of the named partition of a queue, found after ensure created nothing; on Citus the
-- derived id is named too, so the statement is routed to its shard.
-- $1 queue id, $2 partition name, $3 partition id (NULL on one PostgreSQL)
SELECT id FROM partitions WHERE queue_id = $1 AND name = $2
   AND ($3::uuid IS NULL OR id = $3)

-- name: lock
-- Locks the tenant's partitions (their sequencer rows) in id order, the global lock order,
-- for the rest of the transaction; returns the ids that exist.
-- $1 tenant, $2 partition ids
SELECT id FROM partitions WHERE tenant = $1 AND id = ANY ($2) ORDER BY id FOR UPDATE

-- name: lock_citus
-- lock on Citus: Citus locks rows with FOR UPDATE only in a statement routed to one shard; an
-- update that changes nothing locks them on every shard at once, in no global order (a
-- deadlock between shards is broken by Citus and the transaction retried).
-- $1 tenant, $2 partition ids
UPDATE partitions SET first_offset = first_offset
 WHERE tenant = $1 AND id = ANY ($2) RETURNING id
