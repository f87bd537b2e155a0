-- A push whose partitions the broker already knows by name (issue 35): one statement, so one
-- transaction of its own, with no lookup before it and no BEGIN or COMMIT round trip around
-- it. The broker names each partition by the id it learned and its queue's options as it
-- learned them. regent_append takes those options (NULL: unchecked, the full path, which
-- looked the partition up in its own transaction) and, in the statement that locks the
-- partition's sequencer row, finds the row only while its queue still has exactly those
-- options: a partition gone (one made again has a new id) or a queue's options changed fail
-- the call with no_data_found (P0002), the whole statement writes nothing, and the broker
-- forgets what it knew and pushes the full way. Otherwise as V19.
DROP FUNCTION IF EXISTS regent_append(uuid, uuid[], bytea[], boolean, integer);

-- regent_append is defined in crates/store/sql/functions.sql, applied at every start.

-- regent_append_known is defined in crates/store/sql/functions.sql, applied at every start.
