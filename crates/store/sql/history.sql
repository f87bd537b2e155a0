-- refinery's record of the applied migrations (crates/store/src/history.rs): a migration
-- rewritten after databases applied it has its recorded checksum moved to the rewritten file's,
-- only from the one it had as first applied.

-- name: recorded
-- Whether refinery has recorded any migration here yet (a new database has no table).
-- (no parameters)
SELECT to_regclass('refinery_schema_history') IS NOT NULL AS recorded

-- name: rebaseline
-- Moves one migration's recorded checksum from its first text's to its rewritten text's;
-- any other recorded checksum is left for refinery to refuse as divergent.
-- $1 version, $2 checksum as first applied, $3 checksum of the rewritten file
UPDATE refinery_schema_history SET checksum = $3 WHERE version = $1 AND checksum = $2
