-- The transaction index is keyed by a 128-bit hash instead of (partition, text id).
--
-- The broker computes the hash from the partition id and the transaction id
-- (src/store/tx_hash.rs), so one key names one id in one partition and the index needs no
-- partition column: a row is (hash, offset, created_at), 60 bytes of heap and 28 of b-tree,
-- where the old row (partition, text id, offset, message id, created_at) took about 150.
-- The message id of a duplicate is read from its frame instead (a rare path).
--
-- A GIN index over one hash array per segment was tried first and measured: fewer bytes,
-- but a lookup of 100 keys cost milliseconds where the b-tree's ON CONFLICT costs a fraction
-- of one (BENCHMARKS.md, "The transaction index").
DROP FUNCTION IF EXISTS regent_append(uuid, text[], uuid[], bytea[]);
DROP TABLE tx_index;

CREATE TABLE tx_index (
    hash        uuid PRIMARY KEY,
    "offset"    bigint NOT NULL,
    created_at  timestamptz NOT NULL
);
-- The purge clock deletes by age; rows arrive in created_at order.
CREATE INDEX tx_index_created_at ON tx_index USING brin (created_at);
ALTER TABLE tx_index SET (autovacuum_vacuum_insert_scale_factor = 0.05);

-- regent_append is defined in crates/store/sql/functions.sql, applied at every start.
