-- Statistics rounds (crate::stats): a round takes its turn, recounts every queue into
-- queue_stats and group_stats, replaces each tenant's lagging list, and finishes; the snapshot
-- is read back for listings and depths. Each `-- name:` section is one statement, exactly as
-- sent (crates/store/build.rs); a `_citus` statement is the Citus layout's in place of the one
-- without the suffix.

-- name: begin_round
-- Takes the round (one row: taken) if the last one finished more than $2 seconds ago, and more
-- than $3 times its own length ago (or always, with $1). A round already running holds the
-- row: without $1 this skips at once; with it, it waits for that round and then runs its own,
-- which sees every write committed before the call.
-- $1 force, $2 interval seconds, $3 pause per round (crate::stats::PAUSE_PER_ROUND)
UPDATE stats_rounds SET started_at = now()
 WHERE id = (SELECT id FROM stats_rounds
              WHERE $1 OR finished_at IS NULL
                 OR finished_at < now() - greatest(
                        make_interval(secs => $2),
                        $3 * (finished_at - started_at))
              FOR UPDATE SKIP LOCKED)
    OR ($1 AND id = 1)
RETURNING id

-- name: work_mem
-- A round's statements run with room to sort in memory (and, as on every pooled connection,
-- without JIT: session.sql's planning).
-- (no parameters)
SET LOCAL work_mem = '64MB'

-- name: finish_round
-- Marks the round finished and drops the rows of queues deleted since the last one.
-- (no parameters)
WITH q AS (DELETE FROM queue_stats s
            WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = s.queue_id)),
     g AS (DELETE FROM group_stats s
            WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = s.queue_id)),
     l AS (DELETE FROM lagging_stats s
            WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = s.queue_id))
UPDATE stats_rounds SET finished_at = now() WHERE id = 1

-- name: queues
-- Every queue of the fleet, by tenant: what a round recounts.
-- (no parameters)
SELECT tenant, id FROM queues ORDER BY tenant, id

-- name: recount
-- Recounts some queues of one tenant into queue_stats and group_stats in one statement (the log is
-- probed once per cursor), and returns their cursors whose first unread message is oldest, for the
-- tenant's lagging list. The CTEs: `parts` the queues' partitions; `cur` their cursors, each with
-- its first unread message's time (one index probe of the log per cursor behind its partition's
-- end); `per` each partition's counts (the same expressions as overview::partitions_page, which
-- crate::sql's tests hold them to); `known` every group of each queue with a cursor or a
-- subscription; `groups` those, and where a named one starts, and the queue-mode group ($5) of a
-- queue that has none at all (a queue nobody has read is behind in queue mode; one with a named
-- group and no queue-mode cursor is a publish/subscribe queue, not behind in a mode nobody uses);
-- `firsts` each partition's oldest message's time; `depth` each group's backlog on every partition,
-- a partition it has no cursor on counted from where its first pop would start (`starts`: read
-- first, for every partition at once, with the time of the first message after the start), which is
-- the group's lag (issue 50: lag counts every partition, read or not); `qs` and `gone`/`gs` the
-- writes. The lagging list returned holds the cursors behind and the (group, partition) pairs with
-- no cursor and something to read. One text for both layouts: on Citus, `cur` joins the cursors
-- with the partitions table itself, so the cursors, their partitions and the log probes are one
-- statement Citus runs on every shard (a join of distributed tables on the partition), and a
-- correlated probe of the log from the coordinator's `parts` cannot be planned there, which is why
-- `starts` and `firsts` are read first.
-- $1 queue ids, $2 tenant, $3 partitions listed per queue and group at most, $4 lagging cursors
-- returned at most, $5 the queue-mode group's name
WITH
    parts AS MATERIALIZED (
        SELECT p.id, p.queue_id, p.name, p.next_offset, p.first_offset, p.last_push_at
          FROM partition_heads p WHERE p.queue_id = ANY($1)),
    cur AS MATERIALIZED (
        SELECT c.queue_id, c.partition_id, c.consumer_group, c.committed, c.retry_count,
               c.lease_id, c.lease_expires_at, c.lease_end,
               p.name AS partition_name, p.last_push_at,
               CASE WHEN c.lease_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN c.lease_end - c.committed END AS leased,
               greatest(p.next_offset - 1 - c.committed, 0) AS behind,
               o.created_at AS oldest_unread_at
          FROM cursor_state c
          JOIN partition_heads p ON p.id = c.partition_id
          LEFT JOIN LATERAL (
               SELECT g.created_at FROM segments g
                WHERE g.partition_id = p.id AND g.end_offset > c.committed
                ORDER BY g.end_offset LIMIT 1) o ON c.committed < p.next_offset - 1
         WHERE c.queue_id = ANY($1)),
    per AS MATERIALIZED (
        SELECT p.queue_id, p.name, p.next_offset - p.first_offset AS total,
         p.next_offset - 1 - coalesce(min(c.committed), p.first_offset - 1) AS pending,
         coalesce(max(c.lease_end - c.committed)
                  FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0)
           AS processing,
         greatest(coalesce(max(c.committed), p.first_offset - 1) + 1 - p.first_offset, 0)
           AS completed,
         (CASE WHEN bool_or(c.retry_count > 0) THEN 1 ELSE 0 END)::bigint AS failed
          FROM parts p LEFT JOIN cur c ON c.partition_id = p.id
         GROUP BY p.id, p.queue_id, p.name, p.next_offset, p.first_offset),
    known AS MATERIALIZED (
        SELECT queue_id, consumer_group FROM cur
        UNION SELECT queue_id, consumer_group FROM subscriptions WHERE queue_id = ANY($1)),
    groups AS MATERIALIZED (
        SELECT g.queue_id, g.consumer_group, s.start_after
          FROM (SELECT queue_id, consumer_group FROM known
                UNION ALL
                SELECT q.id, $5::text FROM unnest($1::uuid[]) AS q(id)
                 WHERE q.id NOT IN (SELECT queue_id FROM known)) g
          LEFT JOIN subscriptions s
                 ON s.queue_id = g.queue_id AND s.consumer_group = g.consumer_group),
    firsts AS MATERIALIZED (
        SELECT p.id, o.created_at
          FROM partitions p
          JOIN LATERAL (
               SELECT g.created_at FROM segments g WHERE g.partition_id = p.id
                ORDER BY g.end_offset LIMIT 1) o ON true
         WHERE p.queue_id = ANY($1)),
    starts AS MATERIALIZED (
        SELECT p.id AS partition_id, s.consumer_group,
               greatest(coalesce(x.last, -1), p.first_offset - 1) AS start, x.first_unread_at
          FROM partitions p
          JOIN subscriptions s ON s.queue_id = p.queue_id AND s.start_after IS NOT NULL
          LEFT JOIN LATERAL (
               SELECT max(g.end_offset) FILTER (WHERE g.created_at <= s.start_after) AS last,
                      min(g.created_at) FILTER (WHERE g.created_at > s.start_after)
                        AS first_unread_at
                 FROM segments g WHERE g.partition_id = p.id) x ON true
         WHERE p.queue_id = ANY($1)),
    depth AS MATERIALIZED (
        SELECT gr.queue_id, gr.consumer_group, p.id AS partition_id, p.name, p.last_push_at,
               c.partition_id IS NOT NULL AS cursored,
               p.next_offset - 1 - coalesce(c.committed,
                   CASE WHEN gr.start_after IS NULL THEN p.first_offset - 1
                        ELSE st.start END) AS pending,
               CASE WHEN gr.start_after IS NULL THEN f.created_at
                    ELSE st.first_unread_at END AS unread_at
          FROM groups gr JOIN parts p ON p.queue_id = gr.queue_id
          LEFT JOIN cur c ON c.partition_id = p.id AND c.consumer_group = gr.consumer_group
          LEFT JOIN starts st
                 ON st.partition_id = p.id AND st.consumer_group = gr.consumer_group
          LEFT JOIN firsts f ON f.id = p.id),
    qs AS (
        INSERT INTO queue_stats AS s (
            queue_id, tenant, partitions, partitions_pending, total, pending, processing,
            completed, failed, dead_letters, cursors,
            time_lag_avg, time_lag_median, time_lag_min, time_lag_max,
            offset_lag_avg, offset_lag_median, offset_lag_min, offset_lag_max,
            top_partitions, top_pending, refreshed_at)
        SELECT q.id, $2, coalesce(a.partitions, 0), coalesce(a.partitions_pending, 0),
               coalesce(a.total, 0), coalesce(a.pending, 0), coalesce(a.processing, 0),
               coalesce(a.completed, 0), coalesce(a.failed, 0), coalesce(d.n, 0),
               coalesce(l.cursors, 0),
               coalesce(l.t_avg, 0), coalesce(l.t_median, 0), coalesce(l.t_min, 0),
               coalesce(l.t_max, 0), coalesce(l.o_avg, 0), coalesce(l.o_median, 0),
               coalesce(l.o_min, 0), coalesce(l.o_max, 0),
               coalesce(t.names, '{}'), coalesce(t.pending, '{}'), now()
          FROM unnest($1::uuid[]) AS q(id)
          LEFT JOIN (SELECT queue_id, count(*) AS partitions,
                            count(*) FILTER (WHERE pending > 0) AS partitions_pending,
                            sum(total)::bigint AS total, sum(pending)::bigint AS pending,
                            sum(processing)::bigint AS processing,
                            sum(completed)::bigint AS completed, sum(failed)::bigint AS failed
                       FROM per GROUP BY queue_id) a ON a.queue_id = q.id
          LEFT JOIN (SELECT queue_id, count(*) AS cursors, avg(t) AS t_avg,
                            percentile_cont(0.5) WITHIN GROUP (ORDER BY t) AS t_median,
                            min(t) AS t_min, max(t) AS t_max, avg(o) AS o_avg,
                            percentile_cont(0.5) WITHIN GROUP (ORDER BY o) AS o_median,
                            min(o) AS o_min, max(o) AS o_max
                       FROM (SELECT queue_id,
                                    coalesce(extract(epoch FROM now() - oldest_unread_at), 0)
                                      ::float8 AS t,
                                    behind::float8 AS o
                               FROM cur) x
                      GROUP BY queue_id) l ON l.queue_id = q.id
          LEFT JOIN (SELECT queue_id, array_agg(name ORDER BY pending DESC, name) AS names,
                            array_agg(pending ORDER BY pending DESC, name) AS pending
                       FROM (SELECT queue_id, name, pending,
                                    row_number() OVER (PARTITION BY queue_id
                                                       ORDER BY pending DESC, name) AS rank
                               FROM per WHERE pending > 0) r
                      WHERE rank <= $3 GROUP BY queue_id) t ON t.queue_id = q.id
          LEFT JOIN (SELECT queue_id, count(*) AS n FROM dead_letters
                      WHERE tenant = $2 AND queue_id = ANY($1) GROUP BY queue_id) d
                 ON d.queue_id = q.id
        ON CONFLICT (queue_id) DO UPDATE SET
            partitions = EXCLUDED.partitions, partitions_pending = EXCLUDED.partitions_pending,
            total = EXCLUDED.total, pending = EXCLUDED.pending,
            processing = EXCLUDED.processing, completed = EXCLUDED.completed,
            failed = EXCLUDED.failed, dead_letters = EXCLUDED.dead_letters,
            cursors = EXCLUDED.cursors,
            time_lag_avg = EXCLUDED.time_lag_avg, time_lag_median = EXCLUDED.time_lag_median,
            time_lag_min = EXCLUDED.time_lag_min, time_lag_max = EXCLUDED.time_lag_max,
            offset_lag_avg = EXCLUDED.offset_lag_avg,
            offset_lag_median = EXCLUDED.offset_lag_median,
            offset_lag_min = EXCLUDED.offset_lag_min, offset_lag_max = EXCLUDED.offset_lag_max,
            top_partitions = EXCLUDED.top_partitions, top_pending = EXCLUDED.top_pending,
            refreshed_at = EXCLUDED.refreshed_at),
    gone AS (
        DELETE FROM group_stats s
         WHERE s.queue_id = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.queue_id = s.queue_id
                              AND g.consumer_group = s.consumer_group)),
    gs AS (
        INSERT INTO group_stats AS s (
            queue_id, consumer_group, tenant, partitions, partitions_with_lag, lag,
            lagging_since, consuming, pending, partitions_pending, top_partitions, top_pending,
            refreshed_at)
        SELECT g.queue_id, g.consumer_group, $2, coalesce(d.partitions, 0),
               coalesce(d.partitions_pending, 0), coalesce(d.pending, 0), d.lagging_since,
               coalesce(c.consuming, false), coalesce(d.pending, 0),
               coalesce(d.partitions_pending, 0),
               coalesce(d.names[1:$3::int], '{}'), coalesce(d.counts[1:$3::int], '{}'), now()
          FROM groups g
          LEFT JOIN (SELECT queue_id, consumer_group,
                            bool_or(committed >= 0 OR leased IS NOT NULL) AS consuming
                       FROM cur GROUP BY queue_id, consumer_group) c
                 ON c.queue_id = g.queue_id AND c.consumer_group = g.consumer_group
          LEFT JOIN (SELECT queue_id, consumer_group, count(*) AS partitions,
                            coalesce(sum(pending) FILTER (WHERE pending > 0), 0)::bigint AS pending,
                            count(*) FILTER (WHERE pending > 0) AS partitions_pending,
                            min(last_push_at) FILTER (WHERE pending > 0) AS lagging_since,
                            array_agg(name ORDER BY pending DESC, name)
                              FILTER (WHERE pending > 0) AS names,
                            array_agg(pending ORDER BY pending DESC, name)
                              FILTER (WHERE pending > 0) AS counts
                       FROM depth GROUP BY queue_id, consumer_group) d
                 ON d.queue_id = g.queue_id AND d.consumer_group = g.consumer_group
        ON CONFLICT (queue_id, consumer_group) DO UPDATE SET
            tenant = EXCLUDED.tenant, partitions = EXCLUDED.partitions,
            partitions_with_lag = EXCLUDED.partitions_with_lag, lag = EXCLUDED.lag,
            lagging_since = EXCLUDED.lagging_since, consuming = EXCLUDED.consuming,
            pending = EXCLUDED.pending, partitions_pending = EXCLUDED.partitions_pending,
            top_partitions = EXCLUDED.top_partitions, top_pending = EXCLUDED.top_pending,
            refreshed_at = EXCLUDED.refreshed_at)
         SELECT queue_id, consumer_group, partition_id, partition_name, behind, oldest_unread_at
           FROM cur WHERE oldest_unread_at IS NOT NULL
          UNION ALL
         SELECT queue_id, consumer_group, partition_id, name, pending, unread_at
           FROM depth WHERE NOT cursored AND pending > 0 AND unread_at IS NOT NULL
          ORDER BY oldest_unread_at, partition_id, consumer_group LIMIT $4

-- name: clear_lagging
-- The tenant's lagging list, before write_lagging replaces it.
-- $1 tenant
DELETE FROM lagging_stats WHERE tenant = $1

-- name: write_lagging
-- The tenant's lagging list: cursors behind their partition's end, each with the time of its
-- first unread message.
-- $1 tenant, $2 queue ids, $3 partition ids, $4 partition names, $5 consumer groups,
-- $6 offset lags, $7 oldest unread times (pairwise)
INSERT INTO lagging_stats (tenant, queue_id, partition_id, partition_name,
                           consumer_group, offset_lag, oldest_unread_at)
SELECT $1, * FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[],
                         $6::bigint[], $7::timestamptz[])

-- name: queue_totals
-- A queue's counts as the last round found them (no row: no round has counted it).
-- $1 queue id
SELECT partitions, total, pending, processing, completed, failed, dead_letters,
       refreshed_at
  FROM queue_stats WHERE queue_id = $1

-- name: joined
-- Lists (queue, group) in the snapshot at once, when a pop has just given the group its first
-- cursors on the queue ($3 of them): the group's counts come with the next round, its
-- existence must not wait for one. A placeholder (`refreshed_at` -infinity, lag and pending 0)
-- that a round overwrites; a round already running does not see it (its statement's snapshot
-- is older) and so cannot delete it, and one starting later counts the cursors committed with
-- it. Never overwrites a counted row.
-- $1 queue id, $2 consumer group, $3 partitions
INSERT INTO group_stats (queue_id, consumer_group, tenant, partitions,
                         partitions_with_lag, lag, lagging_since, consuming, pending,
                         partitions_pending, top_partitions, top_pending, refreshed_at)
SELECT q.id, $2, q.tenant, $3, 0, 0, NULL, true, 0, 0, '{}', '{}', '-infinity'
  FROM queues q WHERE q.id = $1
ON CONFLICT (queue_id, consumer_group) DO NOTHING

-- name: group_depth
-- The queue's depth for the group as the last round counted it (no row: no round has seen the
-- group on the queue, a placeholder of joined included).
-- $1 queue id, $2 consumer group
SELECT pending, partitions_pending, top_partitions, top_pending, refreshed_at
  FROM group_stats
 WHERE queue_id = $1 AND consumer_group = $2 AND refreshed_at > '-infinity'

-- name: queue_depth
-- The queue's depth behind each partition's furthest-behind cursor as the last round counted
-- it (no row: before the first round).
-- $1 queue id
SELECT pending, partitions_pending, top_partitions, top_pending, refreshed_at
  FROM queue_stats WHERE queue_id = $1
