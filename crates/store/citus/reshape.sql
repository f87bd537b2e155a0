-- The schema changes distribution needs (crates/store/src/citus.rs runs this script once,
-- before the first table is distributed, unless distribute_citus::reshaped finds it done): one
-- transaction, so all of it or none. Citus keeps a unique constraint only when it includes the
-- distribution column.
-- - `partitions` loses `UNIQUE (queue_id, name)`: a partition's id is derived from its queue
--   and name instead (crate::partitions), so the primary key is the same guarantee.
-- - The transaction index gets its partition as a column (16 bytes a message that one
--   PostgreSQL does without: there the partition is only inside the hash).
-- - Dead letters and traces keep their ids, unique with the partition.
BEGIN;
ALTER TABLE partitions DROP CONSTRAINT partitions_queue_id_name_key;
CREATE INDEX partitions_by_name ON partitions (queue_id, name);
ALTER TABLE tx_index ADD COLUMN partition_id uuid NOT NULL;
ALTER TABLE tx_index DROP CONSTRAINT tx_index_pkey;
ALTER TABLE tx_index ADD PRIMARY KEY (partition_id, hash);
ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_pkey;
ALTER TABLE dead_letters ADD PRIMARY KEY (partition_id, id);
ALTER TABLE traces DROP CONSTRAINT traces_pkey;
ALTER TABLE traces ADD PRIMARY KEY (partition_id, id);
COMMIT;
