-- Appending to a partition's log (crate::append). The append itself is a database function
-- (functions.sql on one PostgreSQL, citus/functions.sql on Citus).

-- name: append
-- One partition's batch, as one segment, inside the caller's transaction.
-- $1 partition id, $2 index hashes, $3 frames, $4 whether to look duplicates up first,
-- $5 the deduplication window in seconds
SELECT item, stored_offset FROM regent_append($1, $2, $3, $4, $5)

-- name: append_citus
-- On Citus the frames go as one segment and each frame's end in it: Citus sends a delegated
-- call's arguments as text, and a bytea[]'s text form is written and read a character at a
-- time (citus/functions.sql).
-- $1 partition id, $2 index hashes, $3 the frames as one segment, $4 each frame's end in it,
-- $5 whether to look duplicates up first, $6 the deduplication window in seconds
SELECT item, stored_offset FROM regent_append($1, $2, $3::bytea, $4::int4[], $5, $6)

-- name: append_known
-- Batches to partitions the broker knows, in one statement that is its own transaction (one
-- PostgreSQL only): nothing is written when a partition is gone or its queue's options are
-- not the ones the broker knows. Only the items not appended come back.
-- $1 partition ids, $2 each batch's queue options as the broker knows them, $3 each batch's
-- item count, $4 index hashes, $5 frames, $6 whether to look duplicates up first, $7 the
-- deduplication window in seconds
SELECT batch, item, stored_offset FROM regent_append_known($1, $2, $3, $4, $5, $6, $7)

-- name: segments_of
-- The segments holding offsets $2 of partition $1, each once, in offset order: where
-- duplicates' stored message ids are read. (One row per offset would send a segment once per
-- duplicate in it: a resent batch of 1,000 would carry its segment 1,000 times.)
-- $1 partition id, $2 offsets
WITH e AS (
       SELECT DISTINCT s.end_offset FROM unnest($2::bigint[]) AS o(at)
        CROSS JOIN LATERAL (SELECT end_offset FROM segments
                             WHERE partition_id = $1 AND end_offset >= o.at
                             ORDER BY end_offset LIMIT 1) s)
SELECT g.base_offset, g.end_offset, g.frames
  FROM e JOIN segments g ON g.partition_id = $1 AND g.end_offset = e.end_offset
 ORDER BY g.end_offset

-- name: logged
-- The positions of a batch's hashes that the index holds, with their offsets.
-- $1 index hashes, $2 partition id (unused on one PostgreSQL, whose index is keyed by hash
-- alone; named so both variants take the same parameters)
SELECT w.ord, x."offset"
  FROM unnest($1::uuid[]) WITH ORDINALITY AS w(hash, ord)
  JOIN tx_index x ON x.hash = w.hash AND $2::uuid IS NOT NULL -- (variant)
 ORDER BY w.ord

-- name: logged_citus
-- variant of: logged
-- logged on Citus: the partition named in the index, where Citus routes by it.
-- $1 index hashes, $2 partition id
SELECT w.ord, x."offset"
  FROM unnest($1::uuid[]) WITH ORDINALITY AS w(hash, ord)
  JOIN tx_index x ON x.hash = w.hash AND x.partition_id = $2 -- (variant)
 ORDER BY w.ord
