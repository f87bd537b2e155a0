-- Single messages on the log (crate::messages). Statements still inline in messages.rs move
-- here as they change.

-- name: tombstone
-- Deletes message $2 of partition $1: its tombstone, its index entry, its traces. `n` is 0
-- when it was already deleted (the tombstone existed), and then nothing else is touched.
-- $1 partition id, $2 offset, $3 index hash
WITH t AS (INSERT INTO tombstones (partition_id, "offset") VALUES ($1, $2)
           ON CONFLICT DO NOTHING RETURNING 1),
     x AS (DELETE FROM tx_index WHERE hash = $3 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t)),
     r AS (DELETE FROM traces WHERE partition_id = $1 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t))
SELECT count(*) AS n FROM t

-- name: tombstone_citus
-- variant of: tombstone
-- tombstone on Citus: the partition named in the index, where Citus routes by it.
-- $1 partition id, $2 offset, $3 index hash
WITH t AS (INSERT INTO tombstones (partition_id, "offset") VALUES ($1, $2)
           ON CONFLICT DO NOTHING RETURNING 1),
     x AS (DELETE FROM tx_index WHERE hash = $3 AND "offset" = $2
              AND partition_id = $1 -- (variant)
              AND EXISTS (SELECT 1 FROM t)),
     r AS (DELETE FROM traces WHERE partition_id = $1 AND "offset" = $2
              AND EXISTS (SELECT 1 FROM t))
SELECT count(*) AS n FROM t
