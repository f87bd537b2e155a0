-- Retention deletes whole segments from the front of a partition's log. `first_offset` is
-- the first offset the log still holds (next_offset when it holds none): what counts of
-- stored and pending messages start from, and where a cursor below it continues. (No index
-- on the segments' age: a pass reads each retained partition's segments in offset order
-- through the primary key, and an index would cost every append.)
ALTER TABLE partitions ADD COLUMN first_offset bigint NOT NULL DEFAULT 0;
