-- Deduplication is a window (issue 35): DEDUP_WINDOW_SECONDS, 5 minutes by default, at most
-- 24 h. A transaction id the partition took less than the window ago (by this database's
-- clock) is a duplicate; one taken longer ago is a new message, whether or not the purge clock
-- has deleted its old entry yet (ARCHITECTURE.md, "Invariants").
--
-- regent_append takes the window. An optimistic call is unchanged: any entry of the hash,
-- stale or not, fails the insert with unique_violation and the broker re-runs carefully. A
-- careful call first deletes the batch's entries older than the window, so the exact edge
-- costs nothing on the common path. Same body as V3 otherwise.
DROP FUNCTION IF EXISTS regent_append(uuid, uuid[], bytea[], boolean);

-- regent_append is defined in crates/store/sql/functions.sql, applied at every start.
