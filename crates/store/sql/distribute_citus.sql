-- Laying Regent's tables out over a Citus cluster (crate::citus), once, under the migration
-- lock: what is already done is looked up first (method, reshaped), so a start interrupted
-- half-way finishes at the next. Citus only, as the family's name says (the store-level tests
-- prepare these on the Citus layout alone; preparing one plans the call without making it).
-- Each `-- name:` section is one statement, exactly as sent (crates/store/build.rs). The
-- schema changes distribution needs are a script, crates/store/citus/reshape.sql, and the
-- functions' Citus bodies crates/store/citus/functions.sql.

-- name: holds_partitions
-- Whether the database holds any partition: a database laid out for one PostgreSQL that does
-- cannot be distributed (its transaction index rows carry no partition).
-- (no parameters)
SELECT EXISTS (SELECT 1 FROM partitions) AS held

-- name: reshaped
-- Whether citus/reshape.sql already ran (it is one transaction: all of it or none): the
-- transaction index has its partition column.
-- (no parameters)
SELECT EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_name = 'tx_index' AND column_name = 'partition_id') AS r

-- name: method
-- How Citus holds a table: `h` distributed by hash, `n` a reference or local table; no row
-- when not at all yet.
-- $1 table name
SELECT partmethod::text AS m FROM pg_dist_partition
 WHERE logicalrelid = $1::text::regclass

-- name: reference
-- Makes a table a reference table, copied to every node.
-- $1 table name
SELECT create_reference_table($1::text::regclass)

-- name: by_partition
-- Distributes a table by its partition column, co-located with another table (`partitions`),
-- or with none (`partitions` itself).
-- $1 table name, $2 distribution column, $3 table to co-locate with, or 'none'
SELECT create_distributed_table($1::text::regclass, $2, colocate_with => $3)

-- name: by_column
-- Distributes a table by a column of its own, co-located with no other table.
-- $1 table name, $2 distribution column
SELECT create_distributed_table($1::text::regclass, $2, colocate_with => 'none')

-- name: by_tenant
-- Distributes an ephemeral queues' table by tenant, co-located with another (the first one,
-- with none).
-- $1 table name, $2 table to co-locate with, or 'none'
SELECT create_distributed_table($1::text::regclass, 'tenant', colocate_with => $2)

-- name: local
-- Adds a coordinator's local table to Citus's metadata, so that it may join the reference
-- tables.
-- $1 table name
SELECT citus_add_local_table_to_metadata($1::text::regclass)
