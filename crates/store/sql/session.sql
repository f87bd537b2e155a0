-- A connection's own statements (the crate's root, crates/store/src/lib.rs): the planning
-- settings every pooled connection starts with, the migration lock, the ping. Each `-- name:`
-- section is exactly as sent (crates/store/build.rs); planning and planning_citus are batches
-- of statements sent at once; one marked `-- variant of: <name>` differs from that one only in
-- lines that end with `-- (variant)`; a `_citus` statement is the Citus layout's in place of
-- the one without the suffix.

-- name: planning
-- Sent once on each new pooled connection, on one PostgreSQL.
-- Every statement is planned once per connection, not at each execution. Left to choose,
-- PostgreSQL re-plans a statement whose array parameter it cannot size (`unnest($n)`) at every
-- call: the ack's lock statement spent four times its execution in planning. The hot
-- statements look rows up by key, where the generic plan is the one a custom plan would pick.
-- The few whose best plan could depend on a value (the time ranges of the inspection and
-- retention statements) get the generic plan too: write statements for it.
-- A plan kept for the life of a connection was made with the table sizes of its first run, so
-- sequential scans are priced out (`enable_seqscan = off`; one is still taken where no index
-- serves). Otherwise a statement first planned while `partitions` held a few rows joined it by
-- a sequential scan per cursor, and at 10,000 partitions a claim walking 3,000 cursors read
-- nine million rows (`invariants::a_plan_made_on_a_small_table_...`). An index scan of a table
-- that stays small costs little; a sequential scan frozen into a plan grows with the table.
-- JIT is off: a plan that still scans (a one-row table, no index to serve it) is priced at the
-- seq-scan penalty, far past `jit_above_cost`, and was compiled with LLVM on every run. The
-- stats round's claim of one row spent 330 ms in the compiler each time
-- (`invariants::a_pooled_statement_priced_past_the_jit_threshold_is_not_compiled`). Regent's
-- statements read few rows each; none gains from compiling.
-- (no parameters)
SET plan_cache_mode = force_generic_plan; -- (variant)
SET enable_seqscan = off;
SET jit = off

-- name: planning_citus
-- variant of: planning
-- planning on Citus, where a statement is planned at each execution: the coordinator routes a
-- statement to the worker holding its partition by the parameter's value, which a generic
-- plan does not have ("could not create distributed plan"), and a distributed function call
-- is delegated only when its partition argument is a constant. A statement over every shard
-- uses one connection per worker: by default Citus opens more for it, and closes all but one
-- at the end of the transaction, so every such statement forked new backends on the workers
-- (pops spent more time in the kernel making processes than in PostgreSQL; end to end 1.4x
-- with one, BENCHMARKS.md "Regent on Citus").
-- (no parameters)
SET plan_cache_mode = force_custom_plan; -- (variant)
SET enable_seqscan = off;
SET citus.max_adaptive_executor_pool_size = 1; -- (variant)
SET jit = off

-- name: migration_lock
-- Waits for, then holds, the session-level advisory lock that serialises migrations when
-- several brokers start at once (released by migration_unlock, or when the session ends).
-- $1 the lock's key (crate::MIGRATION_LOCK)
SELECT pg_advisory_lock($1)

-- name: migration_unlock
-- Releases it.
-- $1 the lock's key
SELECT pg_advisory_unlock($1)

-- name: ping
-- Whether the database answers (sent as a simple query).
-- (no parameters)
SELECT 1
