-- A push whose partitions the broker already knows by name (issue 35): one statement, so one
-- transaction of its own, with no lookup before it and no BEGIN or COMMIT round trip around
-- it. The broker names each partition by the id it learned and the queue options it learned
-- with it; if any partition is gone (a partition made again has a new id) or its queue's
-- options changed, nothing is written and the call fails with no_data_found (P0002), as
-- regent_append does for a missing partition: the broker forgets what it knew and pushes the
-- full way. Otherwise every batch is appended by regent_append, in the order given (partition
-- id order, the global lock order), the k-th batch being the next p_counts[k] hashes and
-- frames. Only items that were not appended come back, as (batch, item) with the offset
-- holding their transaction id.
CREATE FUNCTION regent_append_known(p_partitions uuid[], p_options jsonb[], p_counts integer[],
                                    p_hashes uuid[], p_frames bytea[], p_careful boolean,
                                    p_window_seconds integer)
RETURNS TABLE (batch integer, item integer, stored_offset bigint)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_from integer := 1;
    v_to   integer;
BEGIN
    IF (SELECT count(*)
          FROM unnest(p_partitions, p_options) AS k(id, options)
          JOIN partitions p ON p.id = k.id
          JOIN queues q ON q.id = p.queue_id AND q.options = k.options)
       <> cardinality(p_partitions) THEN
        RAISE EXCEPTION 'a partition is not as the broker knew it' USING ERRCODE = 'P0002';
    END IF;
    FOR k IN 1 .. cardinality(p_partitions) LOOP
        v_to := v_from + p_counts[k] - 1;
        RETURN QUERY
          SELECT k, a.item, a.stored_offset
            FROM regent_append(p_partitions[k], p_hashes[v_from:v_to], p_frames[v_from:v_to],
                               p_careful, p_window_seconds) AS a;
        v_from := v_to + 1;
    END LOOP;
END
$$;
